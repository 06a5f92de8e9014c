import { useEffect, useState } from 'preact/hooks';
import type { EngineProduct, Operation } from '../../client/index.js';
import { api, onSessionChange } from './session.js';

/**
 * The engine products of this hangar (`GET /v2/engines/`), read once per session: the console
 * decides by their features (plan unit, Redis routes, database users, ACL groups, password,
 * shell) and never by a product's name.
 */
export interface Engines {
  readonly list: readonly EngineProduct[];
  /** The product of that name. */
  named(engine: string | undefined): EngineProduct | undefined;
  /** The product of an instance (its record's `engine`), or of an operation's detail. */
  of(x: { readonly engine?: unknown; readonly service?: unknown }): EngineProduct | undefined;
  /** The unit of a service's plans (the same for each of its products). */
  planUnit(service: string): string | undefined;
  /** The unit of the plans an operation names: its product's (a resize recorded without one: the unit of the products that resize). */
  operationPlanUnit(op: Pick<Operation, 'kind' | 'detail'>): string | undefined;
}

function enginesOf(list: readonly EngineProduct[]): Engines {
  const byName = new Map(list.map((e) => [e.engine, e]));
  const of: Engines['of'] = (x) =>
    (typeof x.engine === 'string' ? byName.get(x.engine) : undefined) ??
    (typeof x.service === 'string' ? list.find((e) => e.service === x.service) : undefined);
  // the resize route is one of the Redis routes
  const resizing = new Set(list.filter((e) => e.features.redis_api).map((e) => e.plan_unit));
  return {
    list,
    named: (name) => (name === undefined ? undefined : byName.get(name)),
    of,
    planUnit: (service) => list.find((e) => e.service === service)?.plan_unit,
    operationPlanUnit: (op) => of(op.detail)?.plan_unit ?? (op.kind === 'resize' && resizing.size === 1 ? [...resizing][0] : undefined),
  };
}

let loading: Promise<Engines> | undefined;
let loaded: Engines | undefined;
const waiting = new Set<(e: Engines) => void>();

// another session may be another hangar's (or a newer one's): read again
onSessionChange(() => {
  loading = undefined;
  loaded = undefined;
});

/** The engines, read at the first call of the session. */
export function loadEngines(): Promise<Engines> {
  loading ??= api((c) => c.listEngines()).then(
    (list) => {
      loaded = enginesOf(list);
      for (const w of [...waiting]) w(loaded);
      return loaded;
    },
    (err: unknown) => {
      loading = undefined;
      throw err;
    },
  );
  return loading;
}

/** The engines, as a component's state: undefined until read (or while the read fails, with its error). */
export function useEngines(): { engines: Engines | undefined; error: unknown } {
  const [engines, setEngines] = useState<Engines | undefined>(loaded);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    if (loaded) {
      setEngines(loaded);
      return;
    }
    // every component waiting is told when one read ends
    waiting.add(setEngines);
    void loadEngines().catch(setError);
    return () => void waiting.delete(setEngines);
  }, []);
  return { engines, error };
}
