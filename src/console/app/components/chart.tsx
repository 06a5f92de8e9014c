import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatUtc, tickLabels } from '../format.js';

export interface Series {
  readonly label: string;
  /** A CSS custom property of styles.css giving the colour, e.g. --chart-1. */
  readonly colorVar: string;
  /** 'y' (left axis) or 'y2' (right axis). */
  readonly scale: 'y' | 'y2';
  readonly dash?: number[];
}

interface ChartProps {
  readonly title: string;
  /** Epoch seconds, then one array per series. */
  readonly data: readonly (readonly (number | null)[])[];
  readonly series: readonly Series[];
  readonly leftLabel: string;
  readonly rightLabel: string;
}

const css = (name: string): string => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';

/**
 * A time chart (uPlot, on a canvas), as wide as its container, showing at least the last minute;
 * times are UTC on a 24-hour clock, as everywhere in the console; colours follow light and dark.
 * The figure carries what its canvas shows for scripts and tests: `data-points`, and the time
 * axis's range (`data-x-min`, `data-x-max`, epoch seconds) and labels (`data-x-labels`).
 */
export function TimeChart({ title, data, series, leftLabel, rightLabel }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const labels = useRef<string[]>([]);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const build = () => {
      plot.current?.destroy();
      const axis = { stroke: css('--text-muted'), grid: { stroke: css('--border') }, ticks: { stroke: css('--border') } };
      plot.current = new uPlot(
        {
          width: Math.max(260, el.clientWidth),
          height: 240,
          // every time the chart formats (axis, legend) is UTC
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
          series: [
            { value: (_u, v) => (v === null || v === undefined ? '—' : `${formatUtc(v * 1000).slice(11)} UTC`) },
            ...series.map((s) => ({
              label: s.label,
              stroke: css(s.colorVar),
              width: 2,
              scale: s.scale,
              ...(s.dash ? { dash: s.dash } : {}),
              spanGaps: false,
            })),
          ],
          scales: {
            // the samples' span, at least the last minute up to the newest, read from the data: with
            // one sample uPlot hands a time scale a day of milliseconds as seconds (some 1,000 days)
            x: {
              time: true,
              range: (u) => {
                const xs = u.data[0] ?? [];
                const hi = xs.length > 0 ? xs[xs.length - 1]! : Date.now() / 1000;
                const lo = xs.length > 0 ? xs[0]! : hi;
                return [Math.min(lo, hi - 60), hi];
              },
            },
            y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
            y2: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.2] },
          },
          axes: [
            {
              ...axis,
              values: (_u, splits) => {
                labels.current = tickLabels(splits);
                return labels.current;
              },
            },
            { ...axis, scale: 'y', label: leftLabel, size: 60 },
            { ...axis, scale: 'y2', side: 1, label: rightLabel, size: 50, grid: { show: false } },
          ],
          legend: { live: true },
          cursor: { drag: { x: false, y: false } },
          hooks: {
            draw: [
              (u) => {
                el.dataset.xMin = String(u.scales.x?.min ?? '');
                el.dataset.xMax = String(u.scales.x?.max ?? '');
                el.dataset.xLabels = labels.current.join(' ');
              },
            ],
          },
        },
        data as uPlot.AlignedData,
        el,
      );
    };
    build();
    const resize = new ResizeObserver(() => plot.current?.setSize({ width: Math.max(260, el.clientWidth), height: 240 }));
    resize.observe(el);
    const scheme = window.matchMedia('(prefers-color-scheme: dark)');
    scheme.addEventListener('change', build);
    return () => {
      resize.disconnect();
      scheme.removeEventListener('change', build);
      plot.current?.destroy();
      plot.current = undefined;
    };
    // the series and labels are fixed for the life of a chart
  }, []);

  useEffect(() => {
    plot.current?.setData(data as uPlot.AlignedData);
  }, [data]);

  return <figure class="chart" aria-label={title} ref={box} data-points={data[0]?.length ?? 0} />;
}
