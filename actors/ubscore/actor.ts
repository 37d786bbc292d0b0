// The UBSCore thread: loads the newest snapshot, replays the WAL after it into the spot ledger,
// then serves client ports with group commit. Commands are decided strictly one at a time in
// arrival order; each decision joins the open batch; one batch is one LMDB transaction with one
// sync; and no reply of a batch is posted before that transaction is durable, because a reply
// that precedes durability can lose funds.
//
// Snapshots ride the same single writer. A snapshot is captured when a batch is sealed, so it
// covers exactly the records up to that batch's last one (S); it is encoded in slices between
// batches; and it is submitted only once the batch holding S is durable, so a snapshot on disk
// never covers a record that is not. Pruning (older snapshots, then WAL records up to S) follows
// in bounded transactions, one maintenance write at most between two batches.
//
// A write that fails (a full disk) leaves RAM ahead of disk. Then no decision that is not durable
// is answered as success: the failed batch, every later one and the open one are answered
// `unavailable` at once (an unknown outcome; callers retry idempotently), RAM is thrown away and
// rebuilt from disk by the start-up path, every new command is answered `unavailable`, and a
// probe write is retried with capped backoff until the disk takes writes again
// (wal/recovery.ts). The main thread hears `ubs.degraded` and `ubs.recovered`.

import { performance } from 'node:perf_hooks';
import type { MessagePort } from 'node:worker_threads';
import { oncePerTurn } from '../../src/turn-flush.js';
import { BatchEncoder } from '../../wal/block.js';
import { commitFailure, diskShortfall, overflowedHeap } from '../../wal/disk.js';
import { copyEnvironment } from '../../wal/copy.js';
import { readLedgerId } from '../../wal/meta.js';
import { unreachable } from '../protocol.js';
import type {
  UbsCommand,
  UbsCopyOutcome,
  UbsMetricsOutcome,
  UbsParentEvent,
  UbsPauseOutcome,
  UbsPortMessage,
  UbsResumeOutcome,
  UbsStats,
} from '../protocol.js';
import { PauseGate } from './pause.js';
import { DiskRecovery, probeWalDir } from '../../wal/recovery.js';
import { errorDetail as describe } from '../../src/error-text.js';
import type { Write } from '../../wal/snapshotter.js';
import { UbsMetrics } from './metrics.js';
import { closeCoreState } from './state.js';
import type { CoreState } from './state.js';
import { RequestUnpacker, isPortMessage, postReplies } from './wire.js';
import { answerWriteFailed, newBatch, refuseAll, type Batch } from './batch.js';
import { logger } from './log.js';

/** What the actor needs from its thread: stop the process, tell the main thread, reopen the state. */
type ActorHooks = {
  readonly onFatal: (message: string) => void;
  readonly post: (event: UbsParentEvent) => void;
  /** Opens the state from disk as at start-up (actors/ubscore/state.ts); throws on failure. */
  readonly reopen: () => CoreState;
  readonly walDir: string;
  /** No write starts with fewer bytes free than this on the WAL's filesystem; 0: no check. */
  readonly diskReserveBytes: number;
};

/** A degraded episode: since when, and the recovery that ends it. */
type Degraded = { readonly since: number; readonly recovery: DiskRecovery };

// ---------------------------------------------------------------------------------------------
// The actor.

export class UbsActor {
  /** Encodes the open batch's records as they are decided. */
  private encoder = new BatchEncoder();
  private readonly unpacker = new RequestUnpacker();
  private open: Batch = newBatch();
  /** Full batches waiting for the writer, oldest first. */
  private readonly sealed: Batch[] = [];
  private writing = false;
  /** True when the last write was a batch: a waiting maintenance write may go next. */
  private maintenanceTurn = true;
  /** Flushes once the messages of this turn are taken: no timer, no fixed wait. */
  private readonly scheduleFlush = oncePerTurn(() => this.pump());
  private closing: Promise<{ readonly closed: true }> | null = null;
  private failed = false;
  /** Non-null while the disk takes no writes: every command is answered `unavailable`. */
  private degraded: Degraded | null = null;
  private readonly ports = new Set<MessagePort>();
  private drainWaiters: (() => void)[] = [];
  private durableSeq: number;
  /** A backup's pause: while it holds, messages wait undecided. */
  private readonly gate = new PauseGate();
  private batchesWritten = 0;
  private readonly metrics = new UbsMetrics();
  private commandsAnswered = 0;

  constructor(
    /** The ledger, its LMDB environment, the snapshot cycle and the processed set: replaced whole after a failed write. */
    private state: CoreState,
    private readonly batchMax: number,
    private readonly hooks: ActorHooks,
  ) {
    this.durableSeq = state.ledger.lastSeq;
  }

