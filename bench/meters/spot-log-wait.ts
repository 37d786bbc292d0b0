// What UBSCore's log in PostgreSQL costs during one measured window: how long a batch
// waited for PostgreSQL's spot_log and for LMDB's own sync (it is answered once both hold it, so
// the slower of the two is what it waited for), from the two histograms of the service's GET
// /metrics read before and after the window, and the log's share of PostgreSQL's work: one write
// transaction per append, one INSERT INTO spot_log per WAL block (pg_stat_statements' calls).

import type { StatementCounts } from './pg-statements.js';

/** UBSCore's group commit counters at one moment, from /metrics. */
export type UbsSyncCounters = {
  readonly lmdbSyncS: number;
  readonly lmdbBatches: number;
  /** Absent (null) when the service runs with SPOT_LOG=off: it never opened the PostgreSQL log. */
  readonly pgAppendS: number | null;
  readonly pgAppends: number | null;
  readonly pgRetries: number | null;
};

/** The log's figures over a window; the ms are means per batch. */
export type SpotLogWindow = {
  /** Batches made durable in LMDB, and batches appended to spot_log (one PostgreSQL transaction each). */
  readonly lmdbBatches: number;
  readonly pgAppends: number;
  readonly lmdbSyncMsMean: number | null;
  /** From submitting a batch's blocks to their commit in spot_log, retries included. */
  readonly pgAppendMsMean: number | null;
  readonly pgAppendRetries: number;
  /** The log's appends per committed transfer: its part of pgWriteTxnsPerCommitted. */
  readonly logWriteTxnsPerCommitted: number | null;
  /** The same over every PostgreSQL write transaction of the window (0 to 1). */
  readonly logShareOfWriteTxns: number | null;
  /** INSERT INTO spot_log calls (one per WAL block) per committed transfer; null when statements were not counted. */
  readonly spotLogInsertsPerCommitted: number | null;
  /** Server execution time of those inserts per committed transfer, in ms. */
  readonly spotLogInsertExecMsPerCommitted: number | null;
};

const SPOT_LOG_INSERT = /^INSERT INTO spot_log\b/i;

/**
 * One series' value from Prometheus text, or null when the series is absent. The line may carry
 * labels (UBSCore's series carry `thread`); the first line of that name counts.
 */
export function metricValue(text: string, name: string): number | null {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const match = new RegExp(`^${escaped}(?:\\{[^}]*\\})?\\s+([0-9.eE+-]+|NaN)\\s*$`, 'm').exec(text);
  if (match === null) return null;
  const value = Number(match[1]);
  return Number.isFinite(value) ? value : null;
}

export function ubsSyncCounters(metricsText: string): UbsSyncCounters {
  return {
    lmdbSyncS: metricValue(metricsText, 'transfer_ubscore_wal_sync_seconds_sum') ?? 0,
    lmdbBatches: metricValue(metricsText, 'transfer_ubscore_wal_sync_seconds_count') ?? 0,
    pgAppendS: metricValue(metricsText, 'transfer_ubscore_pg_log_append_seconds_sum'),
    pgAppends: metricValue(metricsText, 'transfer_ubscore_pg_log_append_seconds_count'),
    pgRetries: metricValue(metricsText, 'transfer_ubscore_pg_log_retries_total'),
  };
}

const round = (x: number, digits: number): number => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * The window's log figures, or null when the service has no PostgreSQL log (SPOT_LOG=off).
 * `writeTxns` are the window's PostgreSQL write transactions (transaction ids assigned).
 */
export function spotLogWindow(
  before: UbsSyncCounters,
  after: UbsSyncCounters,
  window: { readonly committed: number; readonly writeTxns: number; readonly statements: StatementCounts | null },
): SpotLogWindow | null {
  if (after.pgAppends === null || after.pgAppendS === null) return null;
  const lmdbBatches = after.lmdbBatches - before.lmdbBatches;
  const pgAppends = after.pgAppends - (before.pgAppends ?? 0);
  const meanMs = (seconds: number, count: number): number | null => (count > 0 ? round((seconds / count) * 1000, 3) : null);
  const perCommitted = (x: number | null, digits: number): number | null =>
    x === null || window.committed <= 0 ? null : round(x / window.committed, digits);
  const counted = window.statements === null || window.statements.evicted ? null : window.statements.byStatement;
  const inserts = counted?.filter((s) => SPOT_LOG_INSERT.test(s.query)) ?? null;
  return {
    lmdbBatches,
    pgAppends,
    lmdbSyncMsMean: meanMs(after.lmdbSyncS - before.lmdbSyncS, lmdbBatches),
    pgAppendMsMean: meanMs(after.pgAppendS - (before.pgAppendS ?? 0), pgAppends),
    pgAppendRetries: (after.pgRetries ?? 0) - (before.pgRetries ?? 0),
    logWriteTxnsPerCommitted: perCommitted(pgAppends, 3),
    logShareOfWriteTxns: window.writeTxns > 0 ? round(pgAppends / window.writeTxns, 3) : null,
    spotLogInsertsPerCommitted: perCommitted(inserts === null ? null : inserts.reduce((a, s) => a + s.calls, 0), 3),
    spotLogInsertExecMsPerCommitted: perCommitted(inserts === null ? null : inserts.reduce((a, s) => a + s.execMs, 0), 4),
  };
}
