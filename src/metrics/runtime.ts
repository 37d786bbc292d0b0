// A thread's process and runtime series: prom-client's defaults (CPU, memory, heap, GC, event-loop
// lag, handles) under the service's prefix, plus the event loop's utilisation, which the
// defaults lack. Process-wide series (CPU, resident memory, file descriptors) read the same in
// every thread of the process, so only the main thread keeps them.

import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import { collectDefaultMetrics, Gauge, Histogram, type Registry } from 'prom-client';
import { ELU_WINDOW_MS_MIN } from '../limits.js';

/** The kinds prom-client's GC histogram labels its observations with. */
const GC_KINDS = ['major', 'minor', 'incremental', 'weakcb'] as const;

/**
 * Adds the runtime series to `registry` and answers which of the families its JSON should leave
 * out: prom-client's `*_total` gauges of active handles, requests and resources (gauges must not
 * end in `_total`; the same counts are in the families without it), and, in a worker thread,
 * the process-wide ones.
 */
export function addRuntimeMetrics(registry: Registry, prefix: string, processWide: boolean): (name: string) => boolean {
  collectDefaultMetrics({ register: registry, prefix });
  zeroGcSeries(registry, `${prefix}nodejs_gc_duration_seconds`);
  addUtilisationGauge(registry, `${prefix}nodejs_eventloop_utilization_ratio`);
  const processPrefix = `${prefix}process_`;
  return (name) =>
    (name.startsWith(`${prefix}nodejs_active_`) && name.endsWith('_total')) || (!processWide && name.startsWith(processPrefix));
}

/**
 * The GC histogram has a `kind` label, so it has no series until a thread's first collection of
 * that kind: a young thread's scrape would lack the family the dashboard reads. Every kind starts at zero.
 */
function zeroGcSeries(registry: Registry, name: string): void {
  const gc = registry.getSingleMetric(name);
  if (!(gc instanceof Histogram)) throw new Error(`prom-client no longer registers ${name} as a histogram`);
  for (const kind of GC_KINDS) gc.zero({ kind });
}

/** performance.eventLoopUtilization() over the time since the window before, read at collection; no timer. */
function addUtilisationGauge(registry: Registry, name: string): void {
  let since: EventLoopUtilization = performance.eventLoopUtilization();
  let sinceMs = performance.now();
  let ratio: number | null = null;
  new Gauge({
    name,
    help: "Share of wall time this thread's event loop was busy (0 to 1), over the time since the window before (at least 1 s)",
    registers: [registry],
    collect() {
      const nowMs = performance.now();
      // The first reading takes whatever window there is: a thread is not idle for want of one.
      if (ratio === null || nowMs - sinceMs >= ELU_WINDOW_MS_MIN) {
        const now = performance.eventLoopUtilization();
        ratio = performance.eventLoopUtilization(now, since).utilization;
        since = now;
        sinceMs = nowMs;
      }
      this.set(ratio);
    },
  });
}
