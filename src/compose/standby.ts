// ROLE=standby: the first half of a standby's start. It holds its DATA_DIR, but not the
// ownership; it serves nothing (a small listener answers /healthz 200 and /readyz 503 with its lag,
// /metrics with its role, lag and what PostgreSQL holds of the owner and the SPOT log, every
// other path 503 STANDBY); its UBSCore follows the owner's log in spot_log. Once the
// ownership is this process's (`acquire`), it catches up one last time, UBSCore leads, the small
// listener closes, and the start goes on as a primary's (src/compose/service.ts).

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../config/config.js';
import { OWNER_EPOCH_HEADER } from '../http/middleware/owner-epoch.js';
import { openSql, type Sql } from '../db/sql.js';
import { renderStandbyMetrics } from '../services/ownership-metrics.js';
import { Registry } from '../metrics/registry.js';
import { RetentionTask, type RetentionDeps } from '../ubscore/processed/retention-task.js';
import type { ProcessOwnership } from '../ownership/status.js';
import { SpotLogStore } from '../ubscore/spot-log/store.js';
import { SpotLogTailer, type StandbyLag } from '../ubscore/spot-log/tail.js';
import type { UbsCore } from '../threads.js';
import type { UbsSpotLog } from '../ubscore/control.js';
import { fatal, type Start } from './parts.js';

/**
 * Resolves once this process owns the SPOT ledger (src/ownership: the owner lock taken once it
 * was free or its holder's lease lapsed, and the epoch claimed): with where UBSCore's log goes
 * from now on, under that epoch. `trouble`: the wait could not reach PostgreSQL (why), or can
 * again (null); the wait goes on either way.
 */
export type Acquire = (trouble: (reason: string | null) => void) => Promise<UbsSpotLog | null>;

/** What a standby's /healthz and /readyz say of it: its lag, and why it is degraded (absent when it is not). */
type StandbyView = StandbyLag & { readonly degraded?: string };

type StandbyListener = { readonly port: number; readonly close: () => Promise<void> };

function answer(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

/** A standby's connections: one each, carrying the epoch `standby`, which the fence refuses any write. */
const STANDBY_READER = { max: 1, owner: { tag: `standby-${process.pid}`, epoch: 'standby' as const } };

/** Prometheus's text format, as the primary's GET /metrics answers it. */
const METRICS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

function answerMetrics(res: ServerResponse, metrics: () => Promise<string>): void {
  metrics().then(
    (text) => {
      res.writeHead(200, { 'content-type': METRICS_TYPE, 'cache-control': 'no-store' });
      res.end(text);
    },
    // PostgreSQL away: the scrape fails, as the primary's does, and `up` stays 1 for /healthz.
    (error: unknown) => answer(res, 503, { code: 'SERVICE_UNAVAILABLE', message: `metrics could not be read: ${String(error)}` }),
  );
}

/** The standby's only listener: alive, not ready, its metrics, and every other path refused as the service refuses. */
export function listenStandby(
  config: Pick<Config, 'port' | 'host'>,
  lag: () => StandbyView,
  metrics: () => Promise<string>,
): Promise<StandbyListener> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    // A standby has claimed no epoch: its answers say so, as every answer of the service names one.
    res.setHeader(OWNER_EPOCH_HEADER, 'none');
    const body = { status: 'standby', role: 'standby', ...lag() };
    if (req.method === 'GET' && path === '/healthz') return answer(res, 200, body);
    if (req.method === 'GET' && path === '/readyz') return answer(res, 503, body);
    if (req.method === 'GET' && path === '/metrics') return answerMetrics(res, metrics);
    answer(res, 503, { code: 'STANDBY', message: 'This instance is a standby: it serves nothing until it owns the ledger' });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      const close = (): Promise<void> =>
        new Promise((done) => {
          server.close(() => done());
          server.closeAllConnections();
        });
      resolve({ port: (server.address() as AddressInfo).port, close });
    });
  });
}

/**
 * Starts the standby's UBSCore in follow mode and follows the owner until `acquire` resolves;
 * resolves UBSCore, caught up and leading. `startCore` starts it (and registers its stop).
 */