  attach(port: MessagePort): void {
    if (this.closing !== null) {
      port.close();
      return;
    }
    this.ports.add(port);
    port.on('message', (message: unknown) => this.onPortMessage(port, message));
    port.on('close', () => this.ports.delete(port));
  }

  stats(): UbsStats {
    const base = {
      accounts: this.state.ledger.accountCount,
      walSeq: this.durableSeq,
      batches: this.batchesWritten,
      commands: this.commandsAnswered,
    };
    const snapshots = this.state.snapshots.stats();
    return snapshots === undefined ? base : { ...base, snapshots };
  }

  /** The thread's registry as values, its gauges and counters brought up to date first. */
  async metricValues(): Promise<UbsMetricsOutcome> {
    try {
      // While degraded the environment may be closed between a rebuild's close and its reopen.
      const families = await this.metrics.values(this.stats(), this.state, this.hooks.walDir, this.degraded === null);
      return { kind: 'metrics', families };
    } catch (error) {
      return { kind: 'failed', message: describe(error) };
    }
  }

  /** Asks for a writer turn from outside a write (a snapshot finished encoding). */
  readonly wake = (): void => {
    if (this.closing === null) this.pump();
  };

  private onPortMessage(port: MessagePort, message: unknown): void {
    if (!isPortMessage(message)) {
      logger.error('dropped a malformed port message');
      return;
    }
    switch (message.kind) {
      case 'ubs.requests':
        this.onRequests(port, message);
        break;
      default:
        unreachable(message.kind);
    }
  }

  private onRequests(port: MessagePort, message: UbsPortMessage): void {
    // After close nothing is taken: the caller's timeout reads as "unknown" and it retries,
    // idempotently, against the restarted core.
    if (this.closing !== null || this.failed) return;
    if (this.degraded !== null) {
      refuseAll(this.unpacker, port, message);
      return;
    }
    const gate = this.gate.hold(port, message);
    if (gate === 'held') return;
    if (gate === 'dropped') {
      logger.error('dropped a port message: too many held by a backup pause; its callers retry');
      return;
    }
    try {
      const problem = this.unpacker.unpack(message, (id, command) => this.take(port, id, command));
      // The requests before the damage were taken; the rest time out at the client as "unknown".
      if (problem !== null) logger.error('dropped the rest of a malformed port message', { problem });
    } catch (error) {
      // A throw while deciding is a programmer error and RAM may be half-applied: like a failed
      // write, only a restart and a replay from the durable log can be trusted.
      this.fatal(`deciding a command threw: ${describe(error)}`);
      return;
    }
    this.scheduleFlush();
  }

  private take(port: MessagePort, id: number, command: unknown): void {
    if (!Number.isSafeInteger(id)) {
      logger.error('dropped a request without a valid id');
      return;
    }
    // decide trusts no field of what it is given: the command came from another thread.
    const decision = this.state.ledger.decide(command as UbsCommand, this.state.processed.lookup);
    const batch = this.open;
    if (decision.record !== null) {
      this.encoder.add(decision.record, decision.processedKey);
      if (decision.processedKey !== null) {
        if (decision.record.kind !== 'op') throw new Error('ubscore: a processed key on a status record');
        this.state.processed.add(decision.processedKey, decision.record);
      }
    }
    let replies = batch.replies.get(port);
    if (replies === undefined) {
      replies = { ids: [], results: [] };
      batch.replies.set(port, replies);
    }
    replies.ids.push(id);
    replies.results.push(decision.result);
    batch.commands++;
    if (batch.commands >= this.batchMax) this.seal();
  }

  private seal(): void {
    if (this.open.commands === 0) return;
    const wal = this.encoder.finish();
    // Every decided record joins the open batch at once, so the ledger stands at its last record.
    if (wal !== null && wal.lastSeq !== this.state.ledger.lastSeq) {
      throw new Error(`ubscore: sealing a batch ending at seq ${wal.lastSeq} while the ledger is at ${this.state.ledger.lastSeq}`);
    }
    this.open.wal = wal;
    this.state.processed.seal();
    this.sealed.push(this.open);
    this.open = newBatch();
    if (this.closing === null) this.state.snapshots.maybeCapture();
  }

