// The composition root: starts every part in dependency order and stops them in reverse.
// PostgreSQL (embedded unless DATABASE_URL), the schema, UBSCore and its WAL replay, the
// coordinator shards, then the HTTP front door last, so nothing is accepted before it can run.

import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { serve } from '@hono/node-server';
import { CoordinatorPools } from '../actors/coordinator-pool.js';
import { unreachable } from '../actors/protocol.js';
import { startUbsCore, UbsClient } from '../actors/ubscore-client.js';
import type { UbsHealthEvent } from '../actors/ubscore-client.js';
import type { Config } from './config.js';
import { AssetCache } from './db/assets.js';
import { startEmbeddedPg, type EmbeddedPg } from './db/embedded-pg.js';
import { migrate, seedDemoAssets } from './db/schema.js';
import { openSql, type Sql } from './db/sql.js';
import { TransferStore } from './db/transfers.js';
import { TransferWrites } from './db/transfer-writes.js';
import { createApp } from './http/app.js';
import { Drain } from './http/drain.js';
import type { Logger } from './log.js';
import { AdminService } from './services/admin.js';
import { BalanceReader } from './services/balances.js';
import type { UbsCommand } from './ubscore/types.js';
import { ExternalMovements } from './services/external.js';
import { recordForScan } from './services/overflow.js';
import { collectMetrics } from './metrics/collect.js';
import { Registry } from './metrics/registry.js';
import { HaltSwitch } from './services/halt.js';
import { InvariantService } from './services/invariant.js';
import { lockDataDir } from './ownership/data-dir-lock.js';
import { checkLedgerIdentity } from './ownership/ledger-identity.js';
import { ownDatabase } from './ownership/pg-owner.js';
import { AlertSink } from './alerts/alerts.js';
import { WalHealth } from './services/wal-health.js';

export const DATABASE_NAME = 'transfer';

/** Bounds of the recovery scan and the in-memory retry timers. */
const SCAN_BATCH_MAX = 1_000;
const RETRY_TIMERS_MAX = 100_000;
const UBS_CLOSE_TIMEOUT_MS = 10_000;

export type Service = {
  readonly port: number;
  readonly databaseUrl: string;
  readonly stop: () => Promise<void>;
};

