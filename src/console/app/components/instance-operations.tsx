import { useEffect, useRef, useState } from 'preact/hooks';
import type { Instance, Operation } from '../../../client/index.js';
import { isOpen, operationFilterQuery, upsertOperation } from '../format.js';
import { follow, reader } from '../live.js';
import { href } from '../router.js';
import { api } from '../session.js';
import { OperationCard } from './operation.js';
import { ErrorBox } from './ui.js';

/**
 * The operations under way on an instance (whoever started them: the console, the CLI, a
 * script), and those `pinned` (started from this page) even once finished, so their outcome
 * stays in sight. An operation seen open here stays until dismissed. Live, from the stream.
 */
export function InstanceOperations({ instance, pinned }: { instance: Instance; pinned: readonly string[] }) {
  const [ops, setOps] = useState<readonly Operation[]>([]);
  const [dismissed, setDismissed] = useState<readonly string[]>([]);
  const [error, setError] = useState<unknown>();
  const pins = useRef(pinned);
  pins.current = pinned;
  const shown = useRef(ops);
  shown.current = ops;
  const id = instance.id;
  const pinKey = pinned.join(',');

  useEffect(() => {
    const r = reader(
      async () => {
        const open = (await api((c) => c.listOperations({ instance: id, states: ['PENDING', 'RUNNING'], limit: 20 }))).operations;
        // pinned ones, and those shown open here that the list above no longer has (finished since)
        const have = new Set(open.map((o) => o.id));
        const ids = new Set([...pins.current, ...shown.current.filter(isOpen).map((o) => o.id)].filter((x) => !have.has(x)));
        const others = await Promise.all([...ids].map((x) => api((c) => c.getOperation(x)).catch(() => undefined)));
        return [...open, ...others.filter((o): o is Operation => o !== undefined)];
      },
      {
        onValue: (list) => {
          setOps((cur) => list.reduce((l, op) => upsertOperation(l, op, true), cur));
          setError(undefined);
        },
        onError: setError,
      },
    );
    const unfollow = follow({
      onResync: r.refresh,
      onEvent: (e) => {
        if (!e.kind.startsWith('operation.') || e.instance_id !== id) return;
        const op = e.data as unknown as Operation;
        setOps((cur) => upsertOperation(cur, op, isOpen(op) || pins.current.includes(op.id)));
      },
    });
    return () => {
      r.stop();
      unfollow();
    };
  }, [id, pinKey]);

  const visible = ops.filter((o) => !dismissed.includes(o.id));
  if (visible.length === 0 && !error) return null;
  return (
    <section class="instance-operations" aria-labelledby="instance-ops-title">
      <h2 id="instance-ops-title" class="visually-hidden">
        Operations under way
      </h2>
      <ErrorBox error={error} title="The operations could not be read" />
      {visible.map((op) => (
        <div key={op.id} class="op-slot">
          <OperationCard op={op} onCancelled={(o) => setOps((cur) => upsertOperation(cur, o, true))} />
          {!isOpen(op) ? (
            <button type="button" class="small" onClick={() => setDismissed((d) => [...d, op.id])}>
              Dismiss <span class="visually-hidden">the {op.kind}</span>
            </button>
          ) : null}
        </div>
      ))}
      <p class="hint">
        <a href={`${href('operations')}${operationFilterQuery({ instance: instance.name, state: '', kind: '' })}`}>
          Every operation of {instance.name}
        </a>
      </p>
    </section>
  );
}
