// Every limit of the service, in one file (after TigerBeetle's src/constants.zig): each bound, cap
// and range, named for what it bounds with its unit and `_MAX` or `_MIN`, and why it has its value.
// src/limits-check.ts asserts every one once, when the configuration is loaded. Bounds that are
// part of a business rule (amounts, user ids, asset and key lengths) are defined in src/domain,
// which imports nothing, and re-exported here so this file still lists every limit; the widths of
// on-disk and wire formats stay beside their encoders.

export { ASSET_LENGTH_MAX, KEY_LENGTH_MAX, USER_ID_MAX } from './domain/checks.js';
export { AMOUNT_UNITS_MAX, BALANCE_UNITS_MAX, PRECISION_MAX } from './domain/money.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

// ---- Ranges of the environment variables (src/config/ reads each with its default) ----

/** PORT and ADMIN_PORT: any TCP port; 0 lets the system choose one (tests). */
export const PORT_MIN = 0;
export const PORT_MAX = 65_535;
/** The PORT a client connects to (make backup): a real port, never 0. */
export const CONNECT_PORT_MIN = 1;
/** EMBEDDED_PG_PORT: above the privileged ports, which need root. */
export const EMBEDDED_PG_PORT_MIN = 1024;
/** EMBEDDED_PG_SHARED_BUFFERS_MB: PostgreSQL refuses fewer than 16 MB of buffers here; a TiB is past any host. */
export const EMBEDDED_PG_SHARED_BUFFERS_MB_MIN = 16;
export const EMBEDDED_PG_SHARED_BUFFERS_MB_MAX = 1_048_576;
/** PG_RECOVERY_BACKOFF_CAP_MS: at least the first wait (RESTART_BACKOFF_BASE_MS), at most ten minutes of waiting. */
export const PG_RECOVERY_BACKOFF_CAP_MS_MIN = 250;
export const PG_RECOVERY_BACKOFF_CAP_MS_MAX = 600_000;
/** COORDINATORS: coordinator shards (threads); more than 64 would only share the same few cores. */
export const COORDINATORS_MIN = 1;
export const COORDINATORS_MAX = 64;
/** PG_POOL_MAX and MAIN_PG_POOL_MAX: connections per pool; PostgreSQL's default max_connections is 100 per server. */
export const PG_POOL_CONNECTIONS_MIN = 1;
export const PG_POOL_CONNECTIONS_MAX = 200;
/** SHUTDOWN_DRAIN_MS: 0 closes connections at once; ten minutes is past any request. */
export const SHUTDOWN_DRAIN_MS_MIN = 0;
export const SHUTDOWN_DRAIN_MS_MAX = 600_000;
/** SHUTDOWN_TIMEOUT_MS: a second at least to close the stores; an hour at most before the process exits anyway. */
export const SHUTDOWN_TIMEOUT_MS_MIN = 1_000;
export const SHUTDOWN_TIMEOUT_MS_MAX = HOUR_MS;
/** PG_STATEMENT_TIMEOUT_MS: a batched statement takes tens of ms; under 100 ms would cancel healthy work. */
export const PG_STATEMENT_TIMEOUT_MS_MIN = 100;
/** PG_LOCK_TIMEOUT_MS: row locks are held for a statement or two. */
export const PG_LOCK_TIMEOUT_MS_MIN = 10;
/** PG_IDLE_IN_TRANSACTION_TIMEOUT_MS: the service never idles inside a transaction for long. */
export const PG_IDLE_IN_TRANSACTION_TIMEOUT_MS_MIN = 100;
/** The three PostgreSQL timeouts above: an hour, so none is effectively unbounded. */
export const PG_TIMEOUT_MS_MAX = HOUR_MS;
/** ADAPTER_TIMEOUT_MS: one call to a ledger; an unanswered call is an unknown outcome, retried. */
export const ADAPTER_TIMEOUT_MS_MIN = 10;
export const ADAPTER_TIMEOUT_MS_MAX = 600_000;
/** HAPPY_PATH_DEADLINE_MS: how long a request waits for its transfer's end; 0 answers at once with the state. */
export const HAPPY_PATH_DEADLINE_MS_MIN = 0;
export const HAPPY_PATH_DEADLINE_MS_MAX = 60_000;
/** RETRY_BASE_MS: the first retry's wait (spec 002's capped exponential backoff). */
export const RETRY_BASE_MS_MIN = 1;
export const RETRY_BASE_MS_MAX = 600_000;
/** RETRY_CAP_MS: the longest wait between two retries; checked not below RETRY_BASE_MS in src/config/config.ts. */
export const RETRY_CAP_MS_MIN = 1;
export const RETRY_CAP_MS_MAX = HOUR_MS;
/** COORDINATOR_MAILBOX_MAX: transfers waiting per shard before the edge answers busy; a million is about a GB. */
export const COORDINATOR_MAILBOX_TRANSFERS_MIN = 1;
export const COORDINATOR_MAILBOX_TRANSFERS_MAX = 1_000_000;
/** COORDINATOR_CONCURRENCY_MAX: transfers in a shard at once; each may hold a timer and a PostgreSQL row. */
export const COORDINATOR_CONCURRENCY_TRANSFERS_MIN = 1;
export const COORDINATOR_CONCURRENCY_TRANSFERS_MAX = 10_000;
/** UBS_BATCH_MAX: commands per UBSCore batch (at least one); its maximum is UBS_BATCH_COMMANDS_MAX. */
export const UBS_BATCH_COMMANDS_MIN = 1;
/** UBS_SNAPSHOT_EVERY_RECORDS: 0 writes a snapshot only at close; its maximum is UBS_SNAPSHOT_RECORDS_MAX. */
export const UBS_SNAPSHOT_EVERY_RECORDS_MIN = 0;
/** UBS_DISK_RESERVE_MB: 0 switches the free-space check off; a million MiB is past any disk. */
export const UBS_DISK_RESERVE_MB_MIN = 0;
export const UBS_DISK_RESERVE_MB_MAX = 1_000_000;
/** BODY_BYTES_MAX: the smallest valid request fits in 256 bytes; past 1 MiB is no transfer request. */
export const BODY_BYTES_LIMIT_MIN = 256;
export const BODY_BYTES_LIMIT_MAX = MIB;
/** RATE_LIMIT_PER_SECOND: 0 switches the edge's rate limit off. */
export const RATE_LIMIT_PER_SECOND_MIN = 0;
export const RATE_LIMIT_PER_SECOND_MAX = 1_000_000;
/** DAILY_TRANSFER_LIMIT: transfers per user per UTC day; 0 switches it off. */
export const DAILY_TRANSFER_LIMIT_MIN = 0;
export const DAILY_TRANSFER_LIMIT_MAX = 100_000_000;
/** SCAN_INTERVAL_MS: the recovery scan's period; under 100 ms it would mostly scan nothing. */
export const SCAN_INTERVAL_MS_MIN = 100;
export const SCAN_INTERVAL_MS_MAX = HOUR_MS;
/** STALE_THRESHOLD_MS: how old a transfer's last change is before the scan drives it; 0 drives every one. */
export const STALE_THRESHOLD_MS_MIN = 0;
export const STALE_THRESHOLD_MS_MAX = DAY_MS;
/** SCAN_CONCURRENCY_MAX: transfers one scan pass drives at once. */
export const SCAN_CONCURRENCY_TRANSFERS_MIN = 1;
export const SCAN_CONCURRENCY_TRANSFERS_MAX = 10_000;
/** PG_BATCH_MAX: rows per batched statement; past 10,000 one statement holds its locks too long. */
export const PG_BATCH_ROWS_MIN = 1;
export const PG_BATCH_ROWS_MAX = 10_000;
/** TARGET_PENDING_ALERT_MS: age of a TARGET_PENDING transfer that raises an alert; 0 alerts on every one. */
export const TARGET_PENDING_ALERT_MS_MIN = 0;
export const TARGET_PENDING_ALERT_MS_MAX = DAY_MS;
/** REFUND_FAILURES_ALERT: failed refunds of one transfer that raise an alert (at least one). */
export const REFUND_FAILURES_ALERT_MIN = 1;
export const REFUND_FAILURES_ALERT_MAX = 1_000_000;
/** STUCK_RETRIES: retries after which a transfer counts as stuck (at least one). */
export const STUCK_RETRIES_MIN = 1;
export const STUCK_RETRIES_MAX = 1_000_000;
/** STUCK_AGE_MS: age after which a transfer counts as stuck; thirty days at most. */
export const STUCK_AGE_MS_MIN = 0;
export const STUCK_AGE_MS_MAX = 30 * DAY_MS;
/** INVARIANT_INTERVAL_MS: the conservation check's period; 0 switches the periodic run off. */
export const INVARIANT_INTERVAL_MS_MIN = 0;
export const INVARIANT_INTERVAL_MS_MAX = DAY_MS;
/** ABNORMAL_TRANSFERS_PER_MINUTE: one user's transfers per minute that raise an alert; 0 switches it off. */
export const ABNORMAL_TRANSFERS_PER_MINUTE_MIN = 0;
export const ABNORMAL_TRANSFERS_PER_MINUTE_MAX = 10_000_000;
/** ALERT_EVAL_INTERVAL_MS: how often spec 002's alert table is evaluated. */
export const ALERT_EVAL_INTERVAL_MS_MIN = 100;
export const ALERT_EVAL_INTERVAL_MS_MAX = HOUR_MS;
/** ALERT_BACKLOG_MAX, ALERT_RETRYING_MAX, ALERT_DEAD_LETTERS_MAX: counts that fire strictly above; 0 fires on one. */
export const ALERT_COUNT_THRESHOLD_MIN = 0;
export const ALERT_COUNT_THRESHOLD_MAX = 100_000_000;
/** ALERT_FAILURE_RATE_PERCENT: a percentage. */
export const ALERT_FAILURE_RATE_PERCENT_MIN = 0;
export const ALERT_FAILURE_RATE_PERCENT_MAX = 100;
/** ALERT_FAILURE_WINDOW_MS: the window the failure rate is measured over; a second to a day. */
export const ALERT_FAILURE_WINDOW_MS_MIN = 1_000;
export const ALERT_FAILURE_WINDOW_MS_MAX = DAY_MS;
/** ALERT_AVG_RETRIES_MAX: average retries of unfinished transfers that fires an alert. */
export const ALERT_AVG_RETRIES_THRESHOLD_MIN = 0;
export const ALERT_AVG_RETRIES_THRESHOLD_MAX = 1_000_000;
/** JWT_JWKS_COOLDOWN_MS: at most one JWKS reload per this, however many unknown kids arrive. */
export const JWKS_COOLDOWN_MS_MIN = 100;
export const JWKS_COOLDOWN_MS_MAX = HOUR_MS;
/** JWT_JWKS_MAX_AGE_MS: a key set older than this is reloaded at its next use; a second to a day. */
export const JWKS_AGE_MS_MIN = 1_000;
export const JWKS_AGE_MS_MAX = DAY_MS;
/** JWT_JWKS_TIMEOUT_MS: a JWKS URL fetch unanswered after this fails. */
export const JWKS_TIMEOUT_MS_MIN = 100;
export const JWKS_TIMEOUT_MS_MAX = 60_000;

