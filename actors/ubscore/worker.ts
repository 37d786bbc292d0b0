// The UBSCore thread's entry: reads its options, opens its state from disk (the newest snapshot
// plus the WAL after it, actors/ubscore/state.ts), and serves client ports through the actor
// (actors/ubscore/actor.ts) until the main thread closes it.

import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { expose } from 'comlink';
import { isCommitFailure } from '../../wal/disk.js';
import { unreachable } from '../protocol.js';
import type { UbsControlApi, UbsParentEvent, UbsParentMessage, UbsSpotLog } from '../protocol.js';
import { UbsActor } from './actor.js';
import { nodeEndpoint } from './client.js';
import { errorDetail as describe } from '../../src/error-text.js';
import { readWorkerData } from './start.js';
import { openCoreState, type CoreState } from './state.js';
import { UbsMetrics } from './metrics.js';
import { PgLog } from './pg-log.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import type { EncodedSnapshot } from '../../wal/snapshot.js';

/** `openLog`: UBSCore's PostgreSQL log for a standby's core that leads now (null with SPOT_LOG=off). */
function exposeControl(actor: UbsActor, port: MessagePort, openLog: (spotLog: UbsSpotLog | null) => PgLog | null): void {
  const api: UbsControlApi = {
    stats: () => Promise.resolve(actor.stats()),
    metrics: () => actor.metricValues(),
    close: () => actor.close(),
    pause: (pauseMsMax) => actor.pause(pauseMsMax),
    copyTo: (dir) => actor.copyTo(dir),
    resume: () => Promise.resolve(actor.resume()),
    follow: (blocks) => actor.follow(blocks),
    lead: (spotLog) => actor.lead(openLog(spotLog)),
    // Issue 29: the core's prune is built on another branch; until it is merged, nothing is pruned.
    prune: () => Promise.resolve({ kind: 'refused', reason: 'this build of UBSCore does not prune yet' }),
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
    let actor: UbsActor | null = null;
    const metrics = new UbsMetrics();
    let pgLog = options.spotLog === null ? null : PgLog.open(options.spotLog, { post, metrics });
    const hooks = { wake: () => actor?.wake(), die, snapshotDurable: (snapshot: EncodedSnapshot) => pgLog?.snapshotDurable(snapshot) };
    const state = openCoreState(options, hooks);
    const reopen = () => openCoreState(options, hooks);
    if (pgLog !== null) offerNewestSnapshot(state, pgLog);
    actor = new UbsActor(state, options.batchMax, {
      onFatal: die,
      post,
      reopen,
      walDir: options.walDir,
      diskReserveBytes: options.diskReserveBytes,
      follow: options.follow,
      pgLog,
      metrics,
    });
    const ready = actor;
    parent.on('message', (message: UbsParentMessage) => {
      switch (message.kind) {
        case 'ubs.attach':
          ready.attach(message.port);
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
