// UBSCore's families for a scrape: what it answers now, or, when it does not answer in time or
// answers a failure, the last families it gave, marked not fresh, so its counters never seem to
// drop to zero. Null until it has answered once.

import { UBSCORE_THREAD, type ThreadScrape } from './aggregate.js';
import type { MetricFamily } from './registry.js';

export type UbsMetricsAnswer = { readonly kind: 'metrics'; readonly families: readonly MetricFamily[] } | { readonly kind: 'failed'; readonly message: string } | null;

export function ubscoreScrape(read: () => Promise<UbsMetricsAnswer>): () => Promise<ThreadScrape | null> {
  let last: readonly MetricFamily[] | null = null;
  return async () => {
    const answer = await read().catch(() => null);
    const fresh = answer?.kind === 'metrics';
    if (answer?.kind === 'metrics') last = answer.families;
    return last === null ? null : { thread: UBSCORE_THREAD, families: last, fresh };
  };
}
