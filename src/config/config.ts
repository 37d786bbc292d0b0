// Every environment variable the service reads, read here (JWT_* in jwt.ts) and nowhere
// else, with safe defaults. Each number's accepted range is a named limit in src/limits.ts, and
// loading the configuration checks every limit first.

import path from 'node:path';
import type { PgTimeouts } from '../db/sql.js';
import type { CrashPoint } from '../faults/crash-points.js';
import { bannerVar, ConfigError, crashPointVar, type Env, enumVar, intVar, logFormatVar, type NodeEnv, nonEmpty, urlVar } from './vars.js';
import { jwtConfig, type JwtConfig } from './jwt.js';
import { roleVars, type RoleVars } from './role.js';
import { leaseConfig, type LeaseConfig } from './lease.js';
import { retentionConfig, type RetentionConfig } from './retention.js';
import { checkLimits } from '../limits-check.js';
import {
  ABNORMAL_TRANSFERS_PER_MINUTE_MAX,
  ABNORMAL_TRANSFERS_PER_MINUTE_MIN,
  ADAPTER_TIMEOUT_MS_MAX,
  ADAPTER_TIMEOUT_MS_MIN,
  ALERT_AVG_RETRIES_THRESHOLD_MAX,
  ALERT_AVG_RETRIES_THRESHOLD_MIN,
  ALERT_COUNT_THRESHOLD_MAX,
  ALERT_COUNT_THRESHOLD_MIN,
  ALERT_EVAL_INTERVAL_MS_MAX,
  ALERT_EVAL_INTERVAL_MS_MIN,
  ALERT_FAILURE_RATE_PERCENT_MAX,
  ALERT_FAILURE_RATE_PERCENT_MIN,
  ALERT_FAILURE_WINDOW_MS_MAX,
  ALERT_FAILURE_WINDOW_MS_MIN,
  BODY_BYTES_LIMIT_MAX,
  BODY_BYTES_LIMIT_MIN,
  COORDINATORS_MAX,
  COORDINATORS_MIN,
  COORDINATOR_CONCURRENCY_TRANSFERS_MAX,
  COORDINATOR_CONCURRENCY_TRANSFERS_MIN,
  COORDINATOR_MAILBOX_TRANSFERS_MAX,
  COORDINATOR_MAILBOX_TRANSFERS_MIN,
  DAILY_TRANSFER_LIMIT_MAX,
  DAILY_TRANSFER_LIMIT_MIN,
  EMBEDDED_PG_PORT_MIN,
  EMBEDDED_PG_SHARED_BUFFERS_MB_MAX,
  EMBEDDED_PG_SHARED_BUFFERS_MB_MIN,
  HAPPY_PATH_DEADLINE_MS_MAX,
  HAPPY_PATH_DEADLINE_MS_MIN,
  INVARIANT_INTERVAL_MS_MAX,
  INVARIANT_INTERVAL_MS_MIN,
  PG_BATCH_ROWS_MAX,
  PG_BATCH_ROWS_MIN,
  PG_IDLE_IN_TRANSACTION_TIMEOUT_MS_MIN,
  PG_LOCK_TIMEOUT_MS_MIN,
  PG_POOL_CONNECTIONS_MAX,
  PG_POOL_CONNECTIONS_MIN,
  PG_RECOVERY_BACKOFF_CAP_MS_MAX,
  PG_RECOVERY_BACKOFF_CAP_MS_MIN,
  PG_STATEMENT_TIMEOUT_MS_MIN,
  PG_TIMEOUT_MS_MAX,
  PORT_MAX,
  PORT_MIN,
  RATE_LIMIT_PER_SECOND_MAX,
  RATE_LIMIT_PER_SECOND_MIN,
  REFUND_FAILURES_ALERT_MAX,
  REFUND_FAILURES_ALERT_MIN,
  RETRY_BASE_MS_MAX,
  RETRY_BASE_MS_MIN,
  RETRY_CAP_MS_MAX,
  RETRY_CAP_MS_MIN,
  SCAN_CONCURRENCY_TRANSFERS_MAX,
  SCAN_CONCURRENCY_TRANSFERS_MIN,
  SCAN_INTERVAL_MS_MAX,
  SCAN_INTERVAL_MS_MIN,
  SHUTDOWN_DRAIN_MS_MAX,
  SHUTDOWN_DRAIN_MS_MIN,
  SHUTDOWN_TIMEOUT_MS_MAX,
  SHUTDOWN_TIMEOUT_MS_MIN,
  STALE_THRESHOLD_MS_MAX,
  STALE_THRESHOLD_MS_MIN,
  STUCK_AGE_MS_MAX,
  STUCK_AGE_MS_MIN,
  STUCK_RETRIES_MAX,
  STUCK_RETRIES_MIN,
  TARGET_PENDING_ALERT_MS_MAX,
  TARGET_PENDING_ALERT_MS_MIN,
  UBS_BATCH_COMMANDS_MAX,
  UBS_BATCH_COMMANDS_MIN,
  UBS_DISK_RESERVE_MB_MAX,
  UBS_DISK_RESERVE_MB_MIN,
  UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
  UBS_SNAPSHOT_EVERY_RECORDS_MIN,
  UBS_SNAPSHOT_RECORDS_MAX,
} from '../limits.js';

