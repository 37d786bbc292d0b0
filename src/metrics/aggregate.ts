// The main thread's side of GET /metrics: every thread's families, each series labelled with the
// thread it came from, merged by prom-client's AggregatorRegistry into one exposition. Series
// that differ by `thread` never meet, so each is kept exactly as its thread reported it.

import { AggregatorRegistry } from 'prom-client';
import type { MetricFamily } from './registry.js';

type ThreadFamilies = { readonly thread: string; readonly families: readonly MetricFamily[] };
/** A worker thread at a scrape: `fresh` false when it did not answer and its last families are given. */
export type ThreadScrape = ThreadFamilies & { readonly fresh: boolean };
/** A coordinator shard at a scrape, with its mailbox depth as the main thread sees it. */
export type ShardScrape = ThreadScrape & { readonly shard: number; readonly depth: number };

/** The thread label's values: main, coordinator-N, ubscore. */
export function coordinatorThread(shard: number): string {
  return `coordinator-${shard}`;
}
export const MAIN_THREAD = 'main';
export const UBSCORE_THREAD = 'ubscore';

function labelThread(source: ThreadFamilies): MetricFamily[] {
  return source.families.map((f) => ({
    ...f,
    // Each series is alone in its group once labelled, so summing is taking it as it is; prom-client's
    // own choices (`omit` for the start time, `average` for lag) would drop or blur a thread's value.
    aggregator: 'sum',
    values: f.values.map((v) => ({ ...v, labels: { ...v.labels, thread: source.thread } })),
  }));
}

export async function aggregate(sources: readonly ThreadFamilies[]): Promise<string> {
  const registry = AggregatorRegistry.aggregate(sources.map(labelThread) as unknown as Parameters<typeof AggregatorRegistry.aggregate>[0]);
  return registry.metrics();
}
