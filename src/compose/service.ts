// The composition root: starts every part in dependency order and stops them in reverse.
// PostgreSQL (embedded unless DATABASE_URL), the schema, UBSCore and its WAL replay, the
// coordinator shards, then the HTTP front door last, so nothing is accepted before it can run.

import path from 'node:path';
import { coordinatorSettings, type Config } from '../config/config.js';
import type { Sql } from '../db/sql.js';
import { createApps, type Apps } from '../http/app.js';
import { createTokenVerifier } from '../http/auth/token-setup.js';
import { listenAll } from '../http/listeners.js';
import { Drain } from '../http/drain.js';
import type { Logger } from '../log.js';
import type { UbsHealthEvent, UbsSend, UbsSpotLog } from '../ubscore/control.js';
import type { ServiceThreads, UbsCore } from '../threads.js';
import { unreachable } from '../unreachable.js';
import type { CoordinatorShards } from '../coordinator/shards.js';
import { ExternalMovements } from '../services/external.js';
import { Registry } from '../metrics/registry.js';
import { InvariantService } from '../services/invariant.js';
import { AlertSink } from '../alerts/alerts.js';
import { readUnfinished } from '../alerts/measures.js';
import { AlertMonitor } from '../alerts/monitor.js';
import { WalHealth } from '../services/wal-health.js';
import { ALERT_ROWS_MAX, RETRY_TIMERS_MAX, SCAN_BATCH_MAX, UBS_CLOSE_TIMEOUT_MS } from '../limits.js';
import { within } from '../within.js';
import { appDeps } from './edge.js';
import { fatal, stopNow, type MainParts, type Start, type Stores } from './parts.js';
import { locateStores, ownStores, prepareStandby, promoteStores } from './stores.js';
import { standBy, startRetention } from './standby.js';
import { PlanGate } from '../ubscore/processed/retention-gate.js';
import type { TokenVerifier } from '../http/auth/token-verifier.js';

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

/**
 * Starts every part in dependency order; `threads` starts the parts that run on threads of their
 * own (actors/threads.ts). A failed step stops what the steps before it started. A primary owns
 * the stores, then starts UBSCore; a standby (ROLE=standby) starts UBSCore following the owner's
 * log, and owns the stores once the ownership is free or the owner's lease lapsed. Both then go
 * on alike (startAfterUbs).
 */
