# shellcheck shell=bash
# shellcheck disable=SC2016 # bash -c scripts take their arguments as $0, $1
# Sourced by scripts/k8s-testbed: `smoke`. Runs real workloads on the testbed and reaches them from
# the host: a StatefulSet of 2 redis pods behind a headless Service (replication between them), a
# sentinel pod, a ClusterIP and a NodePort Service, a haproxy pod in front of redis, RBAC for the
# `hangar` user, a ServiceAccount token; with several nodes, a pod on each reaching the others; then
# deletes it all.

SMOKE_NS=hangar-smoke
SMOKE_NODEPORT=31579

smoke_fail() {
  log "SMOKE FAILED: $*"
  kc -n "$SMOKE_NS" get pods -o wide >&2 2>/dev/null || true
  kc -n "$SMOKE_NS" get events --sort-by=.lastTimestamp 2>/dev/null | tail -15 >&2 || true
  exit 1
}

smoke_cleanup() {
  kc delete namespace "$SMOKE_NS" --ignore-not-found --wait=true --timeout=90s >/dev/null 2>&1 || true
}

rcli() { redis-cli --no-auth-warning -h "$1" -p "$2" "${@:3}" 2>&1; }

expect() { # what, expected, actual
  if [[ "$3" == "$2" ]]; then log "ok: $1"; else smoke_fail "$1: expected '$2', got '$3'"; fi
}

