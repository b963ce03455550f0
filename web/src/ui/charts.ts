/**
 * Live charts of the status stream (a few samples a second): order parameters,
 * nearest-neighbour distance, population per species, animals per brain state and
 * step time. uPlot
 * draws them on small canvases at negligible cost next to the 3D view.
 */
import { Color } from "three";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { SpeciesInfo, StatusMessage } from "../protocol/messages";

const HISTORY = 300;

/** A species colour made legible on the dark panel (dark plumage stays recognisable, just lighter). */
export function chartColor(hex: string): string {
  const c = new Color(hex);
  const hsl = { h: 0, s: 0, l: 0 };
  c.getHSL(hsl);
  if (hsl.l < 0.6) c.setHSL(hsl.h, Math.max(hsl.s, 0.25), 0.62);
  return `#${c.getHexString()}`;
}

/** Short tick labels: 0.5, 12, 1.5k, 20k. */
function scaled(v: number): [number, string] {
  const a = Math.abs(v);
  return a >= 1e6 ? [1e6, "M"] : a >= 1e3 ? [1e3, "k"] : [1, ""];
}

function compact(v: number, digits: number): string {
  const [unit, suffix] = scaled(v);
  return `${+(v / unit).toFixed(digits)}${suffix}`;
}

/**
 * Axis labels for tick values, with just enough decimals that each reads as its own value
 * and no two read the same (1.25k and 1.3k, not "1.3k" twice; 0.001, not "0").
 */
export function tickLabels(splits: (number | null)[]): string[] {
  const shown = splits.filter((v): v is number => v != null && Number.isFinite(v));
  const gaps = shown.slice(1).map((v, i) => Math.abs(v - shown[i])).filter((g) => g > 0);
  const tolerance = 1e-6 * (gaps.length ? Math.min(...gaps) : Math.max(1e-12, ...shown.map(Math.abs)));
  for (let digits = 0; digits <= 8; digits++) {
    const faithful = shown.every((v) => {
      const [unit] = scaled(v);
      return Math.abs(+(v / unit).toFixed(digits) * unit - v) <= tolerance;
    });
    const labels = shown.map((v) => compact(v, digits));
    if (faithful && new Set(labels).size === labels.length) {
      return splits.map((v) => (v == null || !Number.isFinite(v) ? "" : compact(v, digits)));
    }
  }
  return splits.map((v) => (v == null ? "" : String(v)));
}

interface ChartSpec {
  title: string;
  /** One value per series for a status sample; null leaves a gap. */
  sample: (s: StatusMessage) => (number | null)[];
  series: { label: string; stroke: string; dash?: number[] }[];
  range?: [number, number];
  /** Logarithmic y axis, for quantities whose outliers (a compile, a load) would flatten the rest. */
  log?: boolean;
}

export class Charts {
  private plots: { plot: uPlot; spec: ChartSpec; data: (number | null)[][] }[] = [];
  private stateChart = false;
  private lastTime = -Infinity;

  constructor(private readonly root: HTMLElement) {}

  /** Rebuild the charts for a scenario's species (called on every scene message). */
  setSpecies(species: SpeciesInfo[]): void {
    for (const p of this.plots) p.plot.destroy();
    this.plots = [];
    this.root.innerHTML = "";
    this.lastTime = -Infinity;
    this.stateChart = false;
    const metric = (name: string) => (s: StatusMessage) => species.map((sp) => {
      const v = s.metrics?.[sp.name]?.[name];
      return typeof v === "number" && Number.isFinite(v) ? v : null;
    });
    const perSpecies = (dash?: number[]) => species.map((sp) => ({ label: sp.name, stroke: chartColor(sp.color), dash }));
    const specs: ChartSpec[] = [
      { title: "Polarization", sample: metric("polarization"), series: perSpecies(), range: [0, 1] },
      { title: "Milling", sample: metric("milling"), series: perSpecies(), range: [0, 1] },
      { title: "Nearest-neighbour distance (m)", sample: metric("nn_distance"), series: perSpecies() },
      { title: "Population", sample: (s) => species.map((sp) => s.counts?.[sp.name] ?? null), series: perSpecies() },
      {
        title: "Step time (ms)",
        sample: (s) => [s.step_ms > 0 ? s.step_ms : null, s.encode_ms > 0 ? s.encode_ms : null],
        series: [{ label: "step", stroke: "#ffd166" }, { label: "encode", stroke: "#4cc9f0" }],
        log: true,
      },
    ];
    for (const spec of specs) this.addPlot(spec);
    this.resize();
  }