export async function startService<Core extends UbsCore>(config: Config, log: Logger, threads: ServiceThreads<Core>): Promise<Service> {
  const stack: (() => Promise<void>)[] = [];
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const undo of stack.reverse()) await undo().catch((e: unknown) => log.error('stop step failed', { error: String(e) }));
  };
  const nowStack: (() => void)[] = [];
  const start: Start = { config, log, stack, nowStack, stopping: () => stopping };
  try {
    // The JWKS first: a set that cannot be read or used stops the start before anything runs.
    const tokens = await createTokenVerifier(config.jwt, log);
    const located = await locateStores(start);
    const walHealth = new WalHealth(log);
    let stores: Stores;
    let ubs: Core;
    if (config.role === 'standby') {
      await prepareStandby(start, located);
      let owned: Stores | null = null;
      const own = async (trouble: (reason: string | null) => void): Promise<UbsSpotLog | null> => {
        owned = await promoteStores(start, located, trouble);
        return spotLogOf(config, owned);
      };
      ubs = await standBy(start, located.databaseUrl, () => startUbs(start, threads, walHealth, { follow: true, spotLog: null }), own);
      if (owned === null) throw new Error('the standby led without owning the stores');
      stores = owned;
    } else {
      stores = await ownStores(start, located);
      ubs = await startUbs(start, threads, walHealth, { follow: false, spotLog: spotLogOf(config, stores) });
    }
    const listening = await startAfterUbs(start, threads, { tokens, stores, ubs, walHealth });
    return { ...listening, stop, stopNow: () => stopNow(nowStack) };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The second half of every start, once UBSCore serves and the stores are owned: shards, main parts, listeners. */
async function startAfterUbs<Core extends UbsCore>(
  start: Start,
  threads: ServiceThreads<Core>,
  parts: { readonly tokens: TokenVerifier; readonly stores: Stores; readonly ubs: Core; readonly walHealth: WalHealth },
): Promise<Omit<Service, 'stop' | 'stopNow'>> {
  const { config, log } = start;
  const { tokens, stores, ubs, walHealth } = parts;
  const alerts = new AlertSink({ sql: stores.sql, log, webhookUrl: config.alertWebhookUrl });
  walHealth.useAlerts(alerts);
  const pools = await startShards(start, threads, ubs, stores);
  const main = await startMainParts(start, stores, ubs, pools, { alerts, walHealth });
  const drain = new Drain();
  const deps = appDeps(start, { tokens, stores, ubs, pools, main, drain });
  const apps = createApps(deps, { separateAdmin: config.adminPort !== null });
  const listeners = await listenAll(apps, config, start.stack, drain, log);
  log.info('service ready', {
    port: listeners.port,
    admin_port: listeners.adminPort,
    coordinators: config.coordinators,
    data_dir: config.dataDir,
    role: config.role,
  });
  return { ...listeners, databaseUrl: stores.databaseUrl, apps };
}

/** UBSCore's own fenced connection for its log and snapshots in PostgreSQL, or null with SPOT_LOG=off. */
function spotLogOf(config: Config, stores: Stores): UbsSpotLog | null {
  if (config.spotLog !== 'postgres') return null;
  return { databaseUrl: stores.databaseUrl, owner: stores.owner.identity(), timeouts: config.pgTimeouts };
}

/** UBSCore, once its snapshot is loaded and its WAL replayed; its exit outside a stop stops the process. */
async function startUbs<Core extends UbsCore>(
  start: Start,
  threads: ServiceThreads<Core>,
  walHealth: WalHealth,
  mode: { readonly follow: boolean; readonly spotLog: UbsSpotLog | null },
): Promise<Core> {
  const { config, log, stack } = start;
  const ubsOptions = {
    follow: mode.follow,
    walDir: path.join(config.dataDir, 'ubscore'),
    batchMax: config.ubsBatchMax,
    snapshotEveryRecords: config.ubsSnapshotEveryRecords,
    diskReserveBytes: config.ubsDiskReserveMb * 1024 * 1024,
    spotLog: mode.spotLog,
    crashPoint: config.crashPoint,
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
    if (!start.stopping()) fatal(start, `UBSCore exited with code ${code}`);
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
    base: coordinatorBase(config, stores),
    mailboxMax: config.coordinatorMailboxMax,
    concurrencyMax: config.coordinatorConcurrencyMax,
    logLevel: config.logLevel,
    logFormat: config.logFormat,
    log,
    onFatal: (error: Error) => {
      if (!start.stopping()) fatal(start, `coordinator thread failed: ${error.stack ?? error.message}`);
    },
  };
  const pools = await threads.startCoordinators(options, ubs);
  start.stack.push(() => pools.stop());
  stores.halt.onChange((halt, only) => pools.haltChanged(halt, only));
  // Stops first (the stack runs last in, first out): no shard is told again once they stop.
  start.stack.push(async () => stores.halt.stop());
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
  const gate = new PlanGate();
  const invariant = new InvariantService({ sql, ubs: ubsSend, halt, alerts, log, registry, gate });
  invariant.start(config.invariantIntervalMs);
  stack.push(async () => invariant.stop());
  const monitor = startAlertMonitor(config, { sql, alerts, registry, log, pools });
  stack.push(async () => monitor.stop());
  startRetention(start, { sql, ubs: ubs.control, role: 'owner', registry, gate });
  return { ubs: mainUbs, ubsSend, alerts, walHealth: health.walHealth, external, registry, invariant, monitor };
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

/** What every shard receives: the configuration's coordinator section, and what only a shard has. */
function coordinatorBase(config: Config, stores: Stores) {
  return {
    ...coordinatorSettings(config),
    databaseUrl: stores.databaseUrl,
    owner: stores.owner.identity(),
    scanBatchMax: SCAN_BATCH_MAX,
    retryTimersMax: RETRY_TIMERS_MAX,
  };
}

/** UBSCore's reports after start: its WAL's health, or why it is about to stop (its exit stops the process). */
function onUbsEvent(event: UbsHealthEvent, walHealth: WalHealth, log: Logger): void {
  switch (event.kind) {
    case 'ubs.degraded':
      walHealth.report({ kind: 'degraded', cause: event.cause, reason: event.reason, since: event.since });
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
