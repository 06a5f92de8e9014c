import { accessOnKubernetes } from './access-on-kubernetes.js';
import { VALKEY, redisOnKubernetes } from './redis-on-kubernetes.js';

// The Kubernetes tests, in one file so that they run one after the other, never beside each
// other: they share the testbed's one cluster, and one of them stops its API server for 30 s
// (a kubectl of a suite running beside it then timed out on its TLS handshake). Each suite has a
// namespace, volumes and client hosts of its own.
redisOnKubernetes();
accessOnKubernetes();
// Valkey's pods from its own image: the core of the Redis suite (create, ACLs, failover, resize, delete)
redisOnKubernetes(VALKEY, 'core');
