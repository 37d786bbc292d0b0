// The ownership series of a scrape, the same on a primary's GET /metrics and on a
// standby's: the process's role, epoch, lease and lag, and what PostgreSQL holds (ledger_owner,
// the SPOT log's reach and size). Every label value is always written, 0 or 1, so a rule on one
// value has a series before it first holds.

import type { Sql } from '../db/sql.js';
import type { LeaseState } from '../ownership/lease.js';
import { readLedgerStatus, type LedgerStatus, type ProcessOwnership } from '../ownership/status.js';
import { aggregate, MAIN_THREAD } from '../metrics/aggregate.js';
import { Registry } from '../metrics/registry.js';

const ROLES = ['primary', 'standby'] as const;
const LEASE_STATES: readonly LeaseState[] = ['proven', 'standing-by', 'lapsed'];

export function setOwnershipMetrics(scrape: Registry, proc: ProcessOwnership, pg: LedgerStatus): void {
  for (const role of ROLES)
    scrape.set(
      'transfer_owner_role',
      'Whether this process is the primary (owns the SPOT ledger) or a standby, 1 or 0',
      { role },
      proc.role === role ? 1 : 0,
    );
  scrape.set('transfer_owner_epoch', 'The owner epoch this process holds (0 for a standby, which holds none)', {}, proc.epoch ?? 0);
  for (const state of LEASE_STATES)
    scrape.set(
      'transfer_owner_lease_state',
      "The owner lease's state in this process, 1 or 0 (all 0 for a standby, which holds no lease)",
      { state },
      proc.leaseState === state ? 1 : 0,
    );
  scrape.set(
    'transfer_owner_lease_left_seconds',
    'Seconds of proven owner lease left in this process (0 once the proof ended)',
    {},
    proc.leaseLeftMs / 1000,
  );
  // Counted by the process that took over, so it restarts from 0 with the process: ledger_owner's
  // epoch and promoted_at below outlive it.
  scrape.inc(
    'transfer_owner_promotions_total',
    'Times this process, started as a standby, took over the SPOT ledger (0 or 1)',
    {},
    proc.promoted ? 1 : 0,
  );
  scrape.set(
    'transfer_standby_lag_records',
    "Records of the owner's SPOT log this standby has not applied yet (0 on the primary)",
    {},
    proc.lag.records,
  );
  scrape.set(
    'transfer_standby_lag_seconds',
    'How long the oldest record this standby has not applied has waited (0 on the primary, or caught up)',
    {},
    proc.lag.ms / 1000,
  );
  scrape.set(
    'transfer_ledger_owner_epoch',
    "ledger_owner.epoch in PostgreSQL: every claim (a primary's start, a promotion) adds 1",
    {},
    pg.epoch,
  );
  scrape.set(
    'transfer_ledger_owner_promoted_timestamp_seconds',
    'When the owner of record claimed the ledger, from ledger_owner.promoted_at (unix seconds; 0 before the first claim)',
    {},
    pg.promotedAt === null ? 0 : pg.promotedAt.getTime() / 1000,
  );
  scrape.set('transfer_spot_log_last_seq', "The last SPOT WAL record PostgreSQL's spot_log holds (0: none)", {}, pg.logLastSeq);
  scrape.set(
    'transfer_spot_log_archived_seq',
    'How far spot_log was archived into spot_processed and its rows deleted (0: never)',
    {},
    pg.archivedThroughSeq,
  );
  for (const [table, bytes] of Object.entries(pg.bytes))
    scrape.set(
      'transfer_spot_log_bytes',
      'Bytes of each table of the SPOT log in PostgreSQL (pg_total_relation_size: rows, indexes, TOAST)',
      { table },
      bytes,
    );
}

/**
 * A standby's GET /metrics: the ownership series and its main thread's own (the processed set's
 * retention: src/metrics/retention.ts), as a standby runs no coordinator and takes no request,
 * labelled `thread="main"` as the primary's are, so one rule reads both.
 */
export async function renderStandbyMetrics(sql: Sql, proc: ProcessOwnership, main: Registry = new Registry()): Promise<string> {
  const scrape = new Registry();
  setOwnershipMetrics(scrape, proc, await readLedgerStatus(sql));
  return aggregate([{ thread: MAIN_THREAD, families: [...(await main.json()), ...(await scrape.json())] }]);
}
