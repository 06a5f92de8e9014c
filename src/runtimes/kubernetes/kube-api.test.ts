import { describe, expect, it } from 'vitest';
import { clientModel } from './kube-api.js';

describe('clientModel', () => {
  it("names a NetworkPolicy rule's sources as the client library's model does (`_from`), so that they are not dropped", () => {
    const np = {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'x' },
      spec: {
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '192.0.2.1/32' } }], ports: [{ port: 1 }] }, { ports: [{ port: 2 }] }],
      },
    };
    expect(clientModel(np).spec.ingress).toEqual([
      { _from: [{ ipBlock: { cidr: '192.0.2.1/32' } }], ports: [{ port: 1 }] },
      { ports: [{ port: 2 }] },
    ]);
    const svc = { kind: 'Service', spec: { from: 'untouched' } };
    expect(clientModel(svc)).toBe(svc);
  });
});
