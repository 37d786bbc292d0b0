// The processed set's retention as the main thread sees it (src/ubscore/processed/retention-task.ts): the
// retention configured, the horizon of the last plan, how old the oldest live entry is, and the
// passes. Set at the task's start too, so a rule on them has a series before the first pass.

import type { Registry } from './registry.js';

export const PRUNE_PASS_OUTCOMES = ['pruned', 'refused', 'failed'] as const;
export type PrunePassOutcome = (typeof PRUNE_PASS_OUTCOMES)[number];

/** Every series at its start: the retention configured, the rest 0. */
export function setRetentionConfigured(registry: Registry, retentionS: number): void {
  registry.set(
    'transfer_processed_retention_seconds',
    'PROCESSED_RETENTION_S: how long a processed-set entry is kept at least',
    {},
    retentionS,
  );
  setRetentionHorizon(registry, 0);
  setOldestAge(registry, 0);
  for (const outcome of PRUNE_PASS_OUTCOMES) countPass(registry, outcome, 0);
  setLastPass(registry, 0, 0);
}

export function setRetentionHorizon(registry: Registry, throughSeq: number): void {
  registry.set(
    'transfer_processed_retention_horizon_seq',
    "The last retention plan's horizon: entries at or below this SPOT seq may go unless kept (0: none old enough yet)",
    {},
    throughSeq,
  );
}

export function setOldestAge(registry: Registry, ageS: number): void {
  registry.set(
    'transfer_processed_oldest_age_seconds',
    "How long ago the oldest entry left in UBSCore's processed set was applied, from the seq clock (0: none, or no pass yet)",
    {},
    ageS,
  );
}

/** One pass ended: how, and how long it took (refused or failed passes too). */
export function recordPass(registry: Registry, outcome: PrunePassOutcome, seconds: number, rowsDeleted: number): void {
  countPass(registry, outcome, 1);
  setLastPass(registry, seconds, rowsDeleted);
}

function setLastPass(registry: Registry, seconds: number, rowsDeleted: number): void {
  registry.set(
    'transfer_processed_prune_last_pass_seconds',
    'How long the last retention pass took, plan and prune and deletes',
    {},
    seconds,
  );
  registry.inc(
    'transfer_processed_rows_deleted_total',
    'spot_processed rows the retention deleted from PostgreSQL (the owner only)',
    {},
    rowsDeleted,
  );
}

function countPass(registry: Registry, outcome: PrunePassOutcome, by: number): void {
  registry.inc(
    'transfer_processed_prune_passes_total',
    "Retention passes by outcome: pruned (UBSCore's pass ended), refused (UBSCore pruned nothing), failed (retried next interval)",
    { outcome },
    by,
  );
}
