// The start-up check of every limit in src/limits.ts (TigerBeetle asserts its constants at
// comptime; here they are asserted once, when the configuration is loaded): each range whole and
// in order, each default inside its range, each cap positive, and the relations between limits.

import * as limit from './limits.js';

/**
 * One row of the start-up check. `range`: a whole-number range, and the default that must lie in
 * it where there is one. `positive`: a cap that must let at least one thing through. `at_most`: a
 * relation between two limits, such as a batch not above the queue it feeds.
 */
export type LimitRow =
  | { readonly kind: 'range'; readonly name: string; readonly min: number; readonly max: number; readonly fallback?: number }
  | { readonly kind: 'positive'; readonly name: string; readonly value: number }
  | { readonly kind: 'at_most'; readonly name: string; readonly value: number; readonly bound: number; readonly boundName: string };

/** A limit that contradicts itself or another: a programmer's error, found before anything starts. */
export class LimitError extends Error {
  override readonly name = 'LimitError';
}

/** Asserts one row; throws a LimitError naming the limit. */
export function checkLimit(row: LimitRow): void {
  switch (row.kind) {
    case 'range':
      if (!Number.isSafeInteger(row.min) || !Number.isSafeInteger(row.max) || row.min < 0)
        throw new LimitError(`${row.name}: its range ${row.min}..${row.max} must be whole numbers from 0`);
      if (row.min > row.max) throw new LimitError(`${row.name}: its minimum ${row.min} is above its maximum ${row.max}`);
      if (row.fallback !== undefined && !(Number.isSafeInteger(row.fallback) && row.min <= row.fallback && row.fallback <= row.max))
        throw new LimitError(`${row.name}: its default ${row.fallback} is outside ${row.min}..${row.max}`);
      return;
    case 'positive':
      if (!(Number.isSafeInteger(row.value) && row.value > 0))
        throw new LimitError(`${row.name} must be a positive whole number, got ${row.value}`);
      return;
    case 'at_most':
      if (!(row.value <= row.bound)) throw new LimitError(`${row.name} (${row.value}) must not exceed ${row.boundName} (${row.bound})`);
      return;
  }
}

/** Asserts every row: called once, when the configuration is loaded (src/config/config.ts). */
export function checkLimits(rows: readonly LimitRow[] = LIMIT_ROWS): void {
  for (const row of rows) checkLimit(row);
}

const range = (name: string, min: number, max: number, fallback?: number): LimitRow =>
  fallback === undefined ? { kind: 'range', name, min, max } : { kind: 'range', name, min, max, fallback };
const positive = (name: string, value: number): LimitRow => ({ kind: 'positive', name, value });
const atMost = (name: string, value: number, boundName: string, bound: number): LimitRow => ({
  kind: 'at_most',
  name,
  value,
  bound,
  boundName,
});