  private addPlot(spec: ChartSpec): void {
    const cell = document.createElement("div");
    cell.className = "chart";
    this.root.appendChild(cell);
    const data: (number | null)[][] = [[], ...spec.series.map(() => [])];
    const opts: uPlot.Options = {
      title: spec.title,
      width: 300,
      height: 150,
      legend: { show: true, live: false },
      cursor: { show: false },
      scales: {
        x: { time: false },
        y: spec.log ? { distr: 3, log: 10 } : spec.range ? { range: spec.range } : { auto: true },
      },
      axes: [
        { stroke: "#8b98a5", grid: { stroke: "#ffffff10" }, ticks: { stroke: "#ffffff20" }, size: 28, values: (_u, splits) => tickLabels(splits) },
        { stroke: "#8b98a5", grid: { stroke: "#ffffff10" }, ticks: { stroke: "#ffffff20" }, size: 44, values: (_u, splits) => tickLabels(splits) },
      ],
      series: [{ label: "t (s)" }, ...spec.series.map((s) => ({ label: s.label, stroke: s.stroke, width: 1.5, dash: s.dash, spanGaps: false }))],
    };
    const plot = new uPlot(opts, data as uPlot.AlignedData, cell);
    this.plots.push({ plot, spec, data });
  }

  /**
   * The "Animals per state" chart, made when the first status names brain states
   * (state names are only known once a brain runs): one series per species and state.
   */
  private addStateChart(states: Record<string, Record<string, number>>): void {
    const keys: [string, string][] = [];
    for (const [species, perState] of Object.entries(states)) for (const state of Object.keys(perState)) keys.push([species, state]);
    if (!keys.length) return;
    const palette = ["#ffd166", "#ef476f", "#06d6a0", "#4cc9f0", "#c77dff", "#f4a261", "#90be6d", "#e9c46a"];
    this.addPlot({
      title: "Animals per state",
      sample: (s) => keys.map(([sp, st]) => s.states?.[sp]?.[st] ?? null),
      series: keys.map(([sp, st], i) => ({ label: `${sp}: ${st}`, stroke: palette[i % palette.length] })),
    });
    this.stateChart = true;
    this.resize();
  }

  /** Add a status sample, plotted at the simulated time its metrics were computed at. */
  push(status: StatusMessage): void {
    if (status.loading || !this.plots.length || status.metrics_step < 0) return;
    if (!this.stateChart && status.states && Object.keys(status.states).length) this.addStateChart(status.states);
    const t = status.metrics_time;
    if (t < this.lastTime) this.clearData();
    if (t === this.lastTime) return;
    this.lastTime = t;
    for (const p of this.plots) {
      const values = p.spec.sample(status);
      p.data[0].push(t);
      values.forEach((v, i) => p.data[i + 1]?.push(v));
      if (p.data[0].length > HISTORY) for (const column of p.data) column.shift();
    }
    if (!this.root.offsetParent) return; // hidden: keep the data, skip drawing
    for (const p of this.plots) p.plot.setData(p.data as uPlot.AlignedData);
  }

  private clearData(): void {
    for (const p of this.plots) for (const column of p.data) column.length = 0;
  }

  resize(): void {
    const width = this.root.clientWidth;
    if (!width || !this.plots.length) return;
    // every chart in one row when it fits at 180 px or more, else rows of as many as fit
    const perRow = Math.max(1, Math.min(this.plots.length, Math.floor(width / 190)));
    const per = Math.max(170, Math.floor((width - 10 * (perRow - 1)) / perRow) - 4);
    for (const p of this.plots) p.plot.setSize({ width: per, height: 150 });
  }
}
