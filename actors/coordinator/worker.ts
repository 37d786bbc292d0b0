// Thread entry of one coordinator shard, run as the single thread of a piscina pool. New
// transfers come in batches on the submit port coord.init brings, and each is answered on it as
// soon as its own drive ends: a transfer never waits for the slowest of its batch. Operators'
// drives are piscina tasks, answered with a value. Control (metrics, assets, halt, stop) comes on
// the comlink port coord.init brings, so it never waits behind transfers. The shard's own timers
// and recovery scan run between messages (atomics disabled).

import type { MessagePort } from 'node:worker_threads';
import { expose } from 'comlink';
import { workerData } from 'piscina';
import { composeShard } from '../../src/coordinator/compose.js';
import type { HaltFlag } from '../../src/coordinator/halt-flag.js';
import type { Shard } from '../../src/coordinator/shard.js';
import type { AssetCache } from '../../src/db/assets.js';
import type { DailyLimits } from '../../src/coordinator/daily-limits.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { createLogger } from '../../src/log.js';
import type { MetricFamily, Registry } from '../../src/metrics/registry.js';
import { HALT_SETTLE_MS_MAX } from '../../src/limits.js';
import { unreachable } from '../../src/unreachable.js';
import type { CoordinatorControlApi, CoordinatorResult, CoordinatorTask, CoordinatorWorkerData } from '../protocol.js';
import { nodeEndpoint, UbsClient } from '../ubscore/client.js';
import { serveSubmits } from './submit-serve.js';
import { WriteLink } from './write-link.js';
import { serveWrites } from './write-serve.js';
import { errorDetail, errorText } from '../../src/error-text.js';

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
  readonly submitPort: MessagePort;
  /** This shard's link to shard 0's shared writer, or null when it writes through its own. */
  readonly link: WriteLink | null;
  /** Shard 0: the other shards' write ports it serves. */
  readonly writeServePorts: readonly MessagePort[];
};
let running: Running | null = null;

export default async function coordinatorTask(task: CoordinatorTask): Promise<CoordinatorResult> {
  try {
    return await handle(task);
  } catch (error) {
    log.error('coordinator task failed', { task: task.kind, error: errorDetail(error) });
    return { kind: 'coord.error', message: errorText(error) };
  }
}

async function handle(task: CoordinatorTask): Promise<CoordinatorResult> {
  switch (task.kind) {
    case 'coord.init':
      return init(task);
    case 'coord.drive': {
      const view = await shardOf().driveNow(task.reqId);
      if (view === null) return { kind: 'coord.drove', reply: { kind: 'refused', code: 'NOT_FOUND' } };
      // Held in INIT by a halt (MON-003): the operator is told so, not shown an unmoved transfer.
      if (view.state === 'INIT' && runningOf().halt.current !== null)
        return { kind: 'coord.drove', reply: { kind: 'refused', code: 'SERVICE_HALTED' } };
      return { kind: 'coord.drove', reply: { kind: 'transfer', view } };
    }
    default:
      return unreachable(task);
  }
}

/** The control API on this shard's own port: each call answers a value, whatever happens. */
const control: CoordinatorControlApi = {
  metrics: () => outcome('metrics', async () => ({ kind: 'metrics', families: await metricsOf(runningOf()) })),
  assetsChanged: () =>
    outcome('assetsChanged', async () => {
      runningOf().assets.invalidate();
      // An asset's daily amount limit may have changed: every tally is reloaded when next needed.
      runningOf().limits.reset();
      return { kind: 'done' };
    }),
  haltChanged: (change) =>
    outcome('haltChanged', async () => {
      const { halt, shard } = runningOf();
      const was = halt.current;
      // Answered once no move out of INIT is under way, so nothing leaves INIT after the halt's answer.
      // A change older than the state this shard holds (its own read got there first) changes nothing.
      const unsettled = await halt.set(change, HALT_SETTLE_MS_MAX);
      const now = halt.current;
      if (was !== null && now === null) shard.resumed();
      log.warn(
        now === null
          ? 'service resumed: new transfers accepted, transfers held in INIT driven'
          : 'service halted: new transfers refused, transfers in INIT held',
        { shard: config.shard, reason: now?.reason ?? null, version: halt.heldVersion, moves_out_of_init_unsettled: unsettled },
      );
      return { kind: 'done' };
    }),
  stop: () => outcome('stop', stop),
};