  /**
   * Starts the next write if the writer is free. While a batch is being written the open batch
   * keeps growing, and is sealed the moment the writer is free again: group commit. A waiting
   * maintenance write (snapshot, prune) goes right after a batch, so at most one runs between
   * two batches; none starts once close has begun.
   */
  private pump(): void {
    if (this.writing || this.failed || this.degraded !== null) return;
    const maintenance = this.closing === null ? this.state.snapshots.nextWrite(this.durableSeq) : null;
    if (maintenance !== null && (this.maintenanceTurn || (this.sealed.length === 0 && this.open.commands === 0))) {
      this.startWrite(maintenance, () => this.onMaintained(), 'snapshot or prune', null);
      return;
    }
    if (this.sealed.length === 0) this.seal();
    const batch = this.sealed.shift();
    if (batch === undefined) {
      if (maintenance !== null) this.startWrite(maintenance, () => this.onMaintained(), 'snapshot or prune', null);
      else this.notifyDrained();
      return;
    }
    this.startWrite(
      () => this.write(batch),
      () => this.onDurable(batch),
      'WAL write',
      batch,
    );
  }

  /** `batch` is the batch being written, or null for a maintenance write. */
  private startWrite(write: Write, onDone: () => void, label: string, batch: Batch | null): void {
    this.writing = true;
    let promise: Promise<void>;
    // LMDB must never meet a full disk (wal/disk.ts): a write that would find too little room is
    // not started, and counts as a failed one. A batch that writes nothing needs no room.
    const shortfall = batch?.wal === null ? null : diskShortfall(this.hooks.walDir, this.hooks.diskReserveBytes);
    try {
      if (shortfall !== null) throw new Error(`not started: ${shortfall}`);
      promise = write();
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise
      .then(onDone, (error: unknown) => this.onWriteFailed(label, error, batch))
      // A throw while answering a durable write is a broken assertion: stop like any other.
      .catch((error: unknown) => this.fatal(`answering a ${label} threw: ${describe(error)}`));
  }

  private write(batch: Batch): Promise<void> {
    // A batch of read-only or refused commands writes nothing, but it still waits its turn:
    // what it read may have come from batches that were not yet durable.
    const wal = batch.wal;
    if (wal === null) return Promise.resolve();
    const started = performance.now();
    return this.state.log.appendBatch(wal).then(() => this.metrics.batchDurable(wal, started));
  }

  private onMaintained(): void {
    if (this.failed) return;
    this.writing = false;
    this.maintenanceTurn = false;
    this.pump();
  }

  private onDurable(batch: Batch): void {
    if (this.failed) return;
    this.writing = false;
    this.maintenanceTurn = true;
    this.state.processed.settle(batch.wal?.processed ?? []);
    if (batch.wal !== null) {
      this.durableSeq = batch.wal.lastSeq;
      this.batchesWritten++;
    }
    this.commandsAnswered += batch.commands;
    // The next batch goes to LMDB's writer first, then this one is answered: the single writer
    // bounds group commit, so it must not wait while thousands of replies are serialized.
    this.pump();
    for (const [port, replies] of batch.replies) postReplies(port, replies);
  }

  /**
   * A write failed, so RAM is ahead of disk. The failed batch (none for a maintenance write),
   * every sealed one and the open one were decided on RAM that is now thrown away: each of
   * their commands is answered `unavailable`, and the state is rebuilt from disk.
   */
  private onWriteFailed(label: string, error: unknown, batch: Batch | null): void {
    if (this.failed || this.degraded !== null) return;
    this.writing = false;
    const undurable = batch === null ? [] : [batch];
    undurable.push(...this.sealed.splice(0), this.open);
    this.open = newBatch();
    this.encoder = new BatchEncoder();
    const since = Date.now();
    const recovery = new DiskRecovery({
      rebuild: () => this.rebuild(),
      probe: () => probeWalDir(this.hooks.walDir, this.hooks.diskReserveBytes),
      recovered: (attempts) => this.onRecovered(since, attempts),
      log: (line) => logger.warn(line),
    });
    this.degraded = { since, recovery };
    answerWriteFailed(undurable);
    void commitFailure(error).then((failure) => {
      const reason = `${label} failed: ${failure.message} (code ${String(failure.code)})`;
      // lmdb-js overflowed a heap buffer reporting this failure: nothing in this process can be trusted.
      if (overflowedHeap(failure)) {
        this.fatal(
          `${reason}; lmdb-js overflows its heap reporting a failed page write, so the process stops and the restart replays the durable WAL`,
        );
        return;
      }
      logger.critical(
        'UBSCore cannot write its WAL: RAM is rebuilt from disk and every command is answered unavailable until a probe write succeeds',
        { reason, commands_unanswered: undurable.reduce((n, b) => n + b.commands, 0) },
      );
      this.hooks.post({ kind: 'ubs.degraded', reason, since });
      // A close under way waits for no recovery: it closes what is durable.
      if (this.closing === null) recovery.start();
      else this.notifyDrained();
    });
  }

  /** Throws RAM away and restores it from disk exactly as at start-up. */
  private async rebuild(): Promise<void> {
    try {
      await closeCoreState(this.state);
    } catch (error) {
      // The old environment is dropped either way; opening a new one is what must succeed.
      logger.error('closing the state before a rebuild failed', { reason: describe(error) });
    }
    this.state = this.hooks.reopen();
    this.durableSeq = this.state.ledger.lastSeq;
    const { snapshotSeq, replayedRecords } = this.state.restored;
    logger.warn('state rebuilt from disk', { snapshot_seq: snapshotSeq, replayed_records: replayedRecords, durable_seq: this.durableSeq });
  }

  private onRecovered(since: number, attempts: number): void {
    if (this.degraded === null || this.closing !== null) return;
    this.degraded = null;
    this.maintenanceTurn = true;
    const degradedMs = Date.now() - since;
    logger.warn('UBSCore writes its WAL again and serves commands', { degraded_ms: degradedMs, attempts, durable_seq: this.durableSeq });
    this.hooks.post({ kind: 'ubs.recovered', since, degradedMs, attempts });
    this.pump();
  }

  private notifyDrained(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private fatal(message: string): void {
    if (this.failed) return;
    this.failed = true;
    this.hooks.onFatal(message);
  }

  /**
   * Stops deciding, then waits until every decided command is durable: the WAL position answered
   * is then exactly the ledger's, and stays so until `resume` (or the time limit).
   */
  async pause(pauseMsMax: number): Promise<UbsPauseOutcome> {
    if (this.closing !== null || this.failed || this.degraded !== null)
      return { kind: 'refused', reason: 'UBSCore is closing, failed, or cannot write its WAL' };
    if (this.gate.paused) return { kind: 'refused', reason: 'UBSCore is already paused by another backup' };
    this.gate.start(pauseMsMax, () => {
      logger.warn('a backup pause lifted by itself', { pause_ms: pauseMsMax });
      this.resume();
    });
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
    if (this.failed || this.degraded !== null || !this.gate.paused)
      return { kind: 'refused', reason: 'UBSCore failed, or the pause lifted, before every decided command was durable' };
    // Pair assertion: nothing decided is waiting for the writer.
    if (this.durableSeq !== this.state.ledger.lastSeq)
      throw new Error(`ubscore: paused at durable seq ${this.durableSeq} with the ledger at ${this.state.ledger.lastSeq}`);
    return { kind: 'paused', walSeq: this.durableSeq };
  }

  /** Copies the environment while paused: the copy holds exactly the records through the paused position. */
  async copyTo(dir: string): Promise<UbsCopyOutcome> {
    if (!this.gate.paused) return { kind: 'refused', reason: 'UBSCore is not paused' };
    const walSeq = this.durableSeq;
    const started = performance.now();
    try {
      await copyEnvironment(this.state.log.databases, dir);
    } catch (error) {
      return { kind: 'refused', reason: `the LMDB copy failed: ${describe(error)}` };
    }
    if (!this.gate.paused || this.durableSeq !== walSeq) return { kind: 'refused', reason: 'the pause lifted during the copy' };
    return { kind: 'copied', walSeq, ledgerId: readLedgerId(this.state.log.databases), copyMs: Math.round(performance.now() - started) };
  }

  resume(): UbsResumeOutcome {
    const { held, expired } = this.gate.release();
    for (const { port, message } of held) this.onRequests(port, message);
    return { kind: 'resumed', heldMessages: held.length, expired };
  }

  close(): Promise<{ readonly closed: true }> {
    this.closing ??= this.drainAndClose();
    return this.closing;
  }

  private async drainAndClose(): Promise<{ readonly closed: true }> {
    // Every accepted command durable first; then no write is in flight, and no new one starts.
    // While the disk fails nothing is accepted, so there is nothing to drain.
    if (this.degraded === null) {
      await new Promise<void>((resolve) => {
        this.drainWaiters.push(resolve);
        this.pump();
      });
    }
    await this.degraded?.recovery.stop();
    for (const port of this.ports) port.close();
    await this.state.processed.close();
    try {
      // After the drain every decided record is durable, so the snapshot covers only durable ones.
      if (!this.failed && this.degraded === null) await this.state.snapshots.closeWithSnapshot(this.durableSeq);
    } catch (error) {
      // The WAL holds every record; the next start replays them without this snapshot.
      logger.error('the closing snapshot failed', { reason: describe(error) });
    }
    try {
      await this.state.log.close();
    } catch (error) {
      // Every accepted command is already durable; a failing close cannot lose any of them.
      logger.error('closing LMDB failed', { reason: describe(error) });
    }
    return { closed: true };
  }
}