// ---- HTTP edge: tokens, keys, bodies, pages ----

/** The shortest HS256 secret accepted, in bytes (RFC 7518 §3.2: at least the hash's 256 bits). */
export const JWT_SECRET_BYTES_MIN = 32;
/** The longest bearer token read: a real token is under 1 KB; a longer one is refused before any parsing. */
export const TOKEN_LENGTH_MAX = 4_096;
/** Tokens remembered per middleware; at about 200 bytes a token, a few MB at most. */
export const VERIFIED_TOKENS_MAX = 10_000;
/** Keys one set may hold; an identity provider publishes a handful. */
export const JWKS_KEYS_MAX = 100;
/** The longest key id accepted in a JWKS; real ones are tens of characters. */
export const KID_LENGTH_MAX = 256;
/** The largest JWKS document read, file or answer. */
export const JWKS_BYTES_MAX = MIB;
/** The longest client-supplied X-Request-Id kept; a longer one is replaced by a new UUID. */
export const REQUEST_ID_CHARS_MAX = 128;
/** Users whose rate and abnormality windows are kept; past it, ended windows are swept. */
export const USERS_TRACKED_MAX = 100_000;
/** A page of a user's transfer history: the largest and the default `limit`. */
export const HISTORY_LIMIT_MAX = 100;
export const HISTORY_LIMIT_DEFAULT = 20;
/** A page of the operator's transfer list: the largest and the default `limit`. */
export const LIST_LIMIT_MAX = 500;
export const LIST_LIMIT_DEFAULT = 100;
/** The longest reason an operator may give for a halt: it is logged and shown, not a document. */
export const HALT_REASON_CHARS_MAX = 200;
/** A page of the console's search: the largest and the default `limit`. */
export const SEARCH_LIMIT_MAX = 50;
export const SEARCH_LIMIT_DEFAULT = 20;
/** A page of the audit log: the largest and the default `limit`. */
export const AUDIT_LIMIT_MAX = 100;
export const AUDIT_LIMIT_DEFAULT = 20;