export async function standBy<Core extends UbsCore>(
  start: Start,
  databaseUrl: string,
  startCore: () => Promise<Core>,
  acquire: Acquire,
): Promise<Core> {
  const { config, log } = start;
  let tailer: SpotLogTailer | null = null;
  const lag = () => tailer?.lag() ?? { lag_records: 0, lag_ms: 0, applied_seq: 0 };
  // A standby writes nothing: its connection carries the epoch `standby`, which the fence refuses.
  const sql: Sql = openSql(databaseUrl, { ...STANDBY_READER, application: 'standby tail', timeouts: config.pgTimeouts });
  let listener: StandbyListener | null = null;
  let retention: RetentionTask | null = null;
  let degraded: string | null = null;
  // The retention reads on a connection of its own, so a pass's snapshot never delays the tail.
  const retentionSql = openSql(databaseUrl, { ...STANDBY_READER, timeouts: config.pgTimeouts, application: 'standby retention' });
  const registry = new Registry();
  const trouble = (reason: string | null): void => {
    if (reason !== null && degraded === null) log.warn('standby degraded: it cannot reach PostgreSQL; it waits on', { reason });
    if (reason === null && degraded !== null) log.info('standby: PostgreSQL answers again');
    degraded = reason;
    registry.set(
      'transfer_standby_degraded',
      'Whether the standby cannot reach PostgreSQL to wait for the ownership, 1 or 0',
      {},
      reason === null ? 0 : 1,
    );
    if (reason !== null)
      registry.inc('transfer_standby_wait_failures_total', 'Tries of the wait for the ownership that PostgreSQL did not answer');
  };
  trouble(null);
  const view = (): StandbyView => (degraded === null ? lag() : { ...lag(), degraded });
  try {
    listener = await listenStandby(config, view, () => renderStandbyMetrics(sql, standbyOwnership(lag()), registry));
    const ubs = await startCore();
    retention = startRetention(start, { sql: retentionSql, ubs: ubs.control, role: 'standby', registry });
    const follower = new SpotLogTailer({
      store: new SpotLogStore(sql),
      follow: (blocks) => ubs.control.follow(blocks),
      appliedSeq: (await ubs.control.stats()).walSeq,
      pollMs: config.standbyPollMs,
      log,
      onBroken: (reason) => fatal(start, `the standby cannot follow the owner log (${reason}); a restart rebuilds its DATA_DIR`),
    });
    tailer = follower;
    follower.start();
    log.info('standby: following the owner log', { applied_seq: follower.lag().applied_seq, poll_ms: config.standbyPollMs });
    const spotLog = await acquire(trouble);
    // The epoch is claimed: a former owner writes nothing more, so what spot_log holds now is all.
    const appliedSeq = await follower.catchUp();
    const led = await ubs.control.lead(spotLog);
    if (led.kind !== 'leading') throw new Error(`the standby's UBSCore did not lead: ${led.reason}`);
    log.info('standby: taking over', { applied_seq: appliedSeq });
    return ubs;
  } finally {
    await retention?.stop();
    await tailer?.stop();
    await listener?.close();
    // The reader connections write nothing (their epoch is `standby`), so the takeover does not
    // wait for them to end: a chaos run saw one of those ends hold the takeover for its whole
    // 5 s timeout (from "taking over" to "coordinators ready" 5.3 s, where 0.3 s is usual). A stop
    // of the process still waits for them.
    const started = performance.now();
    const ending = Promise.all([retentionSql.end({ timeout: 5 }), sql.end({ timeout: 5 })]).then(
      () => log.info('standby: its reader connections ended', { ms: Math.round(performance.now() - started) }),
      (error: unknown) => log.warn('standby: its reader connections did not end cleanly', { error: String(error) }),
    );
    start.stack.push(() => ending);
  }
}

/**
 * The processed set's retention (src/ubscore/processed/retention-task.ts): the owner's on its main pool, a
 * standby's on its read-only connection until it takes over; stopped with the process.
 */
export function startRetention(start: Start, deps: Pick<RetentionDeps, 'sql' | 'ubs' | 'role' | 'registry' | 'gate'>): RetentionTask {
  const { config, log } = start;
  const task = new RetentionTask({ ...deps, retentionS: config.retention.retentionS, log });
  task.start(config.retention.pruneIntervalS);
  start.stack.push(() => task.stop());
  return task;
}

/** A standby's side of the ownership: no epoch, no lease, and how far it is behind the owner's log. */
function standbyOwnership(lag: StandbyLag): ProcessOwnership {
  return {
    role: 'standby',
    promoted: false,
    epoch: null,
    leaseState: null,
    leaseLeftMs: 0,
    lag: { records: lag.lag_records, ms: lag.lag_ms },
  };
}
