import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What a reconcile pass worked on, judged from the instance it found and what it did. */
export type ReconcileKind = 'create' | 'resize' | 'engine' | 'restore' | 'delete' | 'access' | 'users' | 'heal';
/**
 * How a pass ended: `ok` converged; `retry` asked to run again (not converged yet, or a newer
 * request arrived); `failed` turned the instance FAILED; `error` threw (retried with backoff);
 * `cancelled` stopped by a shutdown.
 */
export type ReconcileOutcome = 'ok' | 'retry' | 'failed' | 'error' | 'cancelled';

export const INSTANCE_SERVICES = ['elasticsearch', 'mongodb', 'redis'] as const;

/** Values read at scrape time. */
export interface MetricSources {
  /** Instances waiting for a reconcile pass. */
  queueDepth(): number;
  /** Whether this replica owns the runtime (runs passes, supervises engines). */
  isOwner(): boolean;
  /** Instance counts from the store. */
  instanceCounts(): Promise<readonly { service: string; state: string; count: number }[]>;
  /** Every state an instance can be in, so that empty states show as 0 rather than vanish. */
  readonly states: readonly string[];
  runtimeStats(): Promise<{
    processesUp: number;
    processesExpected: number;
    edge: readonly { instanceId: string; admitted: number; refused: number }[];
  }>;
  /** Each zone's capacity (null: unlimited) and what its instances promise, in MB. */
  zones(): Promise<readonly { zone: string; capacityMb: number | null; allocatedMb: number }[]>;
  /** Event streams (GET /v2/events/stream) open on this replica. */
  eventStreams?(): number;
  /** Statements this replica sent to its store since it started. */
  storeStatements?(): number;
  /** Called when a source fails during a scrape; its series are left out of that scrape. */
  onError?(what: string, err: unknown): void;
}

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const BACKUP_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const RECONCILE_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * hangar's Prometheus metrics, in a registry of their own (one per hangar, so several hangars
 * in one process never share series).
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly reconcileDuration: Histogram<'kind' | 'outcome'>;
  /** The runtime's counters, read once per scrape for the engine and edge series. */
  private runtimeStats: ReturnType<MetricSources['runtimeStats']> | undefined;

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.httpRequests = new Counter({
      name: 'hangar_http_requests_total',
      help: 'HTTP requests answered, by route template and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'hangar_http_request_duration_seconds',
      help: 'Time from request to response, by route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.reconcileDuration = new Histogram({
      name: 'hangar_reconcile_duration_seconds',
      help: 'Duration of reconcile passes, by what they worked on (create, resize, engine, restore, delete, access, users, heal) and how they ended',
      labelNames: ['kind', 'outcome'],
      buckets: RECONCILE_BUCKETS,
      registers,
    });
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }

  observeReconcile(kind: ReconcileKind, outcome: ReconcileOutcome, seconds: number): void {
    this.reconcileDuration.observe({ kind, outcome }, seconds);
  }

  /** Adds the series read at scrape time: queue, instances, engine processes, edge. */
  watch(sources: MetricSources): void {
    const registers = [this.registry];
    const fail = (what: string, err: unknown) => sources.onError?.(what, err);
    new Gauge({
      name: 'hangar_reconcile_queue_depth',
      help: 'Instances waiting for a reconcile pass',
      registers,
      collect() {
        this.set(sources.queueDepth());
      },
    });
    if (sources.eventStreams) {
      const streams = sources.eventStreams;
      new Gauge({
        name: 'hangar_event_streams',
        help: 'Event streams (GET /v2/events/stream) open on this replica',
        registers,
        collect() {
          this.set(streams());
        },
      });
    }
    if (sources.storeStatements) {
      const statements = sources.storeStatements;
      new Counter({
        name: 'hangar_store_statements_total',
        help: 'Statements this replica sent to its store (SQLite or PostgreSQL), BEGIN and COMMIT included',
        registers,
        collect() {
          this.reset();
          this.inc(statements());
        },
      });
    }
    new Gauge({
      name: 'hangar_runtime_owner',
      help: '1 when this replica owns the runtime of its host (runs reconcile passes, supervises engines)',
      registers,
      collect() {
        this.set(sources.isOwner() ? 1 : 0);
      },
    });
    new Gauge({
      name: 'hangar_instances',
      help: 'Instances in the store, by service and state',
      labelNames: ['service', 'state'],
      registers,
      async collect() {
        this.reset();
        try {
          const counts = new Map((await sources.instanceCounts()).map((c) => [`${c.service}|${c.state}`, c.count]));
          for (const service of INSTANCE_SERVICES) {
            for (const state of sources.states) this.set({ service, state }, counts.get(`${service}|${state}`) ?? 0);
          }
        } catch (err) {
          fail('instances', err);
        }
      },
    });

    const stats = () => (this.runtimeStats ??= sources.runtimeStats());
    const runtimeGauge = (name: string, help: string, pick: (s: Awaited<ReturnType<MetricSources['runtimeStats']>>) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          this.reset();
          if (!sources.isOwner()) return;
          try {
            this.set(pick(await stats()));
          } catch (err) {
            fail(name, err);
          }
        },
      });
    runtimeGauge(
      'hangar_engine_processes_up',
      'Engine processes running on this host (reported by the replica owning the runtime)',
      (s) => s.processesUp,
    );
    runtimeGauge('hangar_engine_processes_expected', 'Engine processes that should be running on this host', (s) => s.processesExpected);
    new Counter({
      name: 'hangar_edge_connections_total',
      help: 'Client connections the edge admitted or refused (by ACL) since it started, per instance',
      labelNames: ['instance_id', 'outcome'],
      registers,
      async collect() {
        this.reset();
        if (!sources.isOwner()) return;
        try {
          for (const e of (await stats()).edge) {
            this.inc({ instance_id: e.instanceId, outcome: 'admitted' }, e.admitted);
            this.inc({ instance_id: e.instanceId, outcome: 'refused' }, e.refused);
          }
        } catch (err) {
          fail('hangar_edge_connections_total', err);
        }
      },
    });
    this.watchZones(sources, fail);
  }

  private watchZones(sources: MetricSources, fail: (what: string, err: unknown) => void): void {
    const registers = [this.registry];
    let read: ReturnType<MetricSources['zones']> | undefined;
    const zones = () => (read ??= sources.zones().finally(() => setImmediate(() => (read = undefined))));
    const MB = 1024 * 1024;
    new Gauge({
      name: 'hangar_zone_capacity_bytes',
      help: 'Memory the instances of a zone may promise (absent: unlimited)',
      labelNames: ['zone'],
      registers,
      async collect() {
        this.reset();
        try {
          for (const z of await zones()) if (z.capacityMb !== null) this.set({ zone: z.zone }, z.capacityMb * MB);
        } catch (err) {
          fail('hangar_zone_capacity_bytes', err);
        }
      },
    });
    new Gauge({
      name: 'hangar_zone_allocated_bytes',
      help: 'Memory the instances of a zone promise (their plans), deleting ones included until gone',
      labelNames: ['zone'],
      registers,
      async collect() {
        this.reset();
        try {
          for (const z of await zones()) this.set({ zone: z.zone }, z.allocatedMb * MB);
        } catch (err) {
          fail('hangar_zone_allocated_bytes', err);
        }
      },
    });
  }

  private backupDuration: Histogram<'kind' | 'service' | 'outcome'> | undefined;

  /** Duration of a backup or restore that ended on this replica. */
  observeBackup(kind: 'backup' | 'restore', service: string, outcome: 'completed' | 'failed', seconds: number): void {
    this.backupDuration ??= new Histogram({
      name: 'hangar_backup_duration_seconds',
      help: 'Duration of backups and restores run by this replica, by kind (backup, restore), service and outcome (completed, failed)',
      labelNames: ['kind', 'service', 'outcome'],
      buckets: BACKUP_BUCKETS,
      registers: [this.registry],
    });
    this.backupDuration.observe({ kind, service, outcome }, seconds);
  }

  /** Adds the series of each instance's last successful backup, read from the store at scrape time. */
  watchBackups(
    source: () => Promise<readonly { instanceId: string; instanceName: string; service: string; finishedAt: number; sizeBytes: number }[]>,
    now: () => number,
    onError?: (what: string, err: unknown) => void,
  ): void {
    const registers = [this.registry];
    let read: ReturnType<typeof source> | undefined;
    const last = () => (read ??= source().finally(() => setImmediate(() => (read = undefined))));
    new Gauge({
      name: 'hangar_backup_last_success_age_seconds',
      help: 'Seconds since the last successful backup of each instance that has one (deleted instances included while their backups are kept)',
      labelNames: ['instance_id', 'instance_name', 'service'],
      registers,
      async collect() {
        this.reset();
        try {
          for (const b of await last())
            this.set(
              { instance_id: b.instanceId, instance_name: b.instanceName, service: b.service },
              Math.max(0, (now() - b.finishedAt) / 1000),
            );
        } catch (err) {
          onError?.('hangar_backup_last_success_age_seconds', err);
        }
      },
    });
    new Gauge({
      name: 'hangar_backup_last_size_bytes',
      help: 'Size of the snapshot of the last successful backup of each instance that has one',
      labelNames: ['instance_id', 'instance_name', 'service'],
      registers,
      async collect() {
        this.reset();
        try {
          for (const b of await last())
            this.set({ instance_id: b.instanceId, instance_name: b.instanceName, service: b.service }, b.sizeBytes);
        } catch (err) {
          onError?.('hangar_backup_last_size_bytes', err);
        }
      },
    });
  }

  /** Adds the series of each instance's current TLS certificate, read from the store at scrape time. */
  watchTlsCertificates(
    source: () => Promise<readonly { instanceId: string; instanceName: string; service: string; notAfter: number }[]>,
    now: () => number,
    onError?: (what: string, err: unknown) => void,
  ): void {
    new Gauge({
      name: 'hangar_tls_certificate_expiry_seconds',
      help: "Seconds until the end of each instance's current TLS certificate (negative once it has ended)",
      labelNames: ['instance_id', 'instance_name', 'service'],
      registers: [this.registry],
      async collect() {
        this.reset();
        try {
          for (const c of await source())
            this.set({ instance_id: c.instanceId, instance_name: c.instanceName, service: c.service }, (c.notAfter - now()) / 1000);
        } catch (err) {
          onError?.('hangar_tls_certificate_expiry_seconds', err);
        }
      },
    });
  }

  /** The text exposition of every series. */
  async render(): Promise<{ contentType: string; body: string }> {
    this.runtimeStats = undefined;
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