// ---- Coordinator: recovery scan, retries, stop ----

/** Bounds of the recovery scan and the in-memory retry timers. */
export const SCAN_BATCH_MAX = 1_000;
export const RETRY_TIMERS_MAX = 100_000;
/** Doublings of the retry backoff: 2^30 times the base is past any cap, and 2^n stays an exact number. */
export const RETRY_BACKOFF_EXPONENT_MAX = 30;
/** Late TARGET_PENDING transfers one watchdog sweep reads and alerts on. */
export const SWEEP_BATCH_MAX = 1_000;
/** How long a shard's stop waits for the drives in progress before it closes its stores. */
export const STOP_DRAIN_MS = 5_000;
/**
 * Tasks other than transfers (an operator's drive) a shard runs beside its full share of
 * transfers, so an operator's retry never waits behind them. Control (metrics, assets, halt,
 * stop) goes through the shard's comlink port instead.
 */
export const CONTROL_TASKS_MAX = 16;
/** The longest the main thread waits for a shard's answer to metrics, assets or halt (comlink has no timeout). */
export const COORDINATOR_CONTROL_MS_MAX = 2_000;
/**
 * The longest a shard told of a halt waits for the moves out of INIT already under way (MON-003)
 * before it answers; within COORDINATOR_CONTROL_MS_MAX, so the answer is not counted late.
 */
