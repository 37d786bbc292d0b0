// Thread entry of one coordinator shard, run as the single thread of a piscina pool. The pool
// is the shard's bounded mailbox; each task is one message of the protocol, answered with a
// value. The shard's own timers and recovery scan run between tasks (atomics disabled).

import type { MessagePort } from 'node:worker_threads';
import { workerData } from 'piscina';
import { composeShard } from '../src/coordinator/compose.js';
import type { Shard } from '../src/coordinator/shard.js';
import type { AssetCache } from '../src/db/assets.js';
import { openSql, type Sql } from '../src/db/sql.js';
import { createLogger } from '../src/log.js';
import type { Registry } from '../src/metrics/registry.js';
import { unreachable, type CoordinatorResult, type CoordinatorTask, type CoordinatorWorkerData } from './protocol.js';
import { UbsClient } from './ubscore-client.js';

const { config, logLevel, logFormat } = workerData as CoordinatorWorkerData;
const log = createLogger({ level: logLevel, format: logFormat, name: `coordinator-${config.shard}` });

type Running = { readonly shard: Shard; readonly sql: Sql; readonly ubs: UbsClient; readonly assets: AssetCache; readonly metrics: Registry };
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
    case 'coord.submit': {
      const outcome = await shardOf().submit(task.transfer);
      return outcome.kind === 'transfer' ? { kind: 'coord.transfer', view: outcome.view } : { kind: 'coord.refused', code: outcome.code };
    }
    case 'coord.drive': {
      const view = await shardOf().driveNow(task.reqId);
      return view === null ? { kind: 'coord.not_found' } : { kind: 'coord.transfer', view };
    }
    case 'coord.metrics':
      return { kind: 'coord.metrics', metrics: runningOf().metrics.snapshot() };
    case 'coord.assets_changed':
      runningOf().assets.invalidate();
      return { kind: 'coord.done' };
    case 'coord.stop':
      return stop();
    default:
      return unreachable(task);
  }
}

function init(port: MessagePort): CoordinatorResult {
  if (running !== null) return { kind: 'coord.error', message: 'already initialised' };
  const sql = openSql(config.databaseUrl, { max: config.pgPoolMax, application: `coordinator-${config.shard}` });
  const ubs = new UbsClient(port, {});
  const { shard, assets, metrics } = composeShard({ sql, ubs: (cmd, ms) => ubs.send(cmd, ms), config, log });
  shard.start();
  running = { shard, sql, ubs, assets, metrics };
  return { kind: 'coord.ready' };
}

async function stop(): Promise<CoordinatorResult> {
  if (running === null) return { kind: 'coord.stopped' };
  const { shard, sql, ubs } = running;
  running = null;
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