/** Every limit of src/limits.ts, as the start-up check reads it; the environment variables' defaults are checked as they are read. */
export const LIMIT_ROWS: readonly LimitRow[] = [
  // The environment variables' ranges.
  range('PORT', limit.PORT_MIN, limit.PORT_MAX),
  range('PORT (to connect to)', limit.CONNECT_PORT_MIN, limit.PORT_MAX),
  range('EMBEDDED_PG_PORT', limit.EMBEDDED_PG_PORT_MIN, limit.PORT_MAX),
  range('EMBEDDED_PG_SHARED_BUFFERS_MB', limit.EMBEDDED_PG_SHARED_BUFFERS_MB_MIN, limit.EMBEDDED_PG_SHARED_BUFFERS_MB_MAX),
  range('PG_RECOVERY_BACKOFF_CAP_MS', limit.PG_RECOVERY_BACKOFF_CAP_MS_MIN, limit.PG_RECOVERY_BACKOFF_CAP_MS_MAX),
  range('LEASE_MS', limit.OWNER_LEASE_MS_MIN, limit.OWNER_LEASE_MS_MAX, limit.OWNER_LEASE_MS_DEFAULT),
  range('LEASE_RENEW_MS', limit.OWNER_LEASE_RENEW_MS_MIN, limit.OWNER_LEASE_MS_MAX, limit.OWNER_LEASE_RENEW_MS_DEFAULT),
  range('COORDINATORS', limit.COORDINATORS_MIN, limit.COORDINATORS_MAX),
  range('PG_POOL_MAX', limit.PG_POOL_CONNECTIONS_MIN, limit.PG_POOL_CONNECTIONS_MAX),
  range('SHUTDOWN_DRAIN_MS', limit.SHUTDOWN_DRAIN_MS_MIN, limit.SHUTDOWN_DRAIN_MS_MAX),
  range('SHUTDOWN_TIMEOUT_MS', limit.SHUTDOWN_TIMEOUT_MS_MIN, limit.SHUTDOWN_TIMEOUT_MS_MAX),
  range('PG_STATEMENT_TIMEOUT_MS', limit.PG_STATEMENT_TIMEOUT_MS_MIN, limit.PG_TIMEOUT_MS_MAX),
  range('PG_LOCK_TIMEOUT_MS', limit.PG_LOCK_TIMEOUT_MS_MIN, limit.PG_TIMEOUT_MS_MAX),
  range('PG_IDLE_IN_TRANSACTION_TIMEOUT_MS', limit.PG_IDLE_IN_TRANSACTION_TIMEOUT_MS_MIN, limit.PG_TIMEOUT_MS_MAX),
  range('ADAPTER_TIMEOUT_MS', limit.ADAPTER_TIMEOUT_MS_MIN, limit.ADAPTER_TIMEOUT_MS_MAX),
  range('HAPPY_PATH_DEADLINE_MS', limit.HAPPY_PATH_DEADLINE_MS_MIN, limit.HAPPY_PATH_DEADLINE_MS_MAX),
  range('RETRY_BASE_MS', limit.RETRY_BASE_MS_MIN, limit.RETRY_BASE_MS_MAX),
  range('RETRY_CAP_MS', limit.RETRY_CAP_MS_MIN, limit.RETRY_CAP_MS_MAX),
  range('COORDINATOR_MAILBOX_MAX', limit.COORDINATOR_MAILBOX_TRANSFERS_MIN, limit.COORDINATOR_MAILBOX_TRANSFERS_MAX),
  range('COORDINATOR_CONCURRENCY_MAX', limit.COORDINATOR_CONCURRENCY_TRANSFERS_MIN, limit.COORDINATOR_CONCURRENCY_TRANSFERS_MAX),
  range('UBS_BATCH_MAX', limit.UBS_BATCH_COMMANDS_MIN, limit.UBS_BATCH_COMMANDS_MAX),
  range(
    'UBS_SNAPSHOT_EVERY_RECORDS',
    limit.UBS_SNAPSHOT_EVERY_RECORDS_MIN,
    limit.UBS_SNAPSHOT_RECORDS_MAX,
    limit.UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
  ),
  range('UBS_DISK_RESERVE_MB', limit.UBS_DISK_RESERVE_MB_MIN, limit.UBS_DISK_RESERVE_MB_MAX),
  range('BODY_BYTES_MAX', limit.BODY_BYTES_LIMIT_MIN, limit.BODY_BYTES_LIMIT_MAX),
  range('RATE_LIMIT_PER_SECOND', limit.RATE_LIMIT_PER_SECOND_MIN, limit.RATE_LIMIT_PER_SECOND_MAX),
  range('DAILY_TRANSFER_LIMIT', limit.DAILY_TRANSFER_LIMIT_MIN, limit.DAILY_TRANSFER_LIMIT_MAX),
  range('SCAN_INTERVAL_MS', limit.SCAN_INTERVAL_MS_MIN, limit.SCAN_INTERVAL_MS_MAX),
  range('STALE_THRESHOLD_MS', limit.STALE_THRESHOLD_MS_MIN, limit.STALE_THRESHOLD_MS_MAX),
  range('SCAN_CONCURRENCY_MAX', limit.SCAN_CONCURRENCY_TRANSFERS_MIN, limit.SCAN_CONCURRENCY_TRANSFERS_MAX),
  range('PG_BATCH_MAX', limit.PG_BATCH_ROWS_MIN, limit.PG_BATCH_ROWS_MAX),
  range('TARGET_PENDING_ALERT_MS', limit.TARGET_PENDING_ALERT_MS_MIN, limit.TARGET_PENDING_ALERT_MS_MAX),
  range('REFUND_FAILURES_ALERT', limit.REFUND_FAILURES_ALERT_MIN, limit.REFUND_FAILURES_ALERT_MAX),
  range('STUCK_RETRIES', limit.STUCK_RETRIES_MIN, limit.STUCK_RETRIES_MAX),
  range('STUCK_AGE_MS', limit.STUCK_AGE_MS_MIN, limit.STUCK_AGE_MS_MAX),
  range('INVARIANT_INTERVAL_MS', limit.INVARIANT_INTERVAL_MS_MIN, limit.INVARIANT_INTERVAL_MS_MAX),
  range('ABNORMAL_TRANSFERS_PER_MINUTE', limit.ABNORMAL_TRANSFERS_PER_MINUTE_MIN, limit.ABNORMAL_TRANSFERS_PER_MINUTE_MAX),
  range('ALERT_EVAL_INTERVAL_MS', limit.ALERT_EVAL_INTERVAL_MS_MIN, limit.ALERT_EVAL_INTERVAL_MS_MAX),
  range('ALERT_BACKLOG_MAX (and the other counts)', limit.ALERT_COUNT_THRESHOLD_MIN, limit.ALERT_COUNT_THRESHOLD_MAX),
  range('ALERT_FAILURE_RATE_PERCENT', limit.ALERT_FAILURE_RATE_PERCENT_MIN, limit.ALERT_FAILURE_RATE_PERCENT_MAX),
  range('ALERT_FAILURE_WINDOW_MS', limit.ALERT_FAILURE_WINDOW_MS_MIN, limit.ALERT_FAILURE_WINDOW_MS_MAX),
  range('ALERT_AVG_RETRIES_MAX', limit.ALERT_AVG_RETRIES_THRESHOLD_MIN, limit.ALERT_AVG_RETRIES_THRESHOLD_MAX),
  range('JWT_JWKS_COOLDOWN_MS', limit.JWKS_COOLDOWN_MS_MIN, limit.JWKS_COOLDOWN_MS_MAX),
  range('JWT_JWKS_MAX_AGE_MS', limit.JWKS_AGE_MS_MIN, limit.JWKS_AGE_MS_MAX),
  range('JWT_JWKS_TIMEOUT_MS', limit.JWKS_TIMEOUT_MS_MIN, limit.JWKS_TIMEOUT_MS_MAX),
  range('PROCESSED_RETENTION_S', limit.PROCESSED_RETENTION_S_MIN, limit.PROCESSED_RETENTION_S_MAX, limit.PROCESSED_RETENTION_S_DEFAULT),
  range(
    'PROCESSED_PRUNE_INTERVAL_S',
    limit.PROCESSED_PRUNE_INTERVAL_S_MIN,
    limit.PROCESSED_PRUNE_INTERVAL_S_MAX,
    limit.PROCESSED_PRUNE_INTERVAL_S_DEFAULT,
  ),
  // Pages: a default inside 1..max.
  range('HISTORY_LIMIT', 1, limit.HISTORY_LIMIT_MAX, limit.HISTORY_LIMIT_DEFAULT),
  range('LIST_LIMIT', 1, limit.LIST_LIMIT_MAX, limit.LIST_LIMIT_DEFAULT),
  range('SEARCH_LIMIT', 1, limit.SEARCH_LIMIT_MAX, limit.SEARCH_LIMIT_DEFAULT),
  range('AUDIT_LIMIT', 1, limit.AUDIT_LIMIT_MAX, limit.AUDIT_LIMIT_DEFAULT),
  // UBSCore's options: each default inside its range.
  range(
    'UBS_SNAPSHOT_SLICE_ACCOUNTS',
    limit.UBS_SNAPSHOT_SLICE_ACCOUNTS_MIN,
    limit.UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX,
    limit.UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT,
  ),
  range(
    'UBS_CLOSE_SNAPSHOT_RECORDS_MIN',
    limit.UBS_CLOSE_SNAPSHOT_TAIL_RECORDS_MIN,
    limit.UBS_SNAPSHOT_RECORDS_MAX,
    limit.UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT,
  ),
  range('UBS_DISK_RESERVE_BYTES', limit.UBS_DISK_RESERVE_BYTES_MIN, limit.UBS_DISK_RESERVE_BYTES_MAX, limit.UBS_DISK_RESERVE_BYTES_DEFAULT),
  range('KEY_FILTER_KEYS', limit.KEY_FILTER_KEYS_MIN, limit.KEY_FILTER_KEYS_MAX),
  // Caps, queues, caches and timeouts: each lets at least one thing through.
  positive('JWT_SECRET_BYTES_MIN', limit.JWT_SECRET_BYTES_MIN),
  positive('TOKEN_LENGTH_MAX', limit.TOKEN_LENGTH_MAX),
  positive('VERIFIED_TOKENS_MAX', limit.VERIFIED_TOKENS_MAX),
  positive('JWKS_KEYS_MAX', limit.JWKS_KEYS_MAX),
  positive('KID_LENGTH_MAX', limit.KID_LENGTH_MAX),
  positive('JWKS_BYTES_MAX', limit.JWKS_BYTES_MAX),
  positive('REQUEST_ID_CHARS_MAX', limit.REQUEST_ID_CHARS_MAX),
  positive('USERS_TRACKED_MAX', limit.USERS_TRACKED_MAX),
  positive('HALT_REASON_CHARS_MAX', limit.HALT_REASON_CHARS_MAX),
  // The business bounds src/domain defines (re-exported by src/limits.ts).
  positive('ASSET_LENGTH_MAX', limit.ASSET_LENGTH_MAX),
  positive('KEY_LENGTH_MAX', limit.KEY_LENGTH_MAX),
  positive('PRECISION_MAX', limit.PRECISION_MAX),
  positive('SCAN_BATCH_MAX', limit.SCAN_BATCH_MAX),
  positive('RETRY_TIMERS_MAX', limit.RETRY_TIMERS_MAX),
  positive('RETRY_BACKOFF_EXPONENT_MAX', limit.RETRY_BACKOFF_EXPONENT_MAX),
  positive('SWEEP_BATCH_MAX', limit.SWEEP_BATCH_MAX),
  positive('STOP_DRAIN_MS', limit.STOP_DRAIN_MS),
  positive('CONTROL_TASKS_MAX', limit.CONTROL_TASKS_MAX),
  positive('COORDINATOR_CONTROL_MS_MAX', limit.COORDINATOR_CONTROL_MS_MAX),
  positive('HALT_SETTLE_MS_MAX', limit.HALT_SETTLE_MS_MAX),
  positive('HALT_RETELL_BASE_MS', limit.HALT_RETELL_BASE_MS),
  positive('HALT_RETELL_CAP_MS', limit.HALT_RETELL_CAP_MS),
  positive('HALT_UNKNOWN_SCAN_INTERVALS', limit.HALT_UNKNOWN_SCAN_INTERVALS),
  positive('HALT_UNKNOWN_MS_MIN', limit.HALT_UNKNOWN_MS_MIN),
  positive('UBS_CONTROL_MS_MAX', limit.UBS_CONTROL_MS_MAX),
  positive('COORDINATOR_STOP_MS_MAX', limit.COORDINATOR_STOP_MS_MAX),
  positive('SUBMIT_BATCH_MAX', limit.SUBMIT_BATCH_MAX),
  positive('PENDING_RESUME_MAX', limit.PENDING_RESUME_MAX),
  positive('SIGNAL_REPEAT_WINDOW_MS', limit.SIGNAL_REPEAT_WINDOW_MS),
  positive('DRAIN_SETTLE_MS', limit.DRAIN_SETTLE_MS),
  positive('STOP_NOW_TIMEOUT_S', limit.STOP_NOW_TIMEOUT_S),
  positive('END_NOW_FALLBACK_MS', limit.END_NOW_FALLBACK_MS),
  positive('UBS_CLOSE_TIMEOUT_MS', limit.UBS_CLOSE_TIMEOUT_MS),
  positive('READYZ_PG_PROBE_TIMEOUT_MS', limit.READYZ_PG_PROBE_TIMEOUT_MS),
  positive('ALERT_ROWS_MAX', limit.ALERT_ROWS_MAX),
  positive('SAMPLES_MAX', limit.SAMPLES_MAX),
  positive('WEBHOOK_TIMEOUT_MS', limit.WEBHOOK_TIMEOUT_MS),
  positive('RAISED_REMEMBERED_MAX', limit.RAISED_REMEMBERED_MAX),
  positive('DIFFERENCES_IN_ALERT_MAX', limit.DIFFERENCES_IN_ALERT_MAX),
  positive('OP_SEQS_BATCH_MAX', limit.OP_SEQS_BATCH_MAX),
  positive('CUT_TIMEOUT_MS', limit.CUT_TIMEOUT_MS),
  positive('ELU_WINDOW_MS_MIN', limit.ELU_WINDOW_MS_MIN),
  positive('RECONNECT_BACKOFF_BASE_MS', limit.RECONNECT_BACKOFF_BASE_MS),
  positive('RECONNECT_BACKOFF_EXPONENT_MAX', limit.RECONNECT_BACKOFF_EXPONENT_MAX),
  positive('BATCH_IN_FLIGHT_MAX_DEFAULT', limit.BATCH_IN_FLIGHT_MAX_DEFAULT),
  positive('SET_BASED_ROWS_MIN', limit.SET_BASED_ROWS_MIN),
  positive('ASSET_CACHE_TTL_MS', limit.ASSET_CACHE_TTL_MS),
  positive('START_TIMEOUT_S', limit.START_TIMEOUT_S),
  positive('RESTART_BACKOFF_BASE_MS', limit.RESTART_BACKOFF_BASE_MS),
  positive('TAKE_WAIT_MS', limit.TAKE_WAIT_MS),
  positive('TAKE_RETRY_MS', limit.TAKE_RETRY_MS),
  positive('CONNECT_TIMEOUT_S', limit.CONNECT_TIMEOUT_S),
  positive('RETAKE_BACKOFF_BASE_MS', limit.RETAKE_BACKOFF_BASE_MS),
  positive('OWNER_CLAIM_MS_MAX', limit.OWNER_CLAIM_MS_MAX),
  positive('OWNER_CLAIM_HEARTBEAT_MS', limit.OWNER_CLAIM_HEARTBEAT_MS),
  positive('OWNER_SESSION_LOCK_TIMEOUT_MS', limit.OWNER_SESSION_LOCK_TIMEOUT_MS),
  positive('OWNER_SESSION_STATEMENT_TIMEOUT_MS', limit.OWNER_SESSION_STATEMENT_TIMEOUT_MS),
  positive('OWNER_SESSION_IDLE_IN_TRANSACTION_MS', limit.OWNER_SESSION_IDLE_IN_TRANSACTION_MS),
  positive('OWNER_CLAIM_TRIES_MAX', limit.OWNER_CLAIM_TRIES_MAX),
  positive('PG_TCP_KEEPALIVES_IDLE_S', limit.PG_TCP_KEEPALIVES_IDLE_S),
  positive('PG_TCP_KEEPALIVES_INTERVAL_S', limit.PG_TCP_KEEPALIVES_INTERVAL_S),
  positive('PG_TCP_KEEPALIVES_COUNT_MAX', limit.PG_TCP_KEEPALIVES_COUNT_MAX),
  positive('PG_TCP_USER_TIMEOUT_MS', limit.PG_TCP_USER_TIMEOUT_MS),
  positive('PG_CLIENT_KEEPALIVE_S', limit.PG_CLIENT_KEEPALIVE_S),
  positive('ASK_OWNER_TIMEOUT_MS', limit.ASK_OWNER_TIMEOUT_MS),
  positive('OWNER_INFO_BYTES_MAX', limit.OWNER_INFO_BYTES_MAX),
  positive('BACKUP_PAUSE_MS_MAX', limit.BACKUP_PAUSE_MS_MAX),
  positive('BACKUP_DIR_CHARS_MAX', limit.BACKUP_DIR_CHARS_MAX),
  positive('ROWS_PER_STEP_MAX', limit.ROWS_PER_STEP_MAX),
  positive('OP_SEQS_KEYS_MAX', limit.OP_SEQS_KEYS_MAX),
  positive('UBS_CLIENT_BATCH_MAX_DEFAULT', limit.UBS_CLIENT_BATCH_MAX_DEFAULT),
  positive('UBS_WORKER_YOUNG_GENERATION_MB_MAX', limit.UBS_WORKER_YOUNG_GENERATION_MB_MAX),
  positive('UBS_RECOVERY_BACKOFF_BASE_MS', limit.UBS_RECOVERY_BACKOFF_BASE_MS),
  positive('UBS_PG_SNAPSHOTS_KEPT', limit.UBS_PG_SNAPSHOTS_KEPT),
  positive('UBS_PG_SNAPSHOT_RETRY_MS', limit.UBS_PG_SNAPSHOT_RETRY_MS),
  positive('PAUSE_HELD_MESSAGES_MAX', limit.PAUSE_HELD_MESSAGES_MAX),
  positive('FILTER_EXIT_WAIT_MS', limit.FILTER_EXIT_WAIT_MS),
  positive('UNPACKER_ASSETS_MAX', limit.UNPACKER_ASSETS_MAX),
  positive('WAL_BLOCK_RECORDS_MAX', limit.WAL_BLOCK_RECORDS_MAX),
  positive('WAL_PRUNE_RECORDS_PER_TXN_MAX', limit.WAL_PRUNE_RECORDS_PER_TXN_MAX),
  positive('PRUNE_STEP_ENTRIES', limit.PRUNE_STEP_ENTRIES),
  positive('PROCESSED_INDEX_BUILD_ENTRIES', limit.PROCESSED_INDEX_BUILD_ENTRIES),
  positive('SNAPSHOT_CHUNK_BYTES_MAX', limit.SNAPSHOT_CHUNK_BYTES_MAX),
  positive('READER_ASSETS_MAX', limit.READER_ASSETS_MAX),
  positive('SPOT_LOG_PAGE_BLOCKS', limit.SPOT_LOG_PAGE_BLOCKS),
  positive('SPOT_PROCESSED_PAGE_ROWS', limit.SPOT_PROCESSED_PAGE_ROWS),
  positive('SPOT_LOG_ARCHIVE_INTERVAL_MS', limit.SPOT_LOG_ARCHIVE_INTERVAL_MS),
  positive('SPOT_PROCESSED_DELETE_ROWS', limit.SPOT_PROCESSED_DELETE_ROWS),
  positive('RETENTION_STOP_WAIT_MS', limit.RETENTION_STOP_WAIT_MS),
  // Relations: a batch not above what it feeds, a first wait not above its cap, a wait not above the timeout around it.
  atMost(
    'UBS_CLIENT_BATCH_MAX_DEFAULT',
    limit.UBS_CLIENT_BATCH_MAX_DEFAULT,
    'UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT',
    limit.UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT,
  ),
  // A lapsed owner's row must stay unchanged LEASE_MS - TAKE_RETRY_MS before it is ended
  // (src/ownership/lapsed.ts): at least half the shortest lease, more than a renewal (under a third).
  atMost('TAKE_RETRY_MS', limit.TAKE_RETRY_MS, 'half the shortest LEASE_MS', limit.OWNER_LEASE_MS_MIN / 2),
  atMost('OP_SEQS_BATCH_MAX', limit.OP_SEQS_BATCH_MAX, 'OP_SEQS_KEYS_MAX', limit.OP_SEQS_KEYS_MAX),
  atMost('SUBMIT_BATCH_MAX', limit.SUBMIT_BATCH_MAX, 'COORDINATOR_CONCURRENCY_TRANSFERS_MAX', limit.COORDINATOR_CONCURRENCY_TRANSFERS_MAX),
  atMost('SCAN_BATCH_MAX', limit.SCAN_BATCH_MAX, 'RETRY_TIMERS_MAX', limit.RETRY_TIMERS_MAX),
  // A shard answers a halt after its moves out of INIT settle, before the main thread stops waiting.
  atMost('HALT_SETTLE_MS_MAX', limit.HALT_SETTLE_MS_MAX, 'COORDINATOR_CONTROL_MS_MAX', limit.COORDINATOR_CONTROL_MS_MAX),
  atMost('HALT_RETELL_BASE_MS', limit.HALT_RETELL_BASE_MS, 'HALT_RETELL_CAP_MS', limit.HALT_RETELL_CAP_MS),
  // A relayed signal is told from a second request before the shortest stop deadline.
  atMost('SIGNAL_REPEAT_WINDOW_MS', limit.SIGNAL_REPEAT_WINDOW_MS, 'SHUTDOWN_TIMEOUT_MS_MIN', limit.SHUTDOWN_TIMEOUT_MS_MIN),
  atMost('DRAIN_SETTLE_MS', limit.DRAIN_SETTLE_MS, 'SHUTDOWN_TIMEOUT_MS_MIN', limit.SHUTDOWN_TIMEOUT_MS_MIN),
  // A shard's stop outlasts its drain, or every stop would end in a terminate.
  atMost('STOP_DRAIN_MS', limit.STOP_DRAIN_MS, 'COORDINATOR_STOP_MS_MAX', limit.COORDINATOR_STOP_MS_MAX),
  atMost('SET_BASED_ROWS_MIN', limit.SET_BASED_ROWS_MIN, 'PG_BATCH_ROWS_MAX', limit.PG_BATCH_ROWS_MAX),
  atMost(
    'UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT',
    limit.UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT,
    'UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT',
    limit.UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
  ),
  atMost(
    'UBS_DISK_RESERVE_MB_MAX in bytes',
    limit.UBS_DISK_RESERVE_MB_MAX * 1024 * 1024,
    'UBS_DISK_RESERVE_BYTES_MAX',
    limit.UBS_DISK_RESERVE_BYTES_MAX,
  ),
  atMost('RECONNECT_BACKOFF_BASE_MS', limit.RECONNECT_BACKOFF_BASE_MS, 'RECONNECT_BACKOFF_CAP_MS', limit.RECONNECT_BACKOFF_CAP_MS),
  atMost(
    'UBS_RECOVERY_BACKOFF_BASE_MS',
    limit.UBS_RECOVERY_BACKOFF_BASE_MS,
    'UBS_RECOVERY_BACKOFF_CAP_MS',
    limit.UBS_RECOVERY_BACKOFF_CAP_MS,
  ),
  // A close's wait for a snapshot copy ends before the main thread stops waiting for the close.
  // A stop waits for a retention pass no longer than for UBSCore's close, which ends the pass.
  atMost('RETENTION_STOP_WAIT_MS', limit.RETENTION_STOP_WAIT_MS, 'UBS_CLOSE_TIMEOUT_MS', limit.UBS_CLOSE_TIMEOUT_MS),
  atMost('UBS_PG_LOG_CLOSE_WAIT_MS', limit.UBS_PG_LOG_CLOSE_WAIT_MS, 'UBS_CLOSE_TIMEOUT_MS', limit.UBS_CLOSE_TIMEOUT_MS),
  atMost('RESTART_BACKOFF_BASE_MS', limit.RESTART_BACKOFF_BASE_MS, 'PG_RECOVERY_BACKOFF_CAP_MS_MIN', limit.PG_RECOVERY_BACKOFF_CAP_MS_MIN),
  atMost(
    '3 x OWNER_LEASE_RENEW_MS_DEFAULT',
    3 * limit.OWNER_LEASE_RENEW_MS_DEFAULT,
    'OWNER_LEASE_MS_DEFAULT - 1',
    limit.OWNER_LEASE_MS_DEFAULT - 1,
  ),
  atMost('RETAKE_BACKOFF_BASE_MS', limit.RETAKE_BACKOFF_BASE_MS, 'PG_RECOVERY_BACKOFF_CAP_MS_MIN', limit.PG_RECOVERY_BACKOFF_CAP_MS_MIN),
  atMost('RETAKE_BACKOFF_BASE_MS', limit.RETAKE_BACKOFF_BASE_MS, 'RESTORE_RETAKE_BACKOFF_CAP_MS', limit.RESTORE_RETAKE_BACKOFF_CAP_MS),
  atMost('RETAKE_BACKOFF_BASE_MS', limit.RETAKE_BACKOFF_BASE_MS, 'OWNER_RETAKE_BACKOFF_CAP_MS', limit.OWNER_RETAKE_BACKOFF_CAP_MS),
  // A waiting standby leaves a free lock alone long enough for the owner's next ask and its reconnect.
  atMost(
    'OWNER_RETAKE_BACKOFF_CAP_MS + RECONNECT_BACKOFF_CAP_MS',
    limit.OWNER_RETAKE_BACKOFF_CAP_MS + limit.RECONNECT_BACKOFF_CAP_MS,
    'STANDBY_SETTLE_MS - 1',
    limit.STANDBY_SETTLE_MS - 1,
  ),
  // A live holder shows itself at least three times within the bound that ends a frozen one, and
  // none of its lock session's own waits runs as long as that bound.
  atMost('3 x OWNER_CLAIM_HEARTBEAT_MS', 3 * limit.OWNER_CLAIM_HEARTBEAT_MS, 'OWNER_CLAIM_MS_MAX', limit.OWNER_CLAIM_MS_MAX),
  atMost(
    'OWNER_SESSION_LOCK_TIMEOUT_MS',
    limit.OWNER_SESSION_LOCK_TIMEOUT_MS,
    'OWNER_SESSION_STATEMENT_TIMEOUT_MS',
    limit.OWNER_SESSION_STATEMENT_TIMEOUT_MS,
  ),
  atMost(
    'OWNER_SESSION_STATEMENT_TIMEOUT_MS',
    limit.OWNER_SESSION_STATEMENT_TIMEOUT_MS,
    'OWNER_CLAIM_MS_MAX - 1',
    limit.OWNER_CLAIM_MS_MAX - 1,
  ),
  atMost(
    'OWNER_SESSION_IDLE_IN_TRANSACTION_MS',
    limit.OWNER_SESSION_IDLE_IN_TRANSACTION_MS,
    'OWNER_CLAIM_MS_MAX - 1',
    limit.OWNER_CLAIM_MS_MAX - 1,
  ),
  atMost('RETRY_BASE_MS_MIN', limit.RETRY_BASE_MS_MIN, 'RETRY_CAP_MS_MAX', limit.RETRY_CAP_MS_MAX),
  atMost('SHUTDOWN_DRAIN_MS_MAX', limit.SHUTDOWN_DRAIN_MS_MAX, 'SHUTDOWN_TIMEOUT_MS_MAX', limit.SHUTDOWN_TIMEOUT_MS_MAX),
  atMost('BACKUP_PAUSE_MS_MAX', limit.BACKUP_PAUSE_MS_MAX, 'PAUSE_MS_MAX', limit.PAUSE_MS_MAX),
  atMost('CUT_TIMEOUT_MS', limit.CUT_TIMEOUT_MS, 'UBS_SEND_TIMEOUT_MS_MAX', limit.UBS_SEND_TIMEOUT_MS_MAX),
  atMost('ADAPTER_TIMEOUT_MS_MAX', limit.ADAPTER_TIMEOUT_MS_MAX, 'UBS_SEND_TIMEOUT_MS_MAX', limit.UBS_SEND_TIMEOUT_MS_MAX),
  atMost('JWKS_TIMEOUT_MS_MAX', limit.JWKS_TIMEOUT_MS_MAX, 'JWKS_AGE_MS_MAX', limit.JWKS_AGE_MS_MAX),
];