export { ConfigError, type NodeEnv } from './vars.js';
export { DEV_JWT_SECRET, type JwtConfig } from './jwt.js';

export type Config = RoleVars & {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** Null: start the embedded PostgreSQL server inside dataDir. */
  readonly databaseUrl: string | null;
  readonly embeddedPgPort: number;
  readonly embeddedPgSharedBuffersMb: number;
  readonly nodeEnv: NodeEnv;
  readonly jwt: JwtConfig;
  /** Null: the admin routes and /metrics share the public listener. */
  readonly adminPort: number | null;
  readonly adminHost: string;
  /** Development only: print development tokens and curl commands at start. */
  readonly printBanner: boolean;
  /** Apply pending migrations at start (development default); otherwise only check none is pending. */
  readonly migrateOnStart: boolean;
  /**
   * Cap of the capped exponential backoff between attempts to start the embedded PostgreSQL again
   * after it died, and to take the owner lock again after its connection closed.
   */
  readonly pgRecoveryBackoffCapMs: number;
  /** The owner's lease and how often it is renewed (src/config/lease.ts). */
  readonly lease: LeaseConfig;
  /** The processed set's retention and its passes (src/config/retention.ts). */
  readonly retention: RetentionConfig;
  readonly coordinators: number;
  readonly pgPoolMax: number;
  /** How long a stop waits for the requests in flight before closing their connections. */
  readonly shutdownDrainMs: number;
  /** The whole stop (drain included) after which the process exits anyway, non-zero. */
  readonly shutdownTimeoutMs: number;
  /** Statement, lock and idle-in-transaction timeouts of every PostgreSQL connection of the service. */
  readonly pgTimeouts: PgTimeouts;
  readonly mainPgPoolMax: number;
  readonly adapterTimeoutMs: number;
  readonly happyPathDeadlineMs: number;
  readonly retryBaseMs: number;
  readonly retryCapMs: number;
  readonly coordinatorMailboxMax: number;
  readonly coordinatorConcurrencyMax: number;
  readonly ubsBatchMax: number;
  /** UBSCore writes a snapshot every this many WAL records; 0 only at close. */
  readonly ubsSnapshotEveryRecords: number;
  /** UBSCore starts no WAL write with less than this free on its filesystem (MiB); 0 switches the check off. */
  readonly ubsDiskReserveMb: number;
  readonly bodyBytesMax: number;
  /** Requests per user per second at the HTTP edge; 0 switches it off. */
  readonly rateLimitPerSecond: number;
  /** Transfers per user per UTC day; 0 switches it off. */
  readonly dailyTransferLimit: number;
  /** Whether each asset's daily amount limit is enforced. */
  readonly dailyAmountLimits: boolean;
  /** Tests only: kill the process with SIGKILL at this named point (src/faults/crash-points.ts). */
  readonly crashPoint: CrashPoint | null;
  readonly scanIntervalMs: number;
  readonly staleThresholdMs: number;
  readonly scanConcurrencyMax: number;
  /** Rows per batched statement (reads, state changes, Funding operations). */
  readonly pgBatchMax: number;
  readonly targetPendingAlertMs: number;
  readonly refundFailuresAlertMax: number;
  readonly stuckRetriesMax: number;
  readonly stuckAgeMs: number;
  readonly alertWebhookUrl: string | null;
  /** How often the conservation check runs; 0 switches the periodic run off. */
  readonly invariantIntervalMs: number;
  readonly abnormalTransfersPerMinute: number;
  /** Spec 002's alert table: how often it is evaluated, and each threshold (fires strictly above). */
  readonly alertRules: {
    readonly evalIntervalMs: number;
    readonly backlogMax: number;
    readonly retryingMax: number;
    readonly deadLettersMax: number;
    readonly failureRatePercent: number;
    readonly failureWindowMs: number;
    readonly avgRetriesMax: number;
  };
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** JSON lines, or readable lines for a terminal; `auto` is pretty when stderr is a terminal. */
  readonly logFormat: 'json' | 'pretty';
};

