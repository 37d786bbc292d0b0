// Thread entry of one coordinator shard, run as the single thread of a piscina pool. Each task
// is one message of the protocol (new transfers come in batches), answered with a value. The
// shard's own timers and recovery scan run between tasks (atomics disabled).

import type { MessagePort } from 'node:worker_threads';
import { workerData } from 'piscina';
import { composeShard } from '../src/coordinator/compose.js';
import type { HaltFlag } from '../src/coordinator/halt-flag.js';
import type { Shard } from '../src/coordinator/shard.js';
import type { AssetCache } from '../src/db/assets.js';
import type { DailyLimits } from '../src/coordinator/daily-limits.js';
import { openSql, type Sql } from '../src/db/sql.js';
import { createLogger } from '../src/log.js';
import type { Registry } from '../src/metrics/registry.js';
import type { NewTransfer } from '../src/coordinator/types.js';
import { unreachable, type CoordinatorResult, type CoordinatorTask, type CoordinatorWorkerData, type SubmitAnswer } from './protocol.js';
import { UbsClient } from './ubscore-client.js';
import { SUBMIT_BATCH_MAX } from '../src/limits.js';

const { config, logLevel, logFormat } = workerData as CoordinatorWorkerData;
const log = createLogger({ level: logLevel, format: logFormat, name: `coordinator-${config.shard}` });

type Running = {
  readonly shard: Shard;
  readonly sql: Sql;
  readonly ubs: UbsClient;
  readonly assets: AssetCache;
  readonly limits: DailyLimits;
  readonly metrics: Registry;
  readonly halt: HaltFlag;
  /** Re-reads the stored halt, for a control message this thread missed. */
  readonly haltTimer: NodeJS.Timeout;
};
let running: Running | null = null;

export default async function coordinatorTask(task: CoordinatorTask): Promise<CoordinatorResult> {
  try {
    return await handle(task);
  } catch (error) {
    log.error('coordinator task failed', { task: task.kind, error: error instanceof Error ? error.stack : String(error) });
    return { kind: 'coord.error', message: error instanceof Error ? error.message : String(error) };
  }
}

async function handle(task: CoordinatorTask): Promise<CoordinatorResult> {
  switch (task.kind) {
    case 'coord.init':
      return init(task.ubsPort);
    case 'coord.submit_many':
      return submitMany(task.transfers);
    case 'coord.drive': {
      const view = await shardOf().driveNow(task.reqId);
      return view === null ? { kind: 'coord.not_found' } : { kind: 'coord.transfer', view };
    }
    case 'coord.metrics':
      return await metricsOf(runningOf());
    case 'coord.halt':
      runningOf().halt.set(task.state);
      log.warn(task.state === null ? 'service resumed: new transfers accepted' : 'service halted: new transfers refused', {
        shard: config.shard,
        reason: task.state?.reason ?? null,
      });
      return { kind: 'coord.done' };
    case 'coord.assets_changed':
      runningOf().assets.invalidate();
      // An asset's daily amount limit may have changed: every tally is reloaded when next needed.
      runningOf().limits.reset();
      return { kind: 'coord.done' };
    case 'coord.stop':
      return stop();
    default:
      return unreachable(task);
  }
}

/**
 * Submits every transfer of the batch at once, so they share the shard's batched statements, and
 * answers each in its place. One transfer's exception is that transfer's error, not the batch's.
 */
async function submitMany(transfers: readonly NewTransfer[]): Promise<CoordinatorResult> {
  if (transfers.length === 0 || transfers.length > SUBMIT_BATCH_MAX)
    return { kind: 'coord.error', message: `a submit batch holds 1 to ${SUBMIT_BATCH_MAX} transfers, got ${transfers.length}` };
  const shard = shardOf();
  const answers = await Promise.all(
    transfers.map(
      (t): Promise<SubmitAnswer> =>
        shard.submit(t).catch((error: unknown) => {
          log.error('coordinator submit failed', { req_id: t.reqId, error: error instanceof Error ? error.stack : String(error) });
          return { kind: 'error', message: error instanceof Error ? error.message : String(error) };
        }),
    ),
  );
  return { kind: 'coord.submitted', answers };
}

async function init(port: MessagePort): Promise<CoordinatorResult> {
  if (running !== null) return { kind: 'coord.error', message: 'already initialised' };
  const sql = openSql(config.databaseUrl, {
    max: config.pgPoolMax,
    application: `coordinator-${config.shard}`,
    timeouts: config.pgTimeouts,
  });
  const ubs = new UbsClient(port, {});
  const { shard, assets, limits, metrics, halt } = composeShard({ sql, ubs: (cmd, ms) => ubs.send(cmd, ms), config, log });
  // The stored halt is read before the first transfer is taken: a start while halted refuses.
  await halt.refresh(sql);
  const haltTimer = setInterval(() => {
    halt.refresh(sql).catch((error: unknown) => log.error('could not re-read the stored halt', { error: String(error) }));
  }, config.scanIntervalMs);
  haltTimer.unref();
  shard.start();
  running = { shard, sql, ubs, assets, limits, metrics, halt, haltTimer };
  return { kind: 'coord.ready' };
}

/** The shard's registry as values (its `shard` label set by compose), plus whether this thread refuses new transfers now (MON-003). */
async function metricsOf(r: Running): Promise<CoordinatorResult> {
  r.metrics.set(
    'transfer_coordinator_halted',
    'Whether this coordinator shard refuses new transfers because the service is halted (1) or not (0)',
    {},
    r.halt.current === null ? 0 : 1,
  );
  return { kind: 'coord.metrics', families: await r.metrics.json() };
}

async function stop(): Promise<CoordinatorResult> {
  if (running === null) return { kind: 'coord.stopped' };
  const { shard, sql, ubs, haltTimer } = running;
  running = null;
  clearInterval(haltTimer);
  await shard.stop();
  ubs.close();
  await sql.end({ timeout: 5 });
  return { kind: 'coord.stopped' };
}

function runningOf(): Running {
  if (running === null) throw new Error('coordinator used before coord.init');
  return running;
}

function shardOf(): Shard {
  return runningOf().shard;
}
