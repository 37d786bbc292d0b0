// One thread's metrics: a prom-client Registry of its own, holding the service's series (created
// on first use, by name, every name under METRIC_PREFIX) and, when asked, prom-client's default
// process and runtime series plus the event loop's utilisation. A worker thread sends `json()`
// to the main thread as a value; the main thread aggregates them all (src/metrics/aggregate.ts).

import { Counter, Gauge, Histogram, Registry as PromRegistry } from 'prom-client';
import { addRuntimeMetrics } from './runtime.js';

/** Every series this service exposes starts with it. */
const METRIC_PREFIX = 'transfer_';

type Labels = Readonly<Record<string, string>>;

/** One metric family as prom-client's getMetricsAsJSON gives it: plain data, safe to clone. */
export type MetricFamily = {
  readonly name: string;
  readonly help: string;
  readonly type: string;
  readonly aggregator: string;
  readonly values: readonly {
    readonly value: number;
    readonly labels: Readonly<Record<string, string | number>>;
    readonly metricName?: string;
  }[];
};

type RegistryOptions = {
  /** Labels added to every series of the service's own (not the runtime's): a coordinator's `shard`. */
  readonly constLabels?: Labels;
  /** prom-client's default metrics and the event loop's utilisation; `processWide` keeps process_* (main thread only). */
  readonly runtime?: { readonly processWide: boolean };
};

export class Registry {
  readonly prom = new PromRegistry();
  private readonly counters = new Map<string, Counter>();
  private readonly gauges = new Map<string, Gauge>();
  private readonly histograms = new Map<string, Histogram>();
  /** Last totals given to `countTo`, by series. */
  private readonly totals = new Map<string, number>();
  private readonly constLabels: Labels;
  private readonly dropped: (name: string) => boolean;

  constructor(opts: RegistryOptions = {}) {
    this.constLabels = opts.constLabels ?? {};
    this.dropped = opts.runtime === undefined ? () => false : addRuntimeMetrics(this.prom, METRIC_PREFIX, opts.runtime.processWide);
  }

  inc(name: string, help: string, labels: Labels = {}, by = 1): void {
    const all = { ...labels, ...this.constLabels };
    this.metric(this.counters, name, () => new Counter({ name, help, labelNames: Object.keys(all), registers: [this.prom] })).inc(all, by);
  }

  /**
   * A counter whose running total is kept elsewhere (UBSCore's), moved up to `total`. A total
   * below the last one restarted from zero (its owner was reopened): all of it is new.
   */
  countTo(name: string, help: string, labels: Labels, total: number): void {
    const key = `${name}${JSON.stringify(labels)}`;
    const last = this.totals.get(key) ?? 0;
    const by = total >= last ? total - last : total;
    this.totals.set(key, total);
    this.inc(name, help, labels, by);
  }

  set(name: string, help: string, labels: Labels, value: number): void {
    const all = { ...labels, ...this.constLabels };
    this.metric(this.gauges, name, () => new Gauge({ name, help, labelNames: Object.keys(all), registers: [this.prom] })).set(all, value);
  }

  observe(name: string, help: string, buckets: readonly number[], labels: Labels, value: number): void {
    const all = { ...labels, ...this.constLabels };
    const make = () => new Histogram({ name, help, buckets: [...buckets], labelNames: Object.keys(all), registers: [this.prom] });
    this.metric(this.histograms, name, make).observe(all, value);
  }

  /** The registry as values, for another thread; families the runtime does not keep are left out. */
  async json(): Promise<MetricFamily[]> {
    const families = (await this.prom.getMetricsAsJSON()) as unknown as MetricFamily[];
    return families
      .filter((f) => !this.dropped(f.name))
      .map((f) => ({ name: f.name, help: f.help, type: f.type, aggregator: f.aggregator, values: f.values }));
  }

  private metric<M>(map: Map<string, M>, name: string, make: () => M): M {
    let m = map.get(name);
    if (m === undefined) {
      assert(name.startsWith(METRIC_PREFIX), `metric ${name} lacks the prefix ${METRIC_PREFIX}`);
      m = make();
      map.set(name, m);
    }
    return m;
  }
}

function assert(ok: boolean, message: string): asserts ok {
  if (!ok) throw new Error(`assertion failed: ${message}`);
}
