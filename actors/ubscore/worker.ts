// The UBSCore thread's entry: reads its options, opens its state from disk (the newest snapshot
// plus the WAL after it, src/ubscore/state.ts), and serves client ports (ports.ts) through the
// engine (src/ubscore/engine.ts) until the main thread closes it.

import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { expose } from 'comlink';
import { isCommitFailure } from '../../wal/disk.js';
import { unreachable } from '../../src/unreachable.js';
import type { UbsControlApi, UbsSpotLog } from '../../src/ubscore/control.js';
import type { UbsParentEvent, UbsParentMessage } from '../protocol.js';
import { UbsEngine } from '../../src/ubscore/engine.js';
import { type PortEngine, UbsPorts } from './ports.js';
import { nodeEndpoint } from './client.js';
import { errorDetail as describe } from '../../src/error-text.js';
import { readWorkerData } from './start.js';
import { openCoreState, type CoreState } from '../../src/ubscore/state.js';
import { startFilterBuild } from './filter-build.js';
import { UbsMetrics } from '../../src/ubscore/metrics.js';
import { PgLog } from '../../src/ubscore/durability/pg-log.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import type { EncodedSnapshot } from '../../wal/snapshot.js';
import { crashHook } from '../../src/faults/crash-points.js';

/** `openLog`: UBSCore's PostgreSQL log for a standby's core that leads now (null with SPOT_LOG=off). */
function exposeControl(actor: PortEngine, port: MessagePort, openLog: (spotLog: UbsSpotLog | null) => PgLog | null): void {
  const api: UbsControlApi = {
    stats: () => Promise.resolve(actor.stats()),
    metrics: () => actor.metricValues(),
    close: () => actor.close(),
    pause: (pauseMsMax) => actor.pause(pauseMsMax),
    copyTo: (dir) => actor.copyTo(dir),
    resume: () => Promise.resolve(actor.resume()),
    follow: (blocks) => actor.follow(blocks),
    lead: (spotLog) => actor.lead(openLog(spotLog)),
    prune: (plan) => actor.prune(plan),
  };
  expose(api, nodeEndpoint(port));
}

/**
 * lmdb-js rejects, besides the write's own promise (which the actor handles), one more promise
 * of its own for a failed commit, which nothing can observe (measured with lmdb 3.5.6: one per
 * failed transaction). Node would end the thread for it; a failed commit is already an outcome
 * the actor handles, so only that kind is ignored. Any other unhandled rejection stays fatal.
 */
function guardUnhandledRejections(die: (message: string) => void): void {
  process.on('unhandledRejection', (reason: unknown) => {
    if (isCommitFailure(reason)) {
      reason.commitError.catch(() => undefined);
      return;
    }
    die(`ubscore: unhandled rejection: ${describe(reason)}`);
  });
}

/**
 * A crash between a snapshot's LMDB write and its copy leaves PostgreSQL without it: the newest
 * snapshot LMDB holds at start is copied, unless PostgreSQL holds it already.
 */
function offerNewestSnapshot(state: CoreState, pgLog: PgLog): void {
  const seq = state.restored.snapshotSeq;
  if (seq === 0) return;
  const stored = new SnapshotStore(state.log.databases).stored(seq);
  if (stored !== null) pgLog.snapshots.offer(stored, true);
}

function start(): void {
  const parent = parentPort;
  if (parent === null) throw new Error('ubscore-worker must run in a worker thread');
  const post = (event: UbsParentEvent): void => parent.postMessage(event);
  const die = (message: string): void => {
    post({ kind: 'ubs.fatal', message });
    process.exit(1);
  };
  guardUnhandledRejections(die);
  try {
    const options = readWorkerData(workerData);
    let actor: PortEngine | null = null;
    const ports = new UbsPorts();
    const metrics = new UbsMetrics();
    let pgLog = options.spotLog === null ? null : PgLog.open(options.spotLog, { post, metrics });
    const hooks = {
      wake: () => actor?.wake(),
      die,
      snapshotDurable: (snapshot: EncodedSnapshot) => pgLog?.snapshotDurable(snapshot),
      startFilterBuild,
    };
    const state = openCoreState(options, hooks);
    const reopen = () => openCoreState(options, hooks);
    if (pgLog !== null) offerNewestSnapshot(state, pgLog);
    actor = new UbsEngine(state, options.batchMax, {
      onFatal: die,
      post,
      wire: ports.wire,
      closeClients: () => ports.closeAll(),
      reopen,
      walDir: options.walDir,
      diskReserveBytes: options.diskReserveBytes,
      follow: options.follow,
      pgLog,
      metrics,
      crash: crashHook(options.crashPoint),
    });
    const ready = actor;
    parent.on('message', (message: UbsParentMessage) => {
      switch (message.kind) {
        case 'ubs.attach':
          ports.attach(ready, message.port);
          break;
        case 'ubs.control':
          exposeControl(ready, message.port, (spotLog) => {
            if (pgLog !== null || spotLog === null) return pgLog;
            pgLog = PgLog.open(spotLog, { post, metrics });
            offerNewestSnapshot(ready.currentState(), pgLog);
            return pgLog;
          });
          break;
        default:
          unreachable(message);
      }
    });
    const { replayedRecords, replayMs, snapshotSeq, snapshotLoadMs } = state.restored;
    post({ kind: 'ubs.ready', replayedRecords, replayMs, snapshotSeq, snapshotLoadMs });
    // Pruning left over from before a crash starts now, between the first batches.
    ready.wake();
  } catch (error) {
    die(`ubscore: start failed: ${describe(error)}`);
  }
}

start();