export async function startService(config: Config, log: Logger): Promise<Service> {
  const stack: (() => Promise<void>)[] = [];
  let stopping = false;
  const stop = async (): Promise<void> => {
    stopping = true;
    for (const undo of stack.reverse()) await undo().catch((e: unknown) => log.error('stop step failed', { error: String(e) }));
  };
  try {
    // Rule 7, exactly one owner: DATA_DIR first (before its embedded PostgreSQL is touched), then
    // the database, then the check that both hold the same ledger; only then anything is written.
    const dirLock = await lockDataDir(config.dataDir);
    stack.push(() => dirLock.release());
    const databaseUrl = await database(config, log, stack);
    const owner = await ownDatabase(databaseUrl, (reason) => {
      if (!stopping) fatal(log, reason);
    });
    stack.push(() => owner.release());
    const sql = openSql(databaseUrl, { max: config.mainPgPoolMax, application: 'main', timeouts: config.pgTimeouts });
    stack.push(() => sql.end({ timeout: 5 }));
    const { applied } = await migrate(sql);
    const ledger = await checkLedgerIdentity(sql, path.join(config.dataDir, 'ubscore'));
    await seedDemoAssets(sql);
    log.info('schema ready', { migrations_applied: applied, ledger_id: ledger.id, ledger_created: ledger.created });

    const alerts = new AlertSink({ sql, log, webhookUrl: config.alertWebhookUrl });
    const walHealth = new WalHealth(log);
    walHealth.useAlerts(alerts);
    const ubsOptions = {
      walDir: path.join(config.dataDir, 'ubscore'),
      batchMax: config.ubsBatchMax,
      snapshotEveryRecords: config.ubsSnapshotEveryRecords,
      diskReserveBytes: config.ubsDiskReserveMb * 1024 * 1024,
    };
    const ubs = await startUbsCore(ubsOptions, (event) => onUbsEvent(event, walHealth, log));
    stack.push(async () => {
      // Comlink has no timeout: a dead worker would never answer, so bound the wait.
      const closed = await Promise.race([ubs.control.close(), delay(UBS_CLOSE_TIMEOUT_MS, null, { ref: false })]);
      if (closed === null) log.error('UBSCore did not close in time; terminating it');
      await ubs.worker.terminate();
    });
    log.info('UBSCore ready', {
      snapshot_seq: ubs.ready.snapshotSeq,
      snapshot_load_ms: ubs.ready.snapshotLoadMs,
      replayed_records: ubs.ready.replayedRecords,
      replay_ms: ubs.ready.replayMs,
    });
    ubs.worker.on('exit', (code: number) => {
      if (!stopping) fatal(log, `UBSCore exited with code ${code}`);
    });

    const pools = await CoordinatorPools.start({
      shards: config.coordinators,
      base: coordinatorBase(config, databaseUrl),
      mailboxMax: config.coordinatorMailboxMax,
      concurrencyMax: config.coordinatorConcurrencyMax,
      logLevel: config.logLevel,
      logFormat: config.logFormat,
      connectUbs: () => ubs.connect(),
      log,
      onFatal: (error) => {
        if (!stopping) fatal(log, `coordinator thread failed: ${error.stack ?? error.message}`);
      },
    });
    stack.push(() => pools.stop());

    const mainUbs = new UbsClient(ubs.connect(), {});
    stack.push(async () => mainUbs.close());
    const external = new ExternalMovements({ sql, ubs: (cmd, ms) => mainUbs.send(cmd, ms), ubsTimeoutMs: config.adapterTimeoutMs, log });
    const resumed = await external.resumePending();
    if (resumed > 0) log.info('resumed pending external deposits', { count: resumed });

    const ubsSend = (cmd: UbsCommand, ms: number) => mainUbs.send(cmd, ms);
    const registry = new Registry();
    const assets = new AssetCache(sql);
    const batch = { batchMax: config.pgBatchMax };
    const transfers = new TransferStore(sql, new TransferWrites(sql, batch), batch);
    const halt = await HaltSwitch.load(sql);
    if (halt.current !== null) log.critical('starting HALTED: new transfers are refused until an operator resumes', { reason: halt.current.reason });
    const invariant = new InvariantService({ sql, ubs: ubsSend, halt, alerts, log });
    invariant.start(config.invariantIntervalMs);
    stack.push(async () => invariant.stop());
    const drain = new Drain();
    const app = createApp({
      jwtSecret: config.jwtSecret,
      bodyBytesMax: config.bodyBytesMax,
      rateLimitPerSecond: config.rateLimitPerSecond,
      abnormalTransfersPerMinute: config.abnormalTransfersPerMinute,
      assets,
      admin: new AdminService({ sql, ubs: ubsSend, ubsTimeoutMs: config.adapterTimeoutMs, onAssetChange: () => {
          assets.invalidate();
          return pools.assetsChanged();
        },
      }),
      transfers,
      submit: async (t) => {
        const reply = await pools.submit(t);
        return reply.kind === 'busy' ? recordForScan(t, transfers, log) : reply;
      },
      drive: (userId, reqId) => pools.drive(userId, reqId),
      alerts,
      halt,
      invariant,
      registry,
      metrics: () =>
        collectMetrics({
          main: registry,
          sql,
          shards: () => pools.metrics(),
          ubs: () => Promise.race([ubs.control.stats(), delay(2_000, null, { ref: false })]),
        }),
      probe: async () => {
        const answer = await mainUbs.send({ kind: 'query_op', op: 'DEPOSIT', key: 'readyz' }, 2_000);
        const wal = walHealth.current;
        return {
          postgres: await sql`SELECT 1`.then(() => true, () => false),
          ubscore: answer !== null && answer.kind !== 'unavailable',
          walWritable: wal.writable,
          walReason: wal.writable ? null : wal.reason,
        };
      },
      stuckRetriesMax: config.stuckRetriesMax,
      stuckAgeMs: config.stuckAgeMs,
      external,
      balances: new BalanceReader({ sql, ubs: ubsSend, ubsTimeoutMs: config.adapterTimeoutMs }),
      log,
      isReady: () => true,
      drain,
    });
    const port = await listen(app.fetch, config, stack, drain, log);
    log.info('service ready', { port, coordinators: config.coordinators, data_dir: config.dataDir });
    return { port, databaseUrl, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function database(config: Config, log: Logger, stack: (() => Promise<void>)[]): Promise<string> {
  if (config.databaseUrl !== null) return config.databaseUrl;
  const pg: EmbeddedPg = await startEmbeddedPg({
    dir: path.join(config.dataDir, 'postgres'),
    port: config.embeddedPgPort,
    sharedBuffersMb: config.embeddedPgSharedBuffersMb,
    log: (line) => log.info(line),
  });
  stack.push(() => pg.stop());
  const admin = openSql(pg.url('postgres'), { max: 1, application: 'bootstrap' });
  try {
    const found = await admin`SELECT 1 FROM pg_database WHERE datname = ${DATABASE_NAME}`;
    if (found.length === 0) await admin.unsafe(`CREATE DATABASE ${DATABASE_NAME}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  return pg.url(DATABASE_NAME);
}

function coordinatorBase(config: Config, databaseUrl: string) {
  return {
    databaseUrl,
    pgPoolMax: config.pgPoolMax,
    pgTimeouts: config.pgTimeouts,
    adapterTimeoutMs: config.adapterTimeoutMs,
    happyPathDeadlineMs: config.happyPathDeadlineMs,
    retryBaseMs: config.retryBaseMs,
    retryCapMs: config.retryCapMs,
    scanIntervalMs: config.scanIntervalMs,
    staleThresholdMs: config.staleThresholdMs,
    scanBatchMax: SCAN_BATCH_MAX,
    scanConcurrencyMax: config.scanConcurrencyMax,
    pgBatchMax: config.pgBatchMax,
    targetPendingAlertMs: config.targetPendingAlertMs,
    refundFailuresAlertMax: config.refundFailuresAlertMax,
    stuckRetriesMax: config.stuckRetriesMax,
    stuckAgeMs: config.stuckAgeMs,
    alertWebhookUrl: config.alertWebhookUrl,
    retryTimersMax: RETRY_TIMERS_MAX,
    dailyTransferLimit: config.dailyTransferLimit,
    dailyAmountLimits: config.dailyAmountLimits,
    crashPoint: config.crashPoint,
  };
}

/**
 * Listens, and registers the first step of every stop: new requests are answered 503 while the
 * ones in flight finish, for at most SHUTDOWN_DRAIN_MS; then the listener and every connection
 * close. The listener stays open while draining, so a new connection gets a 503, not a refusal.
 */
function listen(fetch: (req: Request) => Response | Promise<Response>, config: Config, stack: (() => Promise<void>)[], drain: Drain, log: Logger): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port: config.port, hostname: config.host }, (info: AddressInfo) => resolve(info.port));
    server.once('error', reject);
    stack.push(async () => {
      drain.start();
      const idle = await drain.idle(config.shutdownDrainMs);
      if (!idle) log.error('requests still in flight when the drain time ran out: their connections are closed', { in_flight: drain.requestsInFlight, shutdown_drain_ms: config.shutdownDrainMs });
      await new Promise<void>((done) => {
        server.close(() => done());
        if ('closeAllConnections' in server) server.closeAllConnections();
      });
    });
  });
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