export const HALT_SETTLE_MS_MAX = 1_500;
/** A halt or resume a shard did not take is told to it again, after a backoff from the first to the cap. */
export const HALT_RETELL_BASE_MS = 100;
export const HALT_RETELL_CAP_MS = 5_000;
/**
 * A shard whose view of the halt has not been confirmed (by a read of the stored halt or a control
 * message) for this many recovery scan intervals, and at least HALT_UNKNOWN_MS_MIN, counts itself
 * halted until a read succeeds: a shard that cannot tell holds its transfers in INIT.
 */
export const HALT_UNKNOWN_SCAN_INTERVALS = 3;
export const HALT_UNKNOWN_MS_MIN = 2_000;
/** The longest the main thread waits for UBSCore's stats, metrics or /readyz's probe command. */
export const UBS_CONTROL_MS_MAX = 2_000;
/**
 * The longest it waits for a shard to stop: its drives drain for up to STOP_DRAIN_MS and its
 * PostgreSQL pool closes within 5 s more. A shard that has not stopped by then is terminated.
 */
export const COORDINATOR_STOP_MS_MAX = 15_000;
/**
 * Transfers one `coord.submit` message carries at most. The main thread gathers the transfers of
 * one event-loop turn per shard into one message, since a piscina task per transfer cost about a
 * twelfth of the HTTP thread; each is answered on its own, as soon as its drive ends.
 */
export const SUBMIT_BATCH_MAX = 64;
/** External movements left PENDING that one resume pass re-drives, oldest first; the rest wait for the next pass. */
export const PENDING_RESUME_MAX = 10_000;

// ---- Service: UBSCore's close, readiness, alerts, invariant ----

/**
 * A repeat of the signal that began a stop, within this window, is the same stop: a signal to a
 * process group (Ctrl-C, systemd's KillMode=control-group) reaches the service twice when `make
 * run` started it, from the group and again from make, which relays SIGTERM to its child. A
 * different signal, or the same one after the window, is a second request: the process ends at
 * once. A second is far longer than the relay takes, and shorter than a person's deliberate retry.
 */
export const SIGNAL_REPEAT_WINDOW_MS = 1_000;
/**
 * Once no request is in flight, how long a stop still keeps its listeners and idle connections
 * open (counted from the signal) while some are open: a request already on the wire when the
 * signal came (in a socket's buffer, or on a connection not yet accepted) is read and answered
 * 503 in that time instead of being reset. Every answer during a stop closes its connection, so
 * clients that sent something are gone sooner and the stop goes on at once.
 */
