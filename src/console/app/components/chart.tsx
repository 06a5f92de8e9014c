import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

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
 * colours follow light and dark.
 */
export function TimeChart({ title, data, series, leftLabel, rightLabel }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);

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
          series: [
            {},
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
            x: { time: true, range: (_u, min, max) => [Math.min(min, max - 60), max] },
            y: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.1] },
            y2: { range: (_u, _min, max) => [0, Math.max(1, max) * 1.2] },
          },
          axes: [
            { ...axis },
            { ...axis, scale: 'y', label: leftLabel, size: 60 },
            { ...axis, scale: 'y2', side: 1, label: rightLabel, size: 50, grid: { show: false } },
          ],
          legend: { live: true },
          cursor: { drag: { x: false, y: false } },
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
