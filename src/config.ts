// Every environment variable the service reads, read here and nowhere else, with safe defaults.
// Limits carry their unit or `_max` in the name and are checked once, at startup.

import path from 'node:path';
import type { PgTimeouts } from './db/sql.js';
import { CRASH_POINTS, isCrashPoint, type CrashPoint } from './faults/crash-points.js';

export type Config = {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  /** Null: start the embedded PostgreSQL server inside dataDir. */
  readonly databaseUrl: string | null;
  readonly embeddedPgPort: number;
  readonly embeddedPgSharedBuffersMb: number;
  readonly jwtSecret: string;
  readonly jwtSecretIsDevDefault: boolean;
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
  readonly pgBatchMax: number;
  readonly targetPendingAlertMs: number;
  readonly refundFailuresAlertMax: number;
  readonly stuckRetriesMax: number;
  readonly stuckAgeMs: number;
  readonly alertWebhookUrl: string | null;
  /** How often the conservation check runs; 0 switches the periodic run off. */
  readonly invariantIntervalMs: number;
  readonly abnormalTransfersPerMinute: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** JSON lines, or readable lines for a terminal; `auto` is pretty when stderr is a terminal. */
  readonly logFormat: 'json' | 'pretty';
};

export const DEV_JWT_SECRET = 'dev-only-secret-change-me-0123456789abcdef';

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? './data');
  const secret = env.JWT_SECRET;
  const config: Config = {
    port: intVar(env, 'PORT', 8080, 0, 65535),
    host: env.HOST ?? '127.0.0.1',
    dataDir,
    databaseUrl: nonEmpty(env.DATABASE_URL),
    embeddedPgPort: intVar(env, 'EMBEDDED_PG_PORT', 54329, 1024, 65535),
    embeddedPgSharedBuffersMb: intVar(env, 'EMBEDDED_PG_SHARED_BUFFERS_MB', 256, 16, 1_048_576),
    jwtSecret: secret ?? DEV_JWT_SECRET,
    jwtSecretIsDevDefault: secret === undefined,
    coordinators: intVar(env, 'COORDINATORS', COORDINATORS_DEFAULT, 1, 64),
    pgPoolMax: intVar(env, 'PG_POOL_MAX', 8, 1, 200),
    shutdownDrainMs: intVar(env, 'SHUTDOWN_DRAIN_MS', 10_000, 0, 600_000),
    shutdownTimeoutMs: intVar(env, 'SHUTDOWN_TIMEOUT_MS', 30_000, 1_000, 3_600_000),
    pgTimeouts: {
      statementMs: intVar(env, 'PG_STATEMENT_TIMEOUT_MS', 30_000, 100, 3_600_000),
      lockMs: intVar(env, 'PG_LOCK_TIMEOUT_MS', 5_000, 10, 3_600_000),
      idleInTransactionMs: intVar(env, 'PG_IDLE_IN_TRANSACTION_TIMEOUT_MS', 60_000, 100, 3_600_000),
    },
    mainPgPoolMax: intVar(env, 'MAIN_PG_POOL_MAX', 4, 1, 200),
    adapterTimeoutMs: intVar(env, 'ADAPTER_TIMEOUT_MS', 5_000, 10, 600_000),
    happyPathDeadlineMs: intVar(env, 'HAPPY_PATH_DEADLINE_MS', 500, 0, 60_000),
    retryBaseMs: intVar(env, 'RETRY_BASE_MS', 200, 1, 600_000),
    retryCapMs: intVar(env, 'RETRY_CAP_MS', 30_000, 1, 3_600_000),
    coordinatorMailboxMax: intVar(env, 'COORDINATOR_MAILBOX_MAX', 10_000, 1, 1_000_000),
    coordinatorConcurrencyMax: intVar(env, 'COORDINATOR_CONCURRENCY_MAX', 256, 1, 10_000),
    ubsBatchMax: intVar(env, 'UBS_BATCH_MAX', 4_096, 1, 100_000),
    ubsSnapshotEveryRecords: intVar(env, 'UBS_SNAPSHOT_EVERY_RECORDS', 100_000, 0, 1_000_000_000),
    ubsDiskReserveMb: intVar(env, 'UBS_DISK_RESERVE_MB', 256, 0, 1_000_000),
    bodyBytesMax: intVar(env, 'BODY_BYTES_MAX', 16 * 1024, 256, 1024 * 1024),
    rateLimitPerSecond: intVar(env, 'RATE_LIMIT_PER_SECOND', 10, 0, 1_000_000),
    dailyTransferLimit: intVar(env, 'DAILY_TRANSFER_LIMIT', 100, 0, 100_000_000),
    dailyAmountLimits: enumVar(env, 'DAILY_AMOUNT_LIMITS', ['on', 'off'] as const, 'on') === 'on',
    crashPoint: crashPointVar(env),
    scanIntervalMs: intVar(env, 'SCAN_INTERVAL_MS', 5_000, 100, 3_600_000),
    staleThresholdMs: intVar(env, 'STALE_THRESHOLD_MS', 60_000, 0, 86_400_000),
    scanConcurrencyMax: intVar(env, 'SCAN_CONCURRENCY_MAX', 1_000, 1, 10_000),
    pgBatchMax: intVar(env, 'PG_BATCH_MAX', 500, 1, 10_000),
    targetPendingAlertMs: intVar(env, 'TARGET_PENDING_ALERT_MS', 60_000, 0, 86_400_000),
    refundFailuresAlertMax: intVar(env, 'REFUND_FAILURES_ALERT', 3, 1, 1_000_000),
    stuckRetriesMax: intVar(env, 'STUCK_RETRIES', 10, 1, 1_000_000),
    stuckAgeMs: intVar(env, 'STUCK_AGE_MS', 300_000, 0, 86_400_000 * 30),
    alertWebhookUrl: urlVar(env, 'ALERT_WEBHOOK_URL'),
    invariantIntervalMs: intVar(env, 'INVARIANT_INTERVAL_MS', 60_000, 0, 86_400_000),
    abnormalTransfersPerMinute: intVar(env, 'ABNORMAL_TRANSFERS_PER_MINUTE', 60, 0, 10_000_000),
    logLevel: enumVar(env, 'LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
    logFormat: logFormatVar(env),
  };
  if (config.retryCapMs < config.retryBaseMs) throw new ConfigError('RETRY_CAP_MS must be >= RETRY_BASE_MS');
  if (config.shutdownTimeoutMs <= config.shutdownDrainMs) throw new ConfigError('SHUTDOWN_TIMEOUT_MS must be greater than SHUTDOWN_DRAIN_MS');
  if (config.jwtSecret.length < 32) throw new ConfigError('JWT_SECRET must be at least 32 characters');
  return config;
}

/**
 * Coordinator shards by default. Measured on 2 CPUs: one shard makes batches twice as big (about
 * a fifth less PostgreSQL CPU per transfer, more transfers/s at 16 connections), but its one
 * thread then does all the recovery scan's work: 100,000 stuck transfers took 14.7 s to finish
 * instead of 11.5 s, against spec 004's 15 s. Two keep recovery well inside it.
 */
const COORDINATORS_DEFAULT = 2;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function crashPointVar(env: Env): CrashPoint | null {
  const raw = nonEmpty(env.CRASH_POINT);
  if (raw === null) return null;
  if (!isCrashPoint(raw)) throw new ConfigError(`CRASH_POINT must be one of ${CRASH_POINTS.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw;
}

function logFormatVar(env: Env): 'json' | 'pretty' {
  const format = enumVar(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'] as const, 'auto');
  if (format !== 'auto') return format;
  return process.stderr.isTTY === true ? 'pretty' : 'json';
}

function urlVar(env: Env, name: string): string | null {
  const raw = nonEmpty(env[name]);
  if (raw === null) return null;
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol)) throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  return raw;
}

function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value.trim() === '' ? null : value;
}

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function enumVar<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}