export const DRAIN_SETTLE_MS = 500;
/** How long a process ending at once waits to die of its own signal before it sends itself SIGKILL. */
export const END_NOW_FALLBACK_MS = 1_000;
/** How long `pg_ctl stop -m immediate` may take when the process ends at once (seconds, as pg_ctl -t takes it). */
export const STOP_NOW_TIMEOUT_S = 10;
/** How long a stop waits for UBSCore's close (a last snapshot) before terminating its thread. */
export const UBS_CLOSE_TIMEOUT_MS = 10_000;
/** How long /readyz waits for PostgreSQL to answer `SELECT 1` before it says `postgres: false`. */
export const READYZ_PG_PROBE_TIMEOUT_MS = 1_000;
/** Per-row measures of the alert table read at most this many unfinished transfers, oldest first. */
export const ALERT_ROWS_MAX = 10_000;
/** Outcomes kept in the failure-rate window; the oldest are dropped past it. */
export const SAMPLES_MAX = 10_000;
/** An alert webhook unanswered after this is given up (the alert stays in PostgreSQL). */
export const WEBHOOK_TIMEOUT_MS = 5_000;
/** Alert keys one sink remembers as raised, to skip re-inserting them; beyond it, forgets all. */
export const RAISED_REMEMBERED_MAX = 10_000;
/** Differences listed in one conservation alert; the count says how many there were. */
export const DIFFERENCES_IN_ALERT_MAX = 20;
/** Keys per op_seqs question the conservation check asks UBSCore (within OP_SEQS_KEYS_MAX). */
export const OP_SEQS_BATCH_MAX = 5_000;
/** How long the conservation check waits for UBSCore's audit cut or an op_seqs answer. */
export const CUT_TIMEOUT_MS = 60_000;
/** The shortest window the utilisation gauge measures over: scrapes closer together reuse the last value. */
export const ELU_WINDOW_MS_MIN = 1_000;

// ---- PostgreSQL ----

/**
 * How long a pool waits, at most, before it tries to connect again after failed attempts.
 * postgres.js waits 3^n / 100 s after n failed connects, up to 20 s, and every query waits with
 * it: after a long outage a pool would come back up to 20 s after the server. Here the wait
 * doubles from RECONNECT_BACKOFF_BASE_MS and stops at this cap, so every pool reconnects within
 * about a second of the server answering again (a refused connect costs the server nothing).
 */
export const RECONNECT_BACKOFF_CAP_MS = 1_000;
/** The first wait before a pool connects again. */
export const RECONNECT_BACKOFF_BASE_MS = 50;
/** Doublings of that wait counted: 2^20 times the base is far past the cap, and the power stays exact. */
export const RECONNECT_BACKOFF_EXPONENT_MAX = 20;
/** Batches of one kind in flight at once when the caller gives no bound; each holds a connection. */
export const BATCH_IN_FLIGHT_MAX_DEFAULT = 2;
/**
 * Batches of at least this many rows go to the set-based form of the function (a fixed number of
 * statements per batch), smaller ones to the per-item form (fewer statements for a few rows).
 * Measured on 2 cores with the index plans of migration 0007 (before it, a stale plan in the set
 * form hid the crossover at 64): PostgreSQL CPU per transfer at 16 connections (batches of about
 * 7 rows) was 0.47 ms with the per-item form against 0.60 ms set-based, at 64 connections (about
 * 12 to 18 rows) 0.33 against 0.27; from 12 rows the set-based form was the cheaper. The
 * recovery scan's batches of hundreds run about twice as fast set-based.
 */
export const SET_BASED_ROWS_MIN = 12;
/** How stale the assets cache may be: an operator's change is seen within this. */
export const ASSET_CACHE_TTL_MS = 1_000;
/** How long pg_ctl waits for the embedded server to start or stop (seconds, as pg_ctl -t takes it). */
export const START_TIMEOUT_S = 60;
/** The first wait between restart attempts; it doubles per failed attempt up to the cap given. */
export const RESTART_BACKOFF_BASE_MS = 200;

// ---- Ownership of the data directory and the database ----

/** How long a take waits for a lock held by a process that just died (its backend exits when it sees the closed socket). */
export const TAKE_WAIT_MS = 3_000;
/** How often a process asking for the owner lock asks again, and reads ledger_owner's row (src/ownership/lapsed.ts). */
export const TAKE_RETRY_MS = 250;
/**
 * The owner's lease, LEASE_MS: how long past its last renewal the owner of record stays
 * the owner; a standby may take over once it has passed. Under 0.5 s a pause of PostgreSQL would
 * end a live owner; over a minute a hung owner would keep the ledger from being served too long.
 */