cmd_smoke() {
  local t0=$SECONDS
  load_bin || die "no cached binaries: run 'up' first"
  [[ -f "$RUN/testbed.env" ]] && all_alive && nodes_ready || die "the testbed is not up: run 'up' first"
  # shellcheck disable=SC1091
  source "$RUN/testbed.env"
  command -v redis-cli >/dev/null || ensure_packages redis-tools
  smoke_cleanup
  # Whatever happens from here on, the namespace goes.
  trap 'smoke_cleanup' EXIT

  kc apply -f - >/dev/null <<EOF || smoke_fail "kubectl apply"
apiVersion: v1
kind: Namespace
metadata:
  name: $SMOKE_NS
---
apiVersion: v1
kind: Service
metadata:
  name: redis
  namespace: $SMOKE_NS
spec:
  clusterIP: None
  selector: {app: redis}
  ports: [{name: redis, port: 6379}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: redis
  namespace: $SMOKE_NS
spec:
  serviceName: redis
  replicas: 2
  podManagementPolicy: Parallel
  selector:
    matchLabels: {app: redis}
  template:
    metadata:
      labels: {app: redis}
    spec:
      terminationGracePeriodSeconds: 2
      containers:
      - name: redis
        image: $HANGAR_K8S_REDIS_IMAGE
        imagePullPolicy: Never
        command: ["redis-server", "--protected-mode", "no", "--port", "6379", "--save", ""]
        ports: [{containerPort: 6379, name: redis}]
        readinessProbe:
          exec: {command: ["redis-cli", "ping"]}
          periodSeconds: 1
        resources:
          limits: {cpu: 200m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: redis-master
  namespace: $SMOKE_NS
spec:
  type: ClusterIP
  selector: {statefulset.kubernetes.io/pod-name: redis-0}
  ports: [{port: 6380, targetPort: 6379}]
---
apiVersion: v1
kind: Service
metadata:
  name: redis-nodeport
  namespace: $SMOKE_NS
spec:
  type: NodePort
  selector: {statefulset.kubernetes.io/pod-name: redis-0}
  ports: [{port: 6379, targetPort: 6379, nodePort: $SMOKE_NODEPORT}]
EOF
  log "smoke: StatefulSet redis (2 pods), headless, ClusterIP and NodePort Services created"
  kc -n "$SMOKE_NS" rollout status statefulset/redis --timeout=120s >/dev/null || smoke_fail "StatefulSet not Ready"
  log "smoke: StatefulSet Ready after $((SECONDS - t0)) s"

  local ip0 ip1
  ip0=$(kc -n "$SMOKE_NS" get pod redis-0 -o jsonpath='{.status.podIP}')
  ip1=$(kc -n "$SMOKE_NS" get pod redis-1 -o jsonpath='{.status.podIP}')
  expect "redis-0 ($ip0) answers PING from the host" PONG "$(rcli "$ip0" 6379 PING)"
  expect "redis-1 ($ip1) answers PING from the host" PONG "$(rcli "$ip1" 6379 PING)"
  local eps
  eps=$(kc -n "$SMOKE_NS" get endpoints redis -o jsonpath='{.subsets[*].addresses[*].ip}' | tr ' ' '\n' | sort | tr '\n' ' ')
  expect "headless Service lists both pods" "$(printf '%s\n' "$ip0" "$ip1" | sort | tr '\n' ' ')" "$eps"

  # Replication between the pods.
  rcli "$ip1" 6379 REPLICAOF "$ip0" 6379 >/dev/null
  rcli "$ip0" 6379 SET hangar-smoke "from-$ip0" >/dev/null
  wait_for 20 "replication" bash -c '[[ $(redis-cli -h "$0" GET hangar-smoke) == "from-$1" ]]' "$ip1" "$ip0" \
    || smoke_fail "redis-1 did not replicate from redis-0"
  log "ok: redis-1 replicates redis-0"

  # Services from the host: ClusterIP (kube-proxy's OUTPUT rules) and NodePort on the node IP.
  local cip
  cip=$(kc -n "$SMOKE_NS" get service redis-master -o jsonpath='{.spec.clusterIP}')
  wait_for 20 "ClusterIP" bash -c '[[ $(redis-cli -h "$0" -p 6380 PING) == PONG ]]' "$cip" || true
  expect "ClusterIP $cip:6380 reaches redis-0" "from-$ip0" "$(rcli "$cip" 6380 GET hangar-smoke)"
  wait_for 20 "NodePort" bash -c '[[ $(redis-cli -h "$0" -p "$1" PING) == PONG ]]' "$NODE_IP" "$SMOKE_NODEPORT" || true
  expect "NodePort $NODE_IP:$SMOKE_NODEPORT reaches redis-0" "from-$ip0" "$(rcli "$NODE_IP" "$SMOKE_NODEPORT" GET hangar-smoke)"

  # Sentinel, watching redis-0 (no cluster DNS: addresses are passed in).
  kc apply -f - >/dev/null <<EOF || smoke_fail "kubectl apply sentinel/haproxy"
apiVersion: v1
kind: Pod
metadata:
  name: sentinel
  namespace: $SMOKE_NS
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: sentinel
    image: $HANGAR_K8S_REDIS_IMAGE
    imagePullPolicy: Never
    command: ["sh", "-c", "printf 'port 26379\nsentinel monitor mymaster $ip0 6379 1\nsentinel down-after-milliseconds mymaster 1000\n' >/tmp/sentinel.conf && exec redis-sentinel /tmp/sentinel.conf"]
    readinessProbe:
      exec: {command: ["redis-cli", "-p", "26379", "ping"]}
      periodSeconds: 1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: haproxy
  namespace: $SMOKE_NS
data:
  haproxy.cfg: |
    global
      maxconn 100
    defaults
      mode tcp
      timeout connect 2s
      timeout client 30s
      timeout server 30s
    frontend redis
      bind :6390
      default_backend redis
    backend redis
      server redis0 $ip0:6379 check
---
apiVersion: v1
kind: Pod
metadata:
  name: haproxy
  namespace: $SMOKE_NS
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: haproxy
    image: $HANGAR_K8S_HAPROXY_IMAGE
    imagePullPolicy: Never
    volumeMounts: [{name: cfg, mountPath: /usr/local/etc/haproxy}]
  volumes:
  - name: cfg
    configMap: {name: haproxy}
EOF
  kc -n "$SMOKE_NS" wait --for=condition=Ready pod/sentinel pod/haproxy --timeout=60s >/dev/null || smoke_fail "sentinel/haproxy not Ready"
  local sip hip
  sip=$(kc -n "$SMOKE_NS" get pod sentinel -o jsonpath='{.status.podIP}')
  hip=$(kc -n "$SMOKE_NS" get pod haproxy -o jsonpath='{.status.podIP}')
  expect "sentinel ($sip:26379) knows the master" "$ip0" "$(rcli "$sip" 26379 SENTINEL get-master-addr-by-name mymaster | head -1)"
  wait_for 20 "sentinel sees the replica" bash -c 'redis-cli -h "$0" -p 26379 SENTINEL replicas mymaster | grep -qx "$1"' "$sip" "$ip1" \
    || smoke_fail "sentinel does not see redis-1 as a replica"
  log "ok: sentinel sees redis-1 as a replica"
  wait_for 20 "haproxy" bash -c '[[ $(redis-cli -h "$0" -p 6390 PING) == PONG ]]' "$hip" || true
  expect "haproxy pod ($hip:6390) forwards to redis-0" "from-$ip0" "$(rcli "$hip" 6390 GET hangar-smoke)"

  # kubectl exec/logs go apiserver -> kubelet; the pod's ServiceAccount token authenticates.
  local satoken code
  satoken=$(kc -n "$SMOKE_NS" exec redis-0 -- cat /var/run/secrets/kubernetes.io/serviceaccount/token) || smoke_fail "kubectl exec"
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$HANGAR_K8S_CA_FILE" -H "Authorization: Bearer $satoken" \
    "$HANGAR_K8S_API_SERVER/api/v1/namespaces/$SMOKE_NS/pods")
  expect "ServiceAccount token of a pod authenticates (403: no role)" 403 "$code"
  kc -n "$SMOKE_NS" logs redis-0 | grep -q 'Ready to accept connections' || smoke_fail "kubectl logs"
  log "ok: kubectl exec and logs"
  # Pods reach the API server through the kubernetes Service (kube-proxy DNAT to the node IP).
  code=$(kc -n "$SMOKE_NS" exec redis-0 -- sh -c 'printf "GET /version HTTP/1.0\r\n\r\n" | nc -w 3 "$KUBERNETES_SERVICE_HOST" "$KUBERNETES_SERVICE_PORT" >/dev/null && echo reached' 2>/dev/null || true)
  expect "a pod reaches the API server's Service address" reached "$code"

  # RBAC: hangar has no permission until a Role is bound to it.
  local hk=("$BIN/kubectl" --kubeconfig "$HANGAR_K8S_HANGAR_KUBECONFIG")
  "${hk[@]}" -n "$SMOKE_NS" get pods >/dev/null 2>&1 && smoke_fail "hangar can list pods without a Role"
  log "ok: hangar is forbidden without a Role"
  kc -n "$SMOKE_NS" create role pod-reader --verb=get,list --resource=pods >/dev/null
  kc -n "$SMOKE_NS" create rolebinding hangar-pod-reader --role=pod-reader --user=hangar >/dev/null
  wait_for 10 "RBAC" "${hk[@]}" -n "$SMOKE_NS" get pods || smoke_fail "hangar cannot list pods with a Role bound"
  log "ok: hangar lists pods once a Role is bound"

  # Several nodes: one pod on each (required anti-affinity), reached from the host and from each
  # other across nodes, a Service from each, a NodePort on each node's address, logs through each kubelet.
  local nodes
  nodes=$(nodes_recorded)
  if ((nodes > 1)); then
    kc apply -f - >/dev/null <<EOF || smoke_fail "kubectl apply (spread)"
apiVersion: apps/v1
kind: Deployment
metadata: {name: spread, namespace: $SMOKE_NS}
spec:
  replicas: $nodes
  selector: {matchLabels: {app: spread}}
  template:
    metadata: {labels: {app: spread}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: spread}}}
      containers:
      - name: redis
        image: $HANGAR_K8S_REDIS_IMAGE
        imagePullPolicy: Never
        command: [redis-server, --protected-mode, "no"]
        readinessProbe: {tcpSocket: {port: 6379}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: spread, namespace: $SMOKE_NS}
spec:
  type: NodePort
  externalTrafficPolicy: Local
  selector: {app: spread}
  ports: [{port: 6379, nodePort: $((SMOKE_NODEPORT + 1))}]
EOF
    kc -n "$SMOKE_NS" rollout status deployment/spread --timeout=90s >/dev/null || smoke_fail "spread pods not Ready"
    local placed ips svc p ip k
    placed=$(kc -n "$SMOKE_NS" get pods -l app=spread -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort -u | wc -l)
    expect "one spread pod on each of the $nodes nodes" "$nodes" "$placed"
    ips=$(kc -n "$SMOKE_NS" get pods -l app=spread -o jsonpath='{.items[*].status.podIP}')
    svc=$(kc -n "$SMOKE_NS" get service spread -o jsonpath='{.spec.clusterIP}')
    for ip in $ips; do expect "host reaches pod $ip" PONG "$(rcli "$ip" 6379 PING)"; done
    for p in $(kc -n "$SMOKE_NS" get pods -l app=spread -o name); do
      # shellcheck disable=SC2086 # the addresses are words
      expect "$p reaches every spread pod and the Service" "$(printf 'PONG %.0s' $ips $svc)" \
        "$(kc -n "$SMOKE_NS" exec "${p#pod/}" -- sh -c 'for a in "$@"; do printf "%s " "$(timeout 3 redis-cli -h "$a" ping 2>&1)"; done' sh $ips "$svc")"
      kc -n "$SMOKE_NS" logs "${p#pod/}" | grep -q 'Ready to accept connections' || smoke_fail "kubectl logs $p"
    done
    expect "NodePort on node $NODE_NAME ($NODE_IP)" PONG "$(rcli "$NODE_IP" $((SMOKE_NODEPORT + 1)) PING)"
    for ((k = 2; k <= nodes; k++)); do
      node_vars "$k"
      expect "NodePort on node $N_NAME ($N_IP)" PONG "$(rcli "$N_IP" $((SMOKE_NODEPORT + 1)) PING)"
    done
  fi

  log "smoke passed in $((SECONDS - t0)) s; deleting namespace $SMOKE_NS"
  trap - EXIT
  smoke_cleanup
  log "smoke done in $((SECONDS - t0)) s"
}
