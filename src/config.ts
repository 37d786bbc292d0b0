// Every environment variable the service reads, read here and nowhere else, with safe defaults.
// Limits carry their unit or `_max` in the name and are checked once, at startup.

import path from 'node:path';
import type { PgTimeouts } from './db/sql.js';
import { CRASH_POINTS, isCrashPoint, type CrashPoint } from './faults/crash-points.js';
import type { JwksLocation } from './http/jwks-source.js';

/** `development` (the default: `make run`, tests) or `production` (secure defaults enforced). */
export type NodeEnv = 'development' | 'production';

export type JwtConfig = {
  /** Null: HS256 tokens are refused (production with a JWKS and no JWT_SECRET). */
  readonly hs256Secret: string | null;
  /** True only in development with JWT_SECRET unset: the secret is public, in this repository. */
  readonly hs256SecretIsDevDefault: boolean;
  /** Null: RS256, ES256 and EdDSA tokens are refused. */
  readonly jwks: JwksLocation | null;
  readonly issuer: string | null;
  readonly audience: string | null;
  /** At most one JWKS reload per this, however many unknown kids arrive. */
  readonly jwksCooldownMs: number;
  /** A key set older than this is reloaded at its next use. */
  readonly jwksMaxAgeMs: number;
  /** A JWKS URL fetch unanswered after this fails. */
  readonly jwksTimeoutMs: number;
};

