// What an operator sees of the ownership: the process's own role, epoch and lease, and
// what PostgreSQL says, which outlives every process: ledger_owner's epoch, owner and promotion
// time, and the SPOT log's reach and size. Read by GET /metrics (primary and standby) and by the
// console's GET /admin/v1/ownership.

import type { Sql } from '../db/sql.js';
import type { LeaseState } from './lease.js';

/** What PostgreSQL holds about the owner and the SPOT log, read in one statement. */
export type LedgerStatus = {
  /** ledger_owner.epoch: incremented by every claim (a start of a primary, a promotion). */
  readonly epoch: number;
  /** The owner of record's tag ('' before the first claim). */
  readonly owner: string;
  /** When the last claim was made (null before the first). */
  readonly promotedAt: Date | null;
  /** When the owner of record's lease ends by the server's clock (null before the first claim). */
  readonly leaseUntil: Date | null;
  /** The last seq spot_log holds (0: none). */
  readonly logLastSeq: number;
  /** How far spot_log was archived into spot_processed and deleted (0: never). */
  readonly archivedThroughSeq: number;
  /** pg_total_relation_size of each table of the log: rows, indexes and TOAST. */
  readonly bytes: { readonly spot_log: number; readonly spot_snapshots: number; readonly spot_processed: number };
};

/** This process's side: its role now, whether it took over as a standby, its epoch and lease. */
export type ProcessOwnership = {
  readonly role: 'primary' | 'standby';
  /** A ROLE=standby process that now owns the ledger: it was promoted (once per process). */
  readonly promoted: boolean;
  /** The epoch this process holds; null for a standby, which holds none. */
  readonly epoch: number | null;
  /** The lease's state; null for a standby, which holds no lease. */
  readonly leaseState: LeaseState | null;
  /** Milliseconds of proven lease left (0 for a standby). */
  readonly leaseLeftMs: number;
  /** How far a standby is behind the owner's log (0 for a primary, which is the log). */
  readonly lag: { readonly records: number; readonly ms: number };
};

type Row = {
  epoch: string;
  owner: string;
  promoted_at: Date | null;
  lease_until: Date | null;
  last_seq: string;
  archived: string;
  log_bytes: string;
  snapshot_bytes: string;
  processed_bytes: string;
};

/** One statement, no scan: max(last_seq) reads the primary key's end, the sizes are the catalog's. */
export async function readLedgerStatus(sql: Sql): Promise<LedgerStatus> {
  const [row] = await sql<Row[]>`
    SELECT o.epoch::text AS epoch, o.owner, o.promoted_at, nullif(o.lease_until, '-infinity') AS lease_until,
           coalesce((SELECT max(last_seq) FROM spot_log), 0)::text AS last_seq,
           (SELECT archived_through_seq FROM spot_log_state)::text AS archived,
           pg_total_relation_size('spot_log')::text AS log_bytes,
           pg_total_relation_size('spot_snapshots')::text AS snapshot_bytes,
           pg_total_relation_size('spot_processed')::text AS processed_bytes
      FROM ledger_owner AS o`;
  if (row === undefined) throw new Error('ledger_owner holds no row (migration 0010 inserts it)');
  return {
    epoch: count(row.epoch, 'ledger_owner.epoch'),
    owner: row.owner,
    promotedAt: row.promoted_at,
    leaseUntil: row.lease_until,
    logLastSeq: count(row.last_seq, 'spot_log last_seq'),
    archivedThroughSeq: count(row.archived, 'spot_log_state.archived_through_seq'),
    bytes: {
      spot_log: count(row.log_bytes, 'spot_log size'),
      spot_snapshots: count(row.snapshot_bytes, 'spot_snapshots size'),
      spot_processed: count(row.processed_bytes, 'spot_processed size'),
    },
  };
}

function count(text: string, what: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${what} read ${text}: not a count`);
  return n;
}