export const OWNER_LEASE_MS_DEFAULT = 2_000;
export const OWNER_LEASE_MS_MIN = 500;
export const OWNER_LEASE_MS_MAX = 60_000;
/** LEASE_RENEW_MS's default and floor (renewals more often load the server for nothing); it must stay under LEASE_MS / 3. */
export const OWNER_LEASE_RENEW_MS_DEFAULT = 400;
export const OWNER_LEASE_RENEW_MS_MIN = 50;
/** How long the owner-lock connection may take to connect (seconds, as postgres.js takes it). */
export const CONNECT_TIMEOUT_S = 10;
/** The first wait before taking the lock again after a loss; it doubles per failed attempt up to the cap given. */
export const RETAKE_BACKOFF_BASE_MS = 200;
/**
 * The owner asks for its own lock again at least this often while it has lost it, whatever
 * PG_RECOVERY_BACKOFF_CAP_MS says: one cheap statement, and what keeps the ownership where it was
 * across a PostgreSQL restart or failover (see STANDBY_SETTLE_MS).
 */
export const OWNER_RETAKE_BACKOFF_CAP_MS = 1_000;
/**
 * A standby that has just started, or whose own tries failed or session closed (PostgreSQL
 * restarted or failed over: every session ended, the owner's lock session too), only watches for
 * this long once PostgreSQL answers it before it takes a free owner lock: the owner, alive and
 * asking every OWNER_RETAKE_BACKOFF_CAP_MS (each ask may wait up to RECONNECT_BACKOFF_CAP_MS for its
 * connection), takes its own lock back first, and a PostgreSQL failover moves no ownership. A standby that has run and reached PostgreSQL that long (the owner died, or was cut
 * off alone) takes the lock as soon as it is free.
 */
export const STANDBY_SETTLE_MS = 3 * OWNER_RETAKE_BACKOFF_CAP_MS;
/**
 * A holder of the owner lock whose application_name is not the owner of record's has taken the
 * lock without a completed claim (a starting primary, a promoting standby). If its lock session
 * stays idle (or idle in a transaction, or in one statement) this long, a waiting standby ends
 * it: the process froze or was cut off between the lock and its claim. A live one shows itself
 * every OWNER_CLAIM_HEARTBEAT_MS on that session, however long its migrations and reconcile take.
 */
export const OWNER_CLAIM_MS_MAX = 5_000;
export const OWNER_CLAIM_HEARTBEAT_MS = 1_000;
/**
 * The owner-lock session's own bounds: a claim waits this long for the fence lock (its
 * statement then fails and is tried again), a statement at most this long, and a claim frozen
 * inside its transaction (holding the fence lock exclusively, so every write of money would wait)
 * is ended by the server after OWNER_SESSION_IDLE_IN_TRANSACTION_MS.
 */
export const OWNER_SESSION_LOCK_TIMEOUT_MS = 3_000;
export const OWNER_SESSION_STATEMENT_TIMEOUT_MS = 4_000;
export const OWNER_SESSION_IDLE_IN_TRANSACTION_MS = 2_000;
/** Tries of the epoch claim when its wait for the fence lock or its statement times out. */
export const OWNER_CLAIM_TRIES_MAX = 5;
/**
 * Every session the service opens carries server-side TCP bounds, so a process cut off from
 * PostgreSQL (its machine frozen, its link gone) loses its sessions, and the locks they hold,
 * within seconds rather than the OS's two hours: keepalive probes after this much silence, this
 * far apart, this many unanswered; and unacknowledged data for at most PG_TCP_USER_TIMEOUT_MS.
 * postgres.js's own socket keepalive (client side) starts after PG_CLIENT_KEEPALIVE_S.
 */
export const PG_TCP_KEEPALIVES_IDLE_S = 5;
export const PG_TCP_KEEPALIVES_INTERVAL_S = 2;
export const PG_TCP_KEEPALIVES_COUNT_MAX = 3;
export const PG_TCP_USER_TIMEOUT_MS = 10_000;
export const PG_CLIENT_KEEPALIVE_S = 5;
/** How long a refused process waits for the owner to say who it is over the socket. */
export const ASK_OWNER_TIMEOUT_MS = 1_000;
/** The longest answer read from the owner's socket: its pid, host and start time fit in far less. */
export const OWNER_INFO_BYTES_MAX = 4_096;

// ---- Backup and restore ----

/** How long UBSCore may stay paused before the pause lifts by itself (and the backup fails). */
export const BACKUP_PAUSE_MS_MAX = 60_000;
/** A restore retakes the owner lock quickly: no other process should be running. */
export const RESTORE_RETAKE_BACKOFF_CAP_MS = 1_000;
/** The longest backup directory an operator may name: Linux's PATH_MAX. */
export const BACKUP_DIR_CHARS_MAX = 4_096;
/** Rows per cursor fetch when dumping and per INSERT when loading. */
export const ROWS_PER_STEP_MAX = 1_000;

export * from './limits-spot.js';
