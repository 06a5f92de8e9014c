import { useEffect, useRef, useState } from 'preact/hooks';
import type { Instance, Operation } from '../../../client/index.js';
import { isOpen, operationFilterQuery, upsertOperation } from '../format.js';
import { follow, reader } from '../live.js';
import { href } from '../router.js';
import { api } from '../session.js';
import { OperationCard, operationTitle } from './operation.js';
import { ErrorBox } from './ui.js';
import { useEngines } from '../engines.js';

/** How long a finished operation stays in sight (its outcome), fading, before it joins the instance's operations. */
export const FADE_AFTER_MS = 4000;

/**
 * The operations under way on an instance (whoever started them: the console, the CLI, a
 * script), live from the stream, and those `pinned` (started from this page). A finished one
 * shows its outcome for a moment and fades into the instance's operations (the link below);
 * a FAILED one stays, with its error, until dismissed.
 */
export function InstanceOperations({ instance, pinned }: { instance: Instance; pinned: readonly string[] }) {
  const [ops, setOps] = useState<readonly Operation[]>([]);
  const [gone, setGone] = useState<readonly string[]>([]);
  const [error, setError] = useState<unknown>();
  const { engines } = useEngines();
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

  // finished and not FAILED: out of sight after a while (the fading is CSS, over the last second)
  const finishedKey = ops
    .filter((o) => !isOpen(o) && o.state !== 'FAILED' && !gone.includes(o.id))
    .map((o) => o.id)
    .join(',');
  useEffect(() => {
    if (!finishedKey) return;
    const ids = finishedKey.split(',');
    const t = setTimeout(() => setGone((g) => [...g, ...ids]), FADE_AFTER_MS);
    return () => clearTimeout(t);
  }, [finishedKey]);

  const visible = ops.filter((o) => !gone.includes(o.id));
  const all = `${href('operations')}${operationFilterQuery({ instance: instance.name, state: '', kind: '' })}`;
  if (visible.length === 0 && !error) return null;
  return (
    <section class="instance-operations" aria-labelledby="instance-ops-title">
      <h2 id="instance-ops-title" class="visually-hidden">
        Operations under way
      </h2>
      <ErrorBox error={error} title="The operations could not be read" />
      {visible.map((op) =>
        isOpen(op) || op.state === 'FAILED' ? (
          <div key={op.id} class="op-slot">
            <OperationCard
              op={op}
              planUnit={engines?.operationPlanUnit(op) ?? engines?.of(instance)?.plan_unit}
              onCancelled={(o) => setOps((cur) => upsertOperation(cur, o, true))}
            />
            {!isOpen(op) ? (
              <button type="button" class="small" onClick={() => setGone((g) => [...g, op.id])}>
                Dismiss <span class="visually-hidden">the failed {op.kind}</span>
              </button>
            ) : null}
          </div>
        ) : (
          // its outcome in one line, fading into the list of the instance's operations
          <p key={op.id} class={`op-done fading ${op.state.toLowerCase()}`} data-operation={op.id} data-state={op.state} role="status">
            <a class="op-what" href={href('operations', op.id)}>
              {operationTitle(op, engines?.operationPlanUnit(op) ?? engines?.of(instance)?.plan_unit)}
            </a>
            : {op.state}
          </p>
        ),
      )}
      <p class="hint">
        <a href={all}>Every operation of {instance.name}</a>
      </p>
    </section>
  );
}
