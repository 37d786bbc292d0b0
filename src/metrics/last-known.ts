// A worker thread's families at a scrape: what it answers now, or, when it does not answer (busy,
// failing, too slow), the last families it gave, marked not fresh. Its counters then stay at
// their last values instead of vanishing or dropping to zero, which Prometheus would read as a
// reset. A thread that never answered has nothing to show.

import type { ThreadScrape } from './aggregate.js';
import type { MetricFamily } from './registry.js';

export class LastKnownFamilies {
  private readonly last = new Map<string, readonly MetricFamily[]>();

  /** `answer` is the thread's families now, or null when it did not answer. */
  take(thread: string, answer: readonly MetricFamily[] | null): ThreadScrape | null {
    if (answer !== null) this.last.set(thread, answer);
    const families = this.last.get(thread);
    return families === undefined ? null : { thread, families, fresh: answer !== null };
  }
}
