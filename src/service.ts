// The composition root: starts every part in dependency order and stops them in reverse.
// PostgreSQL (embedded unless DATABASE_URL), the schema, UBSCore and its WAL replay, the
// coordinator shards, then the HTTP front door last, so nothing is accepted before it can run.

import path from 'node:path';
import { coordinatorSettings, type Config } from './config/config.js';
import { AssetCache } from './db/assets.js';
import { DATABASE_NAME, ensureDatabase, startEmbeddedPg, type EmbeddedPg } from './db/embedded-pg.js';
import { watchEmbeddedPg, type PgWatch } from './db/embedded-pg-watch.js';
import { checkMigrated, migrate, seedDemoAssets } from './db/schema.js';
import { openSql, type Sql } from './db/sql.js';
import { TransferStore } from './db/transfers.js';
import { TransferWrites } from './db/transfer-writes.js';
import { createApps, type Apps } from './http/app.js';
import { createTokenVerifier } from './http/auth/token-setup.js';
import { listenAll } from './http/listeners.js';
import { Drain } from './http/drain.js';
import type { Logger } from './log.js';
import { AdminService } from './services/admin.js';
import { BalanceReader } from './services/balances.js';
import type { UbsHealthEvent, UbsSend } from './ubscore/control.js';
import type { ServiceThreads, UbsCommandClient, UbsCore } from './threads.js';
import { unreachable } from './unreachable.js';
import type { CoordinatorShards } from './coordinator/shards.js';
import type { AppDeps } from './http/deps.js';
import type { TokenVerifier } from './http/auth/token-verifier.js';
import { ExternalMovements } from './services/external.js';
import { Admission } from './services/admission.js';
import { collectMetrics } from './metrics/collect.js';
import { collectSnapshot } from './metrics/unfinished.js';
import { ubscoreScrape } from './metrics/ubscore-scrape.js';
import { Pulse } from './metrics/pulse.js';
import { Registry } from './metrics/registry.js';
import { HaltSwitch } from './services/halt.js';
import { InvariantService } from './services/invariant.js';
import { lockDataDir } from './ownership/data-dir-lock.js';
import { checkLedgerIdentity } from './ownership/ledger-identity.js';
import { ownDatabase, type PgOwner } from './ownership/pg-owner.js';
import { ALERT_KINDS, AlertSink } from './alerts/alerts.js';
import { readUnfinished } from './alerts/measures.js';
import { AlertMonitor } from './alerts/monitor.js';
import { AuditLog } from './audit/audit-log.js';
import { BackupTaker } from './backup/take.js';
import { WalHealth } from './services/wal-health.js';
import {
  ALERT_ROWS_MAX,
  READYZ_PG_PROBE_TIMEOUT_MS,
  RETRY_TIMERS_MAX,
  SCAN_BATCH_MAX,
  UBS_CLOSE_TIMEOUT_MS,
  UBS_CONTROL_MS_MAX,
} from './limits.js';
import { within } from './within.js';

export type Service = {
  readonly port: number;
  /** Null: the admin routes are on `port` (no ADMIN_PORT). */
  readonly adminPort: number | null;
  readonly databaseUrl: string;
  /** The Hono apps the listeners serve, for route tests that call `app.request(...)` without a socket. */
  readonly apps: Apps;
  readonly stop: () => Promise<void>;
  /**
   * For a process that ends without finishing its stop: synchronously stops what would outlive
   * it (the embedded PostgreSQL, which runs in a session of its own). Never throws.
   */
  readonly stopNow: () => void;
};

/** What every start step shares: the configuration, the log, the stop steps so far, and whether a stop began. */
type Start = {
  readonly config: Config;
  readonly log: Logger;
  readonly stack: (() => Promise<void>)[];
  /** The synchronous steps of Service.stopNow. */
  readonly nowStack: (() => void)[];
  readonly stopping: () => boolean;
};

/** The stores this process owns once started: the database (its URL and pool), the owner lock, the halt. */
type Stores = {
  readonly databaseUrl: string;
  readonly sql: Sql;
  readonly owner: PgOwner;
  readonly halt: HaltSwitch;
};

