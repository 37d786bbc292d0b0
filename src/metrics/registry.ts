// A small Prometheus registry whose state is plain data: each thread keeps its own, the main
// thread collects snapshots (a structured clone) and renders the sum in the text format.

export type Labels = Readonly<Record<string, string>>;

type Series<V> = Map<string, { labels: Labels; value: V }>;
type Hist = { counts: number[]; sum: number; count: number };

export type MetricSnapshot =
  | { readonly name: string; readonly help: string; readonly type: 'counter' | 'gauge'; readonly series: readonly { labels: Labels; value: number | bigint }[] }
  | { readonly name: string; readonly help: string; readonly type: 'histogram'; readonly buckets: readonly number[]; readonly series: readonly { labels: Labels; value: Hist }[] };

/** One key per label set, whatever the order of its names; called on every count, so no JSON. */
function keyOf(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length > 1) names.sort();
  let key = '';
  for (const name of names) key += `${name}\u0000${labels[name]}\u0001`;
  return key;
}

export class Registry {
  private readonly scalars = new Map<string, { help: string; type: 'counter' | 'gauge'; series: Series<number | bigint> }>();
  private readonly histograms = new Map<string, { help: string; buckets: number[]; series: Series<Hist> }>();

  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const series = this.scalar(name, help, 'counter');
    const key = keyOf(labels);
    const entry = series.get(key);
    if (entry === undefined) series.set(key, { labels, value: by });
    else entry.value = Number(entry.value) + by;
  }

  /** A gauge; a bigint (an amount in smallest units) is kept and printed exactly. */
  set(name: string, help: string, labels: Labels, value: number | bigint): void {
    this.scalar(name, help, 'gauge').set(keyOf(labels), { labels, value });
  }

  observe(name: string, help: string, buckets: readonly number[], labels: Labels, value: number): void {
    let h = this.histograms.get(name);
    if (h === undefined) {
      h = { help, buckets: [...buckets], series: new Map() };
      this.histograms.set(name, h);
    }
    const key = keyOf(labels);
    const entry = h.series.get(key) ?? { labels, value: { counts: h.buckets.map(() => 0), sum: 0, count: 0 } };
    h.buckets.forEach((b, i) => {
      if (value <= b) entry.value.counts[i] = (entry.value.counts[i] ?? 0) + 1;
    });
    entry.value.sum += value;
    entry.value.count += 1;
    h.series.set(key, entry);
  }

  /** Adds another thread's histogram series, bucket by bucket. */
  addHistogram(name: string, help: string, buckets: readonly number[], labels: Labels, h: Hist): void {
    let target = this.histograms.get(name);
    if (target === undefined) {
      target = { help, buckets: [...buckets], series: new Map() };
      this.histograms.set(name, target);
    }
    const entry = target.series.get(keyOf(labels)) ?? { labels, value: { counts: buckets.map(() => 0), sum: 0, count: 0 } };
    h.counts.forEach((c, i) => (entry.value.counts[i] = (entry.value.counts[i] ?? 0) + c));
    entry.value.sum += h.sum;
    entry.value.count += h.count;
    target.series.set(keyOf(labels), entry);
  }

  snapshot(): MetricSnapshot[] {
    const out: MetricSnapshot[] = [];
    for (const [name, m] of this.scalars) out.push({ name, help: m.help, type: m.type, series: [...m.series.values()].map((s) => ({ labels: s.labels, value: s.value })) });
    for (const [name, h] of this.histograms) {
      out.push({ name, help: h.help, type: 'histogram', buckets: h.buckets, series: [...h.series.values()].map((s) => ({ labels: s.labels, value: { ...s.value, counts: [...s.value.counts] } })) });
    }
    return out;
  }

  private scalar(name: string, help: string, type: 'counter' | 'gauge'): Series<number | bigint> {
    let m = this.scalars.get(name);
    if (m === undefined) {
      m = { help, type, series: new Map() };
      this.scalars.set(name, m);
    }
    return m.series;
  }
}

/** Renders snapshots from several threads, summing series with the same name and labels. */
export function render(snapshots: readonly MetricSnapshot[]): string {
  const merged = new Registry();
  for (const m of snapshots) {
    for (const s of m.series) {
      if (m.type === 'histogram') merged.addHistogram(m.name, m.help, m.buckets, s.labels, s.value as Hist);
      else if (m.type === 'counter') merged.inc(m.name, m.help, s.labels, Number(s.value));
      else merged.set(m.name, m.help, s.labels, s.value as number | bigint);
    }
  }
  const lines: string[] = [];
  for (const m of merged.snapshot()) {
    lines.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.type}`);
    for (const s of m.series) {
      if (m.type !== 'histogram') {
        lines.push(`${m.name}${labelText(s.labels)} ${String(s.value)}`);
        continue;
      }
      const h = s.value as Hist;
      m.buckets.forEach((b, i) => lines.push(`${m.name}_bucket${labelText({ ...s.labels, le: String(b) })} ${h.counts[i] ?? 0}`));
      lines.push(`${m.name}_bucket${labelText({ ...s.labels, le: '+Inf' })} ${h.count}`, `${m.name}_sum${labelText(s.labels)} ${h.sum}`, `${m.name}_count${labelText(s.labels)} ${h.count}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

function labelText(labels: Labels): string {
  const entries = Object.entries(labels);
  if (entries.length === 0) return '';
  return `{${entries.map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`).join(',')}}`;
}
