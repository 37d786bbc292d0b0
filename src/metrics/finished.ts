// Reads the coordinators' transfer_finished_total back out of their registries' values: the
// alert monitor's failure rate (spec 002) is made of the same counts GET /metrics shows.

import { FINISHED } from '../coordinator/transfer-metrics.js';
import type { MetricFamily } from './registry.js';

/** Transfers moved into each final state, summed over the shards whose families are given. */
export function finishedFrom(families: readonly MetricFamily[]): Map<string, number> {
  const totals = new Map<string, number>();
  for (const f of families) {
    if (f.name !== FINISHED) continue;
    for (const v of f.values) {
      const state = String(v.labels.state);
      totals.set(state, (totals.get(state) ?? 0) + v.value);
    }
  }
  return totals;
}