export type Config = {
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

export const DEV_JWT_SECRET = 'dev-only-secret-change-me-0123456789abcdef';

type Env = Readonly<Record<string, string | undefined>>;

export function loadConfig(env: Env = process.env): Config {
  const dataDir = path.resolve(env.DATA_DIR ?? './data');
  const nodeEnv = enumVar(env, 'NODE_ENV', ['development', 'production'] as const, 'development');
  const config: Config = {
    port: intVar(env, 'PORT', 8080, 0, 65535),
    host: env.HOST ?? '127.0.0.1',
    dataDir,
    databaseUrl: nonEmpty(env.DATABASE_URL),
    embeddedPgPort: intVar(env, 'EMBEDDED_PG_PORT', 54329, 1024, 65535),
    embeddedPgSharedBuffersMb: intVar(env, 'EMBEDDED_PG_SHARED_BUFFERS_MB', 256, 16, 1_048_576),
    nodeEnv,
    jwt: jwtConfig(env, nodeEnv),
    adminPort: env.ADMIN_PORT === undefined || env.ADMIN_PORT === '' ? null : intVar(env, 'ADMIN_PORT', 0, 0, 65535),
    adminHost: env.ADMIN_HOST ?? '127.0.0.1',
    printBanner: bannerVar(env, nodeEnv),
    migrateOnStart: enumVar(env, 'MIGRATE_ON_START', ['true', 'false'] as const, nodeEnv === 'development' ? 'true' : 'false') === 'true',
    pgRecoveryBackoffCapMs: intVar(env, 'PG_RECOVERY_BACKOFF_CAP_MS', 5_000, 250, 600_000),
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
    alertRules: {
      // Spec 002 §9.1 processes pending tasks every 30 s.
      evalIntervalMs: intVar(env, 'ALERT_EVAL_INTERVAL_MS', 30_000, 100, 3_600_000),
      backlogMax: intVar(env, 'ALERT_BACKLOG_MAX', 100, 0, 100_000_000),
      retryingMax: intVar(env, 'ALERT_RETRYING_MAX', 10, 0, 100_000_000),
      deadLettersMax: intVar(env, 'ALERT_DEAD_LETTERS_MAX', 0, 0, 100_000_000),
      failureRatePercent: intVar(env, 'ALERT_FAILURE_RATE_PERCENT', 10, 0, 100),
      failureWindowMs: intVar(env, 'ALERT_FAILURE_WINDOW_MS', 300_000, 1_000, 86_400_000),
      avgRetriesMax: intVar(env, 'ALERT_AVG_RETRIES_MAX', 2, 0, 1_000_000),
    },
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

/** What `make backup` and `make restore` read on top of the service's own variables. */
export type BackupConfig = {
  /** Absolute: the service writes it on its own host, maybe from another working directory. */
  readonly backupDir: string;
  /** The running service `make backup` asks; by default the one HOST and PORT name. */
  readonly serviceUrl: string;
  /** A token with the admin role; null: one is signed with JWT_SECRET. */
  readonly adminToken: string | null;
  /** Whether DATA_DIR was given: a restore never falls back to the default ./data. */
  readonly dataDirGiven: boolean;
};

export function loadBackupConfig(env: Env = process.env): BackupConfig {
  const dir = nonEmpty(env.BACKUP_DIR);
  if (dir === null) throw new ConfigError('BACKUP_DIR is required: the directory to write the backup to, or to restore it from');
  const port = intVar(env, 'PORT', 8080, 1, 65535);
  return {
    backupDir: path.resolve(dir),
    serviceUrl: urlVar(env, 'SERVICE_URL') ?? `http://${env.HOST ?? '127.0.0.1'}:${port}`,
    adminToken: nonEmpty(env.ADMIN_TOKEN),
    dataDirGiven: nonEmpty(env.DATA_DIR) !== null,
  };
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

/** The banner prints development tokens: on by default in development, never in production. */
function bannerVar(env: Env, nodeEnv: NodeEnv): boolean {
  const raw = enumVar(env, 'PRINT_BANNER', ['0', '1'] as const, nodeEnv === 'development' ? '1' : '0');
  if (raw === '1' && nodeEnv === 'production')
    throw new ConfigError('PRINT_BANNER=1 prints development tokens: development only, not with NODE_ENV=production');
  return raw === '1';
}

/** The shortest HS256 secret accepted, in bytes (RFC 7518 §3.2: at least the hash's 256 bits). */
export const JWT_SECRET_BYTES_MIN = 32;

/**
 * Which tokens are accepted. Development: JWT_SECRET defaults to the public development secret.
 * Production: no default; JWT_SECRET (never the development one) or a JWKS is required, and with
 * a JWKS and no JWT_SECRET, HS256 tokens are refused.
 */
function jwtConfig(env: Env, nodeEnv: NodeEnv): JwtConfig {
  const file = nonEmpty(env.JWT_JWKS_FILE);
  const url = nonEmpty(env.JWT_JWKS_URL);
  if (file !== null && url !== null) throw new ConfigError('set JWT_JWKS_FILE or JWT_JWKS_URL, not both');
  const jwks: JwksLocation | null =
    file !== null ? { kind: 'file', path: path.resolve(file) } : url !== null ? { kind: 'url', url: jwksUrl(url, nodeEnv) } : null;
  const secret = env.JWT_SECRET;
  if (secret !== undefined && Buffer.byteLength(secret, 'utf8') < JWT_SECRET_BYTES_MIN)
    throw new ConfigError(`JWT_SECRET must be at least ${JWT_SECRET_BYTES_MIN} bytes`);
  if (nodeEnv === 'production') {
    if (secret === undefined && jwks === null)
      throw new ConfigError(
        `NODE_ENV=production needs JWT_SECRET (at least ${JWT_SECRET_BYTES_MIN} bytes) or JWT_JWKS_FILE / JWT_JWKS_URL; there is no default secret in production`,
      );
    if (secret === DEV_JWT_SECRET) throw new ConfigError('JWT_SECRET is the public development secret: never in production');
  }
  const devDefault = secret === undefined && nodeEnv === 'development';
  return {
    hs256Secret: secret ?? (devDefault ? DEV_JWT_SECRET : null),
    hs256SecretIsDevDefault: devDefault,
    jwks,
    issuer: nonEmpty(env.JWT_ISSUER),
    audience: nonEmpty(env.JWT_AUDIENCE),
    jwksCooldownMs: intVar(env, 'JWT_JWKS_COOLDOWN_MS', 30_000, 100, 3_600_000),
    jwksMaxAgeMs: intVar(env, 'JWT_JWKS_MAX_AGE_MS', 300_000, 1_000, 86_400_000),
    jwksTimeoutMs: intVar(env, 'JWT_JWKS_TIMEOUT_MS', 5_000, 100, 60_000),
  };
}

/** An http(s) URL; in production https, or http only to this machine (a local sidecar). */
function jwksUrl(raw: string, nodeEnv: NodeEnv): string {
  if (!URL.canParse(raw)) throw new ConfigError(`JWT_JWKS_URL must be a URL, got ${JSON.stringify(raw)}`);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ConfigError(`JWT_JWKS_URL must be http(s), got ${JSON.stringify(raw)}`);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (nodeEnv === 'production' && url.protocol === 'http:' && !loopback)
    throw new ConfigError('JWT_JWKS_URL must be https in production (http only to 127.0.0.1, localhost or [::1])');
  return raw;
}

function crashPointVar(env: Env): CrashPoint | null {
  const raw = nonEmpty(env.CRASH_POINT);
  if (raw === null) return null;
  if (!isCrashPoint(raw)) throw new ConfigError(`CRASH_POINT must be one of ${CRASH_POINTS.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw;
}

/** Readable lines (pino-pretty) are a development convenience: production writes JSON only. */
function logFormatVar(env: Env, nodeEnv: NodeEnv): 'json' | 'pretty' {
  const format = enumVar(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'] as const, 'auto');
  if (format === 'pretty' && nodeEnv === 'production')
    throw new ConfigError('LOG_FORMAT=pretty is for development: production writes JSON lines (LOG_FORMAT=json or auto)');
  if (format !== 'auto') return format;
  return nodeEnv === 'development' && process.stderr.isTTY === true ? 'pretty' : 'json';
}

function urlVar(env: Env, name: string): string | null {
  const raw = nonEmpty(env[name]);
  if (raw === null) return null;
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol))
    throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
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