export function loadConfig(env: Env = process.env): Config {
  checkLimits();
  const nodeEnv = enumVar(env, 'NODE_ENV', ['development', 'production'] as const, 'development');
  const config: Config = {
    ...listenerVars(env, nodeEnv),
    ...storeVars(env, nodeEnv),
    ...threadVars(env),
    ...coordinatorVars(env),
    ...watchVars(env),
    ...roleVars(env, nonEmpty(env.DATABASE_URL), nodeEnv),
    nodeEnv,
    jwt: jwtConfig(env, nodeEnv),
    lease: leaseConfig(env),
    retention: retentionConfig(env),
    logLevel: enumVar(env, 'LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
    logFormat: logFormatVar(env, nodeEnv),
  };
  if (config.retryCapMs < config.retryBaseMs) throw new ConfigError('RETRY_CAP_MS must be >= RETRY_BASE_MS');
  if (config.shutdownTimeoutMs <= config.shutdownDrainMs)
    throw new ConfigError('SHUTDOWN_TIMEOUT_MS must be greater than SHUTDOWN_DRAIN_MS');
  if (config.adminPort !== null && config.adminPort !== 0 && config.adminPort === config.port)
    throw new ConfigError('ADMIN_PORT must differ from PORT');
  return config;
}

/** The fields every coordinator shard receives whole (src/coordinator/types.ts: CoordinatorConfig). */
export const COORDINATOR_SETTINGS = [
  'pgPoolMax',
  'pgTimeouts',
  'adapterTimeoutMs',
  'happyPathDeadlineMs',
  'retryBaseMs',
  'retryCapMs',
  'scanIntervalMs',
  'staleThresholdMs',
  'scanConcurrencyMax',
  'pgBatchMax',
  'targetPendingAlertMs',
  'refundFailuresAlertMax',
  'stuckRetriesMax',
  'stuckAgeMs',
  'alertWebhookUrl',
  'dailyTransferLimit',
  'dailyAmountLimits',
  'crashPoint',
] as const satisfies readonly (keyof Config)[];

export type CoordinatorSettings = Pick<Config, (typeof COORDINATOR_SETTINGS)[number]>;

/** The configuration's coordinator section, copied out for a shard's thread (nothing else crosses). */
export function coordinatorSettings(config: Config): CoordinatorSettings {
  return Object.fromEntries(COORDINATOR_SETTINGS.map((key) => [key, config[key]])) as CoordinatorSettings;
}

type ListenerVars = Pick<
  Config,
  | 'port'
  | 'host'
  | 'adminPort'
  | 'adminHost'
  | 'printBanner'
  | 'bodyBytesMax'
  | 'rateLimitPerSecond'
  | 'shutdownDrainMs'
  | 'shutdownTimeoutMs'
>;

/** The HTTP listeners: where they listen, what they accept, and how they stop. */
function listenerVars(env: Env, nodeEnv: NodeEnv): ListenerVars {
  return {
    port: intVar(env, 'PORT', 8080, PORT_MIN, PORT_MAX),
    host: env.HOST ?? '127.0.0.1',
    adminPort: env.ADMIN_PORT === undefined || env.ADMIN_PORT === '' ? null : intVar(env, 'ADMIN_PORT', 0, PORT_MIN, PORT_MAX),
    adminHost: env.ADMIN_HOST ?? '127.0.0.1',
    printBanner: bannerVar(env, nodeEnv),
    bodyBytesMax: intVar(env, 'BODY_BYTES_MAX', 16 * 1024, BODY_BYTES_LIMIT_MIN, BODY_BYTES_LIMIT_MAX),
    rateLimitPerSecond: intVar(env, 'RATE_LIMIT_PER_SECOND', 10, RATE_LIMIT_PER_SECOND_MIN, RATE_LIMIT_PER_SECOND_MAX),
    shutdownDrainMs: intVar(env, 'SHUTDOWN_DRAIN_MS', 10_000, SHUTDOWN_DRAIN_MS_MIN, SHUTDOWN_DRAIN_MS_MAX),
    shutdownTimeoutMs: intVar(env, 'SHUTDOWN_TIMEOUT_MS', 30_000, SHUTDOWN_TIMEOUT_MS_MIN, SHUTDOWN_TIMEOUT_MS_MAX),
  };
}

type StoreVars = Pick<
  Config,
  'dataDir' | 'databaseUrl' | 'embeddedPgPort' | 'embeddedPgSharedBuffersMb' | 'migrateOnStart' | 'pgRecoveryBackoffCapMs' | 'mainPgPoolMax'
>;

/** Where the data lives: the data directory, and the PostgreSQL server (given, or embedded in it). */
function storeVars(env: Env, nodeEnv: NodeEnv): StoreVars {
  const migrateDefault = nodeEnv === 'development' ? 'true' : 'false';
  return {
    dataDir: path.resolve(env.DATA_DIR ?? './data'),
    databaseUrl: nonEmpty(env.DATABASE_URL),
    embeddedPgPort: intVar(env, 'EMBEDDED_PG_PORT', 54329, EMBEDDED_PG_PORT_MIN, PORT_MAX),
    embeddedPgSharedBuffersMb: intVar(
      env,
      'EMBEDDED_PG_SHARED_BUFFERS_MB',
      256,
      EMBEDDED_PG_SHARED_BUFFERS_MB_MIN,
      EMBEDDED_PG_SHARED_BUFFERS_MB_MAX,
    ),
    migrateOnStart: enumVar(env, 'MIGRATE_ON_START', ['true', 'false'] as const, migrateDefault) === 'true',
    pgRecoveryBackoffCapMs: intVar(
      env,
      'PG_RECOVERY_BACKOFF_CAP_MS',
      5_000,
      PG_RECOVERY_BACKOFF_CAP_MS_MIN,
      PG_RECOVERY_BACKOFF_CAP_MS_MAX,
    ),
    mainPgPoolMax: intVar(env, 'MAIN_PG_POOL_MAX', 4, PG_POOL_CONNECTIONS_MIN, PG_POOL_CONNECTIONS_MAX),
  };
}

type ThreadVars = Pick<
  Config,
  'coordinators' | 'coordinatorMailboxMax' | 'coordinatorConcurrencyMax' | 'ubsBatchMax' | 'ubsSnapshotEveryRecords' | 'ubsDiskReserveMb'
>;

/** The threads: how many coordinator shards and how much each holds, and UBSCore's batches, snapshots and disk. */
function threadVars(env: Env): ThreadVars {
  return {
    coordinators: intVar(env, 'COORDINATORS', COORDINATORS_DEFAULT, COORDINATORS_MIN, COORDINATORS_MAX),
    coordinatorMailboxMax: intVar(
      env,
      'COORDINATOR_MAILBOX_MAX',
      10_000,
      COORDINATOR_MAILBOX_TRANSFERS_MIN,
      COORDINATOR_MAILBOX_TRANSFERS_MAX,
    ),
    coordinatorConcurrencyMax: intVar(
      env,
      'COORDINATOR_CONCURRENCY_MAX',
      256,
      COORDINATOR_CONCURRENCY_TRANSFERS_MIN,
      COORDINATOR_CONCURRENCY_TRANSFERS_MAX,
    ),
    ubsBatchMax: intVar(env, 'UBS_BATCH_MAX', 4_096, UBS_BATCH_COMMANDS_MIN, UBS_BATCH_COMMANDS_MAX),
    ubsSnapshotEveryRecords: intVar(
      env,
      'UBS_SNAPSHOT_EVERY_RECORDS',
      UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
      UBS_SNAPSHOT_EVERY_RECORDS_MIN,
      UBS_SNAPSHOT_RECORDS_MAX,
    ),
    ubsDiskReserveMb: intVar(env, 'UBS_DISK_RESERVE_MB', 256, UBS_DISK_RESERVE_MB_MIN, UBS_DISK_RESERVE_MB_MAX),
  };
}

/** The coordinator section: timeouts, retries, the recovery scan, its alerts and the daily limits. */
function coordinatorVars(env: Env): CoordinatorSettings {
  return {
    pgPoolMax: intVar(env, 'PG_POOL_MAX', 8, PG_POOL_CONNECTIONS_MIN, PG_POOL_CONNECTIONS_MAX),
    pgTimeouts: {
      statementMs: intVar(env, 'PG_STATEMENT_TIMEOUT_MS', 30_000, PG_STATEMENT_TIMEOUT_MS_MIN, PG_TIMEOUT_MS_MAX),
      lockMs: intVar(env, 'PG_LOCK_TIMEOUT_MS', 5_000, PG_LOCK_TIMEOUT_MS_MIN, PG_TIMEOUT_MS_MAX),
      idleInTransactionMs: intVar(
        env,
        'PG_IDLE_IN_TRANSACTION_TIMEOUT_MS',
        60_000,
        PG_IDLE_IN_TRANSACTION_TIMEOUT_MS_MIN,
        PG_TIMEOUT_MS_MAX,
      ),
    },
    adapterTimeoutMs: intVar(env, 'ADAPTER_TIMEOUT_MS', 5_000, ADAPTER_TIMEOUT_MS_MIN, ADAPTER_TIMEOUT_MS_MAX),
    happyPathDeadlineMs: intVar(env, 'HAPPY_PATH_DEADLINE_MS', 500, HAPPY_PATH_DEADLINE_MS_MIN, HAPPY_PATH_DEADLINE_MS_MAX),
    retryBaseMs: intVar(env, 'RETRY_BASE_MS', 200, RETRY_BASE_MS_MIN, RETRY_BASE_MS_MAX),
    retryCapMs: intVar(env, 'RETRY_CAP_MS', 30_000, RETRY_CAP_MS_MIN, RETRY_CAP_MS_MAX),
    scanIntervalMs: intVar(env, 'SCAN_INTERVAL_MS', 5_000, SCAN_INTERVAL_MS_MIN, SCAN_INTERVAL_MS_MAX),
    staleThresholdMs: intVar(env, 'STALE_THRESHOLD_MS', 60_000, STALE_THRESHOLD_MS_MIN, STALE_THRESHOLD_MS_MAX),
    scanConcurrencyMax: intVar(env, 'SCAN_CONCURRENCY_MAX', 1_000, SCAN_CONCURRENCY_TRANSFERS_MIN, SCAN_CONCURRENCY_TRANSFERS_MAX),
    pgBatchMax: intVar(env, 'PG_BATCH_MAX', PG_BATCH_MAX_DEFAULT, PG_BATCH_ROWS_MIN, PG_BATCH_ROWS_MAX),
    targetPendingAlertMs: intVar(env, 'TARGET_PENDING_ALERT_MS', 60_000, TARGET_PENDING_ALERT_MS_MIN, TARGET_PENDING_ALERT_MS_MAX),
    refundFailuresAlertMax: intVar(env, 'REFUND_FAILURES_ALERT', 3, REFUND_FAILURES_ALERT_MIN, REFUND_FAILURES_ALERT_MAX),
    stuckRetriesMax: intVar(env, 'STUCK_RETRIES', 10, STUCK_RETRIES_MIN, STUCK_RETRIES_MAX),
    stuckAgeMs: intVar(env, 'STUCK_AGE_MS', 300_000, STUCK_AGE_MS_MIN, STUCK_AGE_MS_MAX),
    alertWebhookUrl: urlVar(env, 'ALERT_WEBHOOK_URL'),
    dailyTransferLimit: intVar(env, 'DAILY_TRANSFER_LIMIT', 100, DAILY_TRANSFER_LIMIT_MIN, DAILY_TRANSFER_LIMIT_MAX),
    dailyAmountLimits: enumVar(env, 'DAILY_AMOUNT_LIMITS', ['on', 'off'] as const, 'on') === 'on',
    crashPoint: crashPointVar(env),
  };
}

/** What watches the service: the conservation check, the frequency watch and spec 002's alert table. */
function watchVars(env: Env): Pick<Config, 'invariantIntervalMs' | 'abnormalTransfersPerMinute' | 'alertRules'> {
  const count = (name: string, fallback: number) => intVar(env, name, fallback, ALERT_COUNT_THRESHOLD_MIN, ALERT_COUNT_THRESHOLD_MAX);
  return {
    invariantIntervalMs: intVar(env, 'INVARIANT_INTERVAL_MS', 60_000, INVARIANT_INTERVAL_MS_MIN, INVARIANT_INTERVAL_MS_MAX),
    abnormalTransfersPerMinute: intVar(
      env,
      'ABNORMAL_TRANSFERS_PER_MINUTE',
      60,
      ABNORMAL_TRANSFERS_PER_MINUTE_MIN,
      ABNORMAL_TRANSFERS_PER_MINUTE_MAX,
    ),
    alertRules: {
      // Spec 002 §9.1 processes pending tasks every 30 s.
      evalIntervalMs: intVar(env, 'ALERT_EVAL_INTERVAL_MS', 30_000, ALERT_EVAL_INTERVAL_MS_MIN, ALERT_EVAL_INTERVAL_MS_MAX),
      backlogMax: count('ALERT_BACKLOG_MAX', 100),
      retryingMax: count('ALERT_RETRYING_MAX', 10),
      deadLettersMax: count('ALERT_DEAD_LETTERS_MAX', 0),
      failureRatePercent: intVar(env, 'ALERT_FAILURE_RATE_PERCENT', 10, ALERT_FAILURE_RATE_PERCENT_MIN, ALERT_FAILURE_RATE_PERCENT_MAX),
      failureWindowMs: intVar(env, 'ALERT_FAILURE_WINDOW_MS', 300_000, ALERT_FAILURE_WINDOW_MS_MIN, ALERT_FAILURE_WINDOW_MS_MAX),
      avgRetriesMax: intVar(env, 'ALERT_AVG_RETRIES_MAX', 2, ALERT_AVG_RETRIES_THRESHOLD_MIN, ALERT_AVG_RETRIES_THRESHOLD_MAX),
    },
  };
}

/**
 * Coordinator shards by default. Measured on 2 CPUs: one shard makes batches twice as big as two
 * do (less PostgreSQL and service CPU per transfer, more transfers/s at every connection level,
 * a lower p99 at a fixed rate). Its one thread also does all of the recovery scan's work, which
 * stays inside spec 004's 15 s for 100,000 stuck transfers (11-13 s) with PG_BATCH_MAX at 250
 * and the index plans of migration 0007; with 500 rows a batch and before 0007 it took 14-16 s.
 */
const COORDINATORS_DEFAULT = 1;
/**
 * Rows per batched statement by default. The recovery scan's batches are the big ones: at 250
 * rows two of them in flight keep PostgreSQL and the coordinator busy at once, where 500 made one
 * wait for the other (100,000 stuck transfers: 11-12 s against 13-14 s, one shard). The HTTP
 * path's batches stay far below either.
 */
export const PG_BATCH_MAX_DEFAULT = 250;
