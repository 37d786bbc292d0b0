// UBSCore's families for a scrape, through the last-known cache: when it does not answer in time
// or answers a failure, its last families are shown again, marked not fresh.

import { UBSCORE_THREAD, type ThreadScrape } from './aggregate.js';
import { LastKnownFamilies } from './last-known.js';
import type { MetricFamily } from './registry.js';

type UbsMetricsAnswer =
  | { readonly kind: 'metrics'; readonly families: readonly MetricFamily[] }
  | { readonly kind: 'failed'; readonly message: string }
  | null;

export function ubscoreScrape(read: () => Promise<UbsMetricsAnswer>): () => Promise<ThreadScrape | null> {
  const last = new LastKnownFamilies();
  return async () => {
    const answer = await read().catch(() => null);
    return last.take(UBSCORE_THREAD, answer?.kind === 'metrics' ? answer.families : null);
  };
}
