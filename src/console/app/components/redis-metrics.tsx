import { useEffect, useState } from 'preact/hooks';
import type { Instance, SpaceUsage } from '../../../client/index.js';
import { formatBytes, formatPlan, parseHumanBytes, planUnitBytes } from '../format.js';
import { api } from '../session.js';
import { TimeChart } from './chart.js';
import { ErrorBox } from './ui.js';

/** How often the page samples, and how much it keeps (10 minutes). */
const SAMPLE_MS = 2000;
const KEEP = 300;

interface Sample {
  readonly t: number;
  readonly usedMb: number | null;
  readonly maxMb: number;
  readonly clients: number | null;
}

interface Figures {
  readonly connectedSlaves: number;
  readonly connectedClients: number;
  readonly spaceUsage: SpaceUsage;
  readonly maxMemoryPolicy: string;
  readonly maxClients: string;
}

/** Redis's used_memory_human ("1.09M") in the console's one style for sizes ("1.1 MB"). */
function usedText(human: string): string {
  const bytes = parseHumanBytes(human);
  return bytes === undefined ? human : formatBytes(bytes);
}

/**
 * The live figures of a Redis instance (the four of the spec, and connected clients), read from
 * the engine through the API every 2 s, and a chart of memory used against maxmemory and of
 * connected clients over the last minutes. The samples live in the page only: hangar stores none.
 */
export function RedisMetrics({ instance, planUnit }: { instance: Instance; planUnit: string | undefined }) {
  const [figures, setFigures] = useState<Figures | undefined>();
  const [error, setError] = useState<unknown>();
  const [samples, setSamples] = useState<Sample[]>([]);
  const name = instance.name;
  // maxmemory is the plan
  const maxMb = (instance.plan * planUnitBytes(planUnit)) / 1024 ** 2;

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const sample = async () => {
      try {
        const [connectedSlaves, connectedClients, spaceUsage, maxMemoryPolicy, maxClients] = await api((c) =>
          Promise.all([c.connectedSlaves(name), c.connectedClients(name), c.spaceUsage(name), c.maxMemoryPolicy(name), c.maxClients(name)]),
        );
        if (stopped) return;
        setFigures({ connectedSlaves, connectedClients, spaceUsage, maxMemoryPolicy, maxClients });
        setError(undefined);
        const used = parseHumanBytes(spaceUsage.usedMemoryHuman);
        setSamples((s) =>
          [...s, { t: Date.now() / 1000, usedMb: used === undefined ? null : used / 1024 ** 2, maxMb, clients: connectedClients }].slice(
            -KEEP,
          ),
        );
      } catch (err) {
        if (stopped) return;
        setError(err);
        setSamples((s) => [...s, { t: Date.now() / 1000, usedMb: null, maxMb, clients: null }].slice(-KEEP));
      }
      if (!stopped) timer = setTimeout(() => void sample(), SAMPLE_MS);
    };
    void sample();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [name, maxMb]);

  const data = [samples.map((s) => s.t), samples.map((s) => s.usedMb), samples.map((s) => s.maxMb), samples.map((s) => s.clients)];
  return (
    <section class="metrics" aria-labelledby="metrics-title">
      <h2 id="metrics-title">Live metrics</h2>
      <ErrorBox error={error} title="The engine could not be read" />
      <dl class="tiles">
        <div class="tile">
          <dt>Memory used</dt>
          <dd data-metric="spaceUsage">
            {figures
              ? `${usedText(figures.spaceUsage.usedMemoryHuman)} of ${formatPlan(planUnit, instance.plan)} (${figures.spaceUsage.freeSpacePercentage}% free)`
              : '…'}
          </dd>
        </div>
        <div class="tile">
          <dt>Connected clients</dt>
          <dd data-metric="connectedClients">{figures ? figures.connectedClients : '…'}</dd>
        </div>
        <div class="tile">
          <dt>Connected replicas</dt>
          <dd data-metric="connectedSlaves">{figures ? figures.connectedSlaves : '…'}</dd>
        </div>
        <div class="tile">
          <dt>Max memory policy</dt>
          <dd data-metric="maxMemoryPolicy">{figures ? figures.maxMemoryPolicy : '…'}</dd>
        </div>
        <div class="tile">
          <dt>Max clients</dt>
          <dd data-metric="maxClients">{figures ? figures.maxClients : '…'}</dd>
        </div>
      </dl>
      <TimeChart
        title="Memory used against maxmemory (MB), and connected clients, sampled every 2 s by this page"
        data={data}
        leftLabel="MB"
        rightLabel="clients"
        series={[
          { label: 'memory used (MB)', colorVar: '--chart-1', scale: 'y' },
          { label: 'maxmemory (MB)', colorVar: '--chart-2', scale: 'y', dash: [6, 4] },
          { label: 'connected clients', colorVar: '--chart-3', scale: 'y2' },
        ]}
      />
      <p class="hint">Sampled by this page every 2 s while it is open (the last 10 minutes); hangar keeps no history.</p>
    </section>
  );
}