/** Comlink would send a thrown error without its fields: a failure crosses as a value. */
async function outcome<T>(call: string, run: () => Promise<T>): Promise<T | { readonly kind: 'failed'; readonly message: string }> {
  try {
    return await run();
  } catch (error) {
    log.error('coordinator control call failed', { call, error: errorDetail(error) });
    return { kind: 'failed', message: errorText(error) };
  }
}

async function init(task: Extract<CoordinatorTask, { kind: 'coord.init' }>): Promise<CoordinatorResult> {
  if (running !== null) return { kind: 'coord.error', message: 'already initialised' };
  const { ubsPort: port, submitPort, controlPort, writeServePorts, writeLinkPort } = task;
  const sql = openSql(config.databaseUrl, {
    max: config.pgPoolMax,
    application: `coordinator-${config.shard}`,
    timeouts: config.pgTimeouts,
    owner: config.owner,
  });
  const ubs = new UbsClient(port, {});
  // With several shards, shard 0's batched writer is every shard's (write-link.ts): one batch, one commit, for all.
  const link =
    writeLinkPort === null
      ? null
      : new WriteLink(writeLinkPort, (detail) => log.error("shard 0's shared writer sent a malformed answer", { detail }));
  const { shard, assets, limits, metrics, halt, writes } = composeShard({
    sql,
    ubs: (cmd, ms) => ubs.send(cmd, ms),
    config,
    log,
    ...(link === null ? {} : { writes: link }),
  });
  for (const servePort of writeServePorts) serveWrites(servePort, writes);
  // The stored halt is read before the first transfer is taken: a start while halted refuses.
  await halt.refresh(sql);
  const haltTimer = setInterval(() => {
    const was = halt.current;
    halt.refresh(sql).then(
      (now) => {
        // A resume this thread missed: the transfers it held in INIT are driven now.
        if (was !== null && now === null) shard.resumed();
      },
      (error: unknown) => log.error('could not re-read the stored halt', { error: String(error) }),
    );
  }, config.scanIntervalMs);
  haltTimer.unref();
  shard.start();
  running = { shard, sql, ubs, assets, limits, metrics, halt, haltTimer, submitPort, link, writeServePorts };
  serveSubmits(submitPort, shard, log);
  // The port came with this pool's only thread's init: control reaches this shard and no other.
  expose(control, nodeEndpoint(controlPort));
  return { kind: 'coord.ready' };
}

/** The shard's registry as values (its `shard` label set by compose), plus whether this thread refuses new transfers now (MON-003). */
async function metricsOf(r: Running): Promise<readonly MetricFamily[]> {
  r.metrics.set(
    'transfer_coordinator_halted',
    'Whether this coordinator shard refuses new transfers because the service is halted (1) or not (0)',
    {},
    r.halt.current === null ? 0 : 1,
  );
  return r.metrics.json();
}

async function stop(): Promise<{ readonly kind: 'stopped' }> {
  if (running === null) return { kind: 'stopped' };
  const { shard, sql, ubs, haltTimer, submitPort, link, writeServePorts } = running;
  running = null;
  clearInterval(haltTimer);
  await shard.stop();
  // The pool stops shard 0 after every other shard, so no write waits on these ports by now.
  link?.close('the coordinator shard stopped');
  for (const servePort of writeServePorts) servePort.close();
  // The main thread answers what is still unanswered (the port's close) with an error.
  submitPort.close();
  ubs.close();
  await sql.end({ timeout: 5 });
  return { kind: 'stopped' };
}

function runningOf(): Running {
  if (running === null) throw new Error('coordinator used before coord.init');
  return running;
}

function shardOf(): Shard {
  return runningOf().shard;
}
