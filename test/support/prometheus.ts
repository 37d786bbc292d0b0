// Reads the Prometheus text format back for tests that check what GET /metrics says. A series
// is asked for as `name{label="value",...}` with any subset of its labels: the values of every
// series that match are summed (across shards and threads), undefined when none matches.

export type Sample = {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  readonly raw: string;
};

export type Scrape = {
  readonly samples: readonly Sample[];
  /** The sum of the matching series, or undefined when none matches. */
  get(selector: string): number | undefined;
  /** Every metric family name that has at least one sample (histogram parts by their own names). */
  names(): Set<string>;
};

const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseSamples(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const at = line.lastIndexOf(' ');
    const series = line.slice(0, at);
    const raw = line.slice(at + 1);
    const brace = series.indexOf('{');
    const name = brace < 0 ? series : series.slice(0, brace);
    out.push({ name, labels: brace < 0 ? {} : labelsOf(series.slice(brace)), value: Number(raw), raw });
  }
  return out;
}

function labelsOf(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  for (const m of text.matchAll(LABEL))
    labels[m[1] as string] = (m[2] as string).replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
  return labels;
}

export function parseMetrics(text: string): Scrape {
  const samples = parseSamples(text);
  return {
    samples,
    get(selector: string): number | undefined {
      const brace = selector.indexOf('{');
      const name = brace < 0 ? selector : selector.slice(0, brace);
      const want = Object.entries(brace < 0 ? {} : labelsOf(selector.slice(brace)));
      let sum: number | undefined;
      for (const s of samples) {
        if (s.name === name && want.every(([k, v]) => s.labels[k] === v)) sum = (sum ?? 0) + s.value;
      }
      return sum;
    },
    names: () => new Set(samples.map((s) => s.name)),
  };
}
