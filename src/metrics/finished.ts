// Reads the coordinators' transfer_finished_total and transfer_finished_after_system_failure_total
// back out of their registries' values: the alert monitor's failure rate (spec 002) is made of the
// same counts GET /metrics shows.

import type { MetricFamily } from './registry.js';

/** The counters each shard keeps of its finished transfers (src/coordinator/transfer-metrics.ts counts them). */
export const FINISHED = 'transfer_finished_total';
export const FINISHED_AFTER_SYSTEM_FAILURE = 'transfer_finished_after_system_failure_total';

/** Transfers moved into each final state, summed over the shards whose families are given. */
export function finishedFrom(families: readonly MetricFamily[]): Map<string, number> {
  return byState(families, FINISHED);
}

/** Of those, the transfers a failure of the service met on the way, by final state. */
export function systemFailedFrom(families: readonly MetricFamily[]): Map<string, number> {
  return byState(families, FINISHED_AFTER_SYSTEM_FAILURE);
}

function byState(families: readonly MetricFamily[], name: string): Map<string, number> {
  const totals = new Map<string, number>();
  for (const f of families) {
    if (f.name !== name) continue;
    for (const v of f.values) {
      const state = String(v.labels.state);
      totals.set(state, (totals.get(state) ?? 0) + v.value);
    }
  }
  return totals;
}