/** The main thread's own parts, built on the stores, UBSCore and the shards. */
type MainParts = {
  readonly ubs: UbsCommandClient;
  readonly ubsSend: UbsSend;
  readonly alerts: AlertSink;
  readonly walHealth: WalHealth;
  readonly external: ExternalMovements;
  readonly registry: Registry;
  readonly invariant: InvariantService;
  readonly monitor: AlertMonitor;
};

/**
 * Starts every part in dependency order; `threads` starts the parts that run on threads of their
 * own (actors/threads.ts). A failed step stops what the steps before it started.
 */
export async function startService<Core extends UbsCore>(config: Config, log: Logger, threads: ServiceThreads<Core>): Promise<Service> {
  const stack: (() => Promise<void>)[] = [];
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const undo of stack.reverse()) await undo().catch((e: unknown) => log.error('stop step failed', { error: String(e) }));
  };
  const nowStack: (() => void)[] = [];
  const stopNow = (): void => {
    for (const step of nowStack) step();
  };
  const start: Start = { config, log, stack, nowStack, stopping: () => stopping };
  try {
    // The JWKS first: a set that cannot be read or used stops the start before anything runs.
    const tokens = await createTokenVerifier(config.jwt, log);
    const stores = await openStores(start);
    const alerts = new AlertSink({ sql: stores.sql, log, webhookUrl: config.alertWebhookUrl });
    const walHealth = new WalHealth(log);
    walHealth.useAlerts(alerts);
    const ubs = await startUbs(start, threads, walHealth);
    const pools = await startShards(start, threads, ubs, stores);
    const main = await startMainParts(start, stores, ubs, pools, { alerts, walHealth });
    const drain = new Drain();
    const deps = appDeps(start, { tokens, stores, ubs, pools, main, drain });
    const apps = createApps(deps, { separateAdmin: config.adminPort !== null });
    const listeners = await listenAll(apps, config, stack, drain, log);
    log.info('service ready', {
      port: listeners.port,
      admin_port: listeners.adminPort,
      coordinators: config.coordinators,
      data_dir: config.dataDir,
    });
    return { ...listeners, databaseUrl: stores.databaseUrl, apps, stop, stopNow };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Rule 7, exactly one owner: DATA_DIR first (before its embedded PostgreSQL is touched), then the
 * database, then the check that both hold the same ledger; only then anything is written.
 */
async function openStores(start: Start): Promise<Stores> {
  const { config, log, stack } = start;
  const dirLock = await lockDataDir(config.dataDir);
  stack.push(() => dirLock.release());
  const { url: databaseUrl, watch } = await database(config, log, stack, start.nowStack);
  const owner = await ownDatabase(databaseUrl, ownerEvents(log, watch, start.stopping), {
    retakeBackoffCapMs: config.pgRecoveryBackoffCapMs,
  });
  stack.push(() => owner.release());
  const sql = openSql(databaseUrl, { max: config.mainPgPoolMax, application: 'main', timeouts: config.pgTimeouts });
  stack.push(() => sql.end({ timeout: 5 }));
  // Production migrates as its own step (`make migrate`), so a start never changes the schema
  // under a running fleet by surprise: it only checks that none is pending and none was edited.
  let applied = 0;
  if (config.migrateOnStart) applied = (await migrate(sql)).applied;
  else await checkMigrated(sql);
  const ledger = await checkLedgerIdentity(sql, path.join(config.dataDir, 'ubscore'));
  // The demo assets are a development convenience; in production an operator creates assets.
  if (config.nodeEnv === 'development') await seedDemoAssets(sql);
  log.info('schema ready', { migrations_applied: applied, ledger_id: ledger.id, ledger_created: ledger.created });
  const halt = await HaltSwitch.load(sql, log);
  if (halt.current !== null)
    log.critical('starting HALTED: new transfers and external movements are refused until an operator resumes', {
      reason: halt.current.reason,
    });
  return { databaseUrl, sql, owner, halt };
}

/** UBSCore, once its snapshot is loaded and its WAL replayed; its exit outside a stop stops the process. */
async function startUbs<Core extends UbsCore>(start: Start, threads: ServiceThreads<Core>, walHealth: WalHealth): Promise<Core> {
  const { config, log, stack } = start;
  const ubsOptions = {
    walDir: path.join(config.dataDir, 'ubscore'),
    batchMax: config.ubsBatchMax,
    snapshotEveryRecords: config.ubsSnapshotEveryRecords,
    diskReserveBytes: config.ubsDiskReserveMb * 1024 * 1024,
  };
  const ubs = await threads.startUbsCore(ubsOptions, (event) => onUbsEvent(event, walHealth, log));
  stack.push(async () => {
    // Comlink has no timeout: a dead worker would never answer, so bound the wait.
    const closed = await within(ubs.control.close(), UBS_CLOSE_TIMEOUT_MS, null);
    if (closed === null) log.error('UBSCore did not close in time; terminating it');
    await ubs.terminate();
  });
  log.info('UBSCore ready', {
    snapshot_seq: ubs.ready.snapshotSeq,
    snapshot_load_ms: ubs.ready.snapshotLoadMs,
    replayed_records: ubs.ready.replayedRecords,
    replay_ms: ubs.ready.replayMs,
  });
  ubs.onExit((code) => {
    if (!start.stopping()) fatal(log, `UBSCore exited with code ${code}`);
  });
  return ubs;
}

/** The coordinator shards, each connected to UBSCore; a halt reaches them as it changes. */
async function startShards<Core extends UbsCore>(
  start: Start,
  threads: ServiceThreads<Core>,
  ubs: Core,
  stores: Stores,
): Promise<CoordinatorShards> {
  const { config, log } = start;
  const options = {
    shards: config.coordinators,
    base: coordinatorBase(config, stores.databaseUrl),
    mailboxMax: config.coordinatorMailboxMax,
    concurrencyMax: config.coordinatorConcurrencyMax,
    logLevel: config.logLevel,
    logFormat: config.logFormat,
    log,
    onFatal: (error: Error) => {
      if (!start.stopping()) fatal(log, `coordinator thread failed: ${error.stack ?? error.message}`);
    },
  };
  const pools = await threads.startCoordinators(options, ubs);
  start.stack.push(() => pools.stop());
  stores.halt.onChange((state) => pools.haltChanged(state));
  return pools;
}

/** The main thread's client of UBSCore, the external movements (resumed), the conservation check and the alert table. */
async function startMainParts(
  start: Start,
  stores: Stores,
  ubs: UbsCore,
  pools: CoordinatorShards,
  health: { readonly alerts: AlertSink; readonly walHealth: WalHealth },
): Promise<MainParts> {
  const { config, log, stack } = start;
  const { sql, halt } = stores;
  const { alerts } = health;
  const mainUbs = ubs.openClient();
  stack.push(async () => mainUbs.close());
  const ubsSend: UbsSend = (cmd, ms) => mainUbs.send(cmd, ms);
  const external = new ExternalMovements({ sql, ubs: ubsSend, ubsTimeoutMs: config.adapterTimeoutMs, log, halt });
  const resumed = await external.resumePending();
  if (resumed > 0) log.info('resumed pending external deposits', { count: resumed });
  const registry = new Registry({ runtime: { processWide: true } });
  const invariant = new InvariantService({ sql, ubs: ubsSend, halt, alerts, log, registry });
  invariant.start(config.invariantIntervalMs);
  stack.push(async () => invariant.stop());
  const monitor = startAlertMonitor(config, { sql, alerts, registry, log, pools });
  stack.push(async () => monitor.stop());
  return { ubs: mainUbs, ubsSend, alerts, walHealth: health.walHealth, external, registry, invariant, monitor };
}

type Built = {
  readonly tokens: TokenVerifier;
  readonly stores: Stores;
  readonly ubs: UbsCore;
  readonly pools: CoordinatorShards;
  readonly main: MainParts;
  readonly drain: Drain;
};

/** What the HTTP edge is given (src/http/deps.ts). */
function appDeps(start: Start, built: Built): AppDeps {
  const { config, log } = start;
  const { stores, pools, main } = built;
  const { sql, halt } = stores;
  const assets = new AssetCache(sql);
  const batch = { batchMax: config.pgBatchMax };
  const transfers = new TransferStore(sql, new TransferWrites(sql, batch), batch);
  const admission = new Admission({ halt, shards: pools, transfers, log });
  const ubsStats = () => within(built.ubs.control.stats(), UBS_CONTROL_MS_MAX, null);
  const backups = new BackupTaker({ databaseUrl: stores.databaseUrl, control: built.ubs.control, log });
  return {
    tokens: built.tokens,
    bodyBytesMax: config.bodyBytesMax,
    rateLimitPerSecond: config.rateLimitPerSecond,
    abnormalTransfersPerMinute: config.abnormalTransfersPerMinute,
    assets,
    admin: new AdminService({
      sql,
      ubs: main.ubsSend,
      ubsTimeoutMs: config.adapterTimeoutMs,
      onAssetChange: () => {
        assets.invalidate();
        return pools.assetsChanged();
      },
    }),
    transfers,
    // Every new transfer is admitted here; each shard checks the halt again on its own.
    submit: (t) => admission.submit(t),
    drive: (userId, reqId) => pools.drive(userId, reqId),
    alerts: main.alerts,
    monitor: main.monitor,
    audit: new AuditLog(sql),
    halt,
    invariant: main.invariant,
    registry: main.registry,
    metrics: renderMetrics(built),
    pulse: new Pulse(),
    snapshot: () => collectSnapshot({ sql, ubs: ubsStats }),
    probe: readinessProbe(sql, main),
    stuckRetriesMax: config.stuckRetriesMax,
    stuckAgeMs: config.stuckAgeMs,
    external: main.external,
    balances: new BalanceReader({ sql, ubs: main.ubsSend, ubsTimeoutMs: config.adapterTimeoutMs }),
    log,
    isReady: () => true,
    ownerHeld: () => stores.owner.held(),
    drain: built.drain,
    backup: (dir) => backups.take(dir),
  };
}

/** GET /metrics: the main thread's registry, PostgreSQL's measures, every shard's and UBSCore's. */
function renderMetrics(built: Built): AppDeps['metrics'] {
  const { stores, pools, main } = built;
  const ubsMetrics = ubscoreScrape(() => within(built.ubs.control.metrics(), UBS_CONTROL_MS_MAX, null));
  return () => {
    // The reason is in /readyz and the log, never a label: a label per reason is a new series.
    main.registry.set(
      'transfer_service_halted',
      'Whether the service is halted (1): new transfers and external movements refused until an operator resumes',
      {},
      stores.halt.current === null ? 0 : 1,
    );
    return collectMetrics({
      main: main.registry,
      sql: stores.sql,
      shards: () => pools.metrics(),
      ubs: ubsMetrics,
      alertKinds: Object.keys(ALERT_KINDS),
    });
  };
}

/** /readyz's probe: PostgreSQL answers, UBSCore answers, and its WAL takes writes. */
function readinessProbe(sql: Sql, main: MainParts): AppDeps['probe'] {
  return async () => {
    const answer = await main.ubs.send({ kind: 'query_op', op: 'DEPOSIT', key: 'readyz' }, UBS_CONTROL_MS_MAX);
    const wal = main.walHealth.current;
    return {
      // Bounded: /readyz must answer 503 at once while the server is away, not wait for it.
      postgres: await within(
        sql`SELECT 1`.then(
          () => true,
          () => false,
        ),
        READYZ_PG_PROBE_TIMEOUT_MS,
        false,
      ),
      ubscore: answer !== null && answer.kind !== 'unavailable',
      walWritable: wal.writable,
      walReason: wal.writable ? null : wal.reason,
    };
  };
}

function startAlertMonitor(
  config: Config,
  deps: { sql: Sql; alerts: AlertSink; registry: Registry; log: Logger; pools: CoordinatorShards },
): AlertMonitor {
  const { alertRules: r } = config;
  const monitor = new AlertMonitor({
    sql: deps.sql,
    alerts: deps.alerts,
    registry: deps.registry,
    log: deps.log,
    thresholds: r,
    failureWindowMs: r.failureWindowMs,
    unfinished: () =>
      readUnfinished(deps.sql, { stuckRetriesMax: config.stuckRetriesMax, stuckAgeMs: config.stuckAgeMs, rowsMax: ALERT_ROWS_MAX }),
    finishedCounts: () => deps.pools.finishedCounts(),
  });
  monitor.start(r.evalIntervalMs);
  return monitor;
}

/**
 * The database's URL: DATABASE_URL's server, or the embedded one, started here and watched (a
 * postmaster that dies is started again; `watch` is null with DATABASE_URL, whose server is
 * someone else's to restart: the pools and the owner lock reconnect once it answers).
 */
async function database(
  config: Config,
  log: Logger,
  stack: (() => Promise<void>)[],
  nowStack: (() => void)[],
): Promise<{ readonly url: string; readonly watch: PgWatch | null }> {
  if (config.databaseUrl !== null) return { url: config.databaseUrl, watch: null };
  const pg: EmbeddedPg = await startEmbeddedPg({
    dir: path.join(config.dataDir, 'postgres'),
    port: config.embeddedPgPort,
    sharedBuffersMb: config.embeddedPgSharedBuffersMb,
    log: (line) => log.info(line),
  });
  stack.push(() => pg.stop());
  nowStack.push(() => pg.stopNow());
  const url = await ensureDatabase(pg, DATABASE_NAME);
  // Undone before pg.stop(): a stop on purpose never looks like a crash to restart from.
  const watch = watchEmbeddedPg(pg, {
    backoffCapMs: config.pgRecoveryBackoffCapMs,
    onDown: () => log.critical('the embedded PostgreSQL died: restarting it; transfers wait and are retried'),
    onUp: (attempts) => log.info('the embedded PostgreSQL was restarted', { attempts }),
    log,
  });
  stack.push(() => watch.stop());
  return { url, watch };
}

/**
 * Rule 7 while the database comes and goes: a closed owner connection stops new work (the HTTP
 * owner gate, /readyz) until the lock is taken again; a lock another process took meanwhile
 * stops this one. A closed connection is also the event that tells the watcher to look now.
 */
function ownerEvents(log: Logger, watch: PgWatch | null, stopping: () => boolean) {
  return {
    onLost: (reason: string) => {
      if (stopping()) return;
      log.critical('owner lock lost: not taking new work until it is taken again', { reason });
      watch?.check();
    },
    onRegained: (attempts: number) => log.info('owner lock taken again: taking new work', { attempts }),
    onTakenByOther: (holder: string) => {
      if (!stopping())
        fatal(
          log,
          `another process took the owner lock while this one had lost it: ${holder}. Two processes on one database would split the SPOT ledger`,
        );
    },
    log,
  };
}

/** What every shard receives: the configuration's coordinator section, and what only a shard has. */
function coordinatorBase(config: Config, databaseUrl: string) {
  return { ...coordinatorSettings(config), databaseUrl, scanBatchMax: SCAN_BATCH_MAX, retryTimersMax: RETRY_TIMERS_MAX };
}

/** UBSCore's reports after start: its WAL's health, or why it is about to stop (its exit stops the process). */
function onUbsEvent(event: UbsHealthEvent, walHealth: WalHealth, log: Logger): void {
  switch (event.kind) {
    case 'ubs.degraded':
      walHealth.report({ kind: 'degraded', reason: event.reason, since: event.since });
      break;
    case 'ubs.recovered':
      walHealth.report({ kind: 'recovered', since: event.since, degradedMs: event.degradedMs, attempts: event.attempts });
      break;
    case 'ubs.fatal':
      log.critical('UBSCore stops', { reason: event.message });
      break;
    default:
      unreachable(event);
  }
}

/** A part that cannot go on safely stops the process; restart recovers from the stores. */
function fatal(log: Logger, message: string): never {
  log.critical('fatal: stopping the process', { reason: message });
  process.exit(70);
}
