// UBSCore's single writer: group commit. Each decision joins the open batch; one batch is one
// LMDB transaction with one sync; and no reply of a batch is posted before that transaction is
// durable, because a reply that precedes durability can lose funds.
//
// Snapshots ride the same single writer. A snapshot is captured when a batch is sealed, so it
// covers exactly the records up to that batch's last one (S); it is encoded in slices between
// batches; and it is submitted only once the batch holding S is durable, so a snapshot on disk
// never covers a record that is not. Pruning (older snapshots, then WAL records up to S) follows
// in bounded transactions, one maintenance write at most between two batches. The processed
// set's retention (pruner.ts) takes the same slot when no snapshot write waits.

import { performance } from 'node:perf_hooks';
import type { Decision } from '../../domain/spot-records.js';
import { errorDetail as describe } from '../../error-text.js';
import { BatchEncoder } from '../../../wal/block.js';
import { diskShortfall } from '../../../wal/disk.js';
import type { Write } from './snapshotter.js';
import { newBatch, type Answer, type Batch } from './batch.js';
import type { UbsMetrics } from '../metrics.js';
import { durableInBoth, type PgLog } from './pg-log.js';
import type { CoreState } from '../state.js';

/** What the writer reads of the actor it writes for, and how it hands a failure back. */
export type WriterHost<To> = {
  /** The state now: a rebuild after a failed write replaces it whole. */
  readonly state: () => CoreState;
  /** The actor stopped for good: a write that ends after that answers nothing. */
  readonly failed: () => boolean;
  /** Whether a write may start: the actor has not failed and its disk takes writes. */
  readonly writable: () => boolean;
  /** Whether a close has begun: then no maintenance write starts and no snapshot is captured. */
  readonly closing: () => boolean;
  /** A write failed; `batch` is the batch it wrote, or null for a maintenance write. */
  readonly writeFailed: (label: string, error: unknown, batch: Batch<To> | null) => void;
  /** Posts a durable batch's answers to one client. */
  readonly answer: Answer<To>;
  readonly fatal: (message: string) => void;
  readonly walDir: string;
  /** No write starts with fewer bytes free than this on the WAL's filesystem; 0: no check. */
  readonly diskReserveBytes: number;
  readonly batchMax: number;
  /** UBSCore's log in PostgreSQL, written beside LMDB's (pg-log.ts); null: LMDB only. */
  readonly pgLog: () => PgLog | null;
  /** The next step of a processed-set prune pass (pruner.ts), or null when none runs. */
  readonly pruneStep: () => Write | null;
};

export class GroupCommit<To> {
  /** Encodes the open batch's records as they are decided. */
  private encoder = new BatchEncoder();
  private open: Batch<To> = newBatch();
  /** Full batches waiting for the writer, oldest first. */
  private readonly sealed: Batch<To>[] = [];
  private writing = false;
  /** True when the last write was a batch: a waiting maintenance write may go next. */
  private maintenanceTurn = true;
  private drainWaiters: (() => void)[] = [];
  private durable: number;
  private batches = 0;
  private commands = 0;

  constructor(
    private readonly host: WriterHost<To>,
    private readonly metrics: UbsMetrics,
  ) {
    this.durable = host.state().ledger.lastSeq;
  }

  /** The seq of the last WAL record on disk. */
  get durableSeq(): number {
    return this.durable;
  }

  get batchesWritten(): number {
    return this.batches;
  }

  get commandsAnswered(): number {
    return this.commands;
  }

  /** One decision joins the open batch: its record, its processed key and its reply; a full batch is sealed. */
  join(to: To, id: number, decision: Decision): void {
    const state = this.host.state();
    const batch = this.open;
    if (decision.record !== null) {
      this.encoder.add(decision.record, decision.processedKey);
      if (decision.processedKey !== null) {
        if (decision.record.kind !== 'op') throw new Error('ubscore: a processed key on a status record');
        state.processed.add(decision.processedKey, decision.record);
      }
    }
    let replies = batch.replies.get(to);
    if (replies === undefined) {
      replies = { ids: [], results: [] };
      batch.replies.set(to, replies);
    }
    replies.ids.push(id);
    replies.results.push(decision.result);
    batch.commands++;
    if (batch.commands >= this.host.batchMax) this.seal();
  }

  /**
   * A standby's followed blocks (follow.ts), already applied to RAM and to the processed set's
   * open batch: sealed as their own batch and written after the sealed ones. A standby decides
   * nothing, so no command of the open batch is waiting.
   */
  enqueue(batch: Batch<To>): void {
    if (this.open.commands !== 0 || batch.wal === null) throw new Error('ubscore: followed blocks joined a batch of decided commands');
    const state = this.host.state();
    state.processed.seal();
    this.sealed.push(batch);
    if (!this.host.closing()) state.snapshots.maybeCapture();
    this.pump();
  }

  private seal(): void {
    if (this.open.commands === 0) return;
    const state = this.host.state();
    const wal = this.encoder.finish();
    // Every decided record joins the open batch at once, so the ledger stands at its last record.
    if (wal !== null && wal.lastSeq !== state.ledger.lastSeq) {
      throw new Error(`ubscore: sealing a batch ending at seq ${wal.lastSeq} while the ledger is at ${state.ledger.lastSeq}`);
    }
    this.open.wal = wal;
    state.processed.seal();
    this.sealed.push(this.open);
    this.open = newBatch();
    if (!this.host.closing()) state.snapshots.maybeCapture();
  }

  /**
   * Starts the next write if the writer is free. While a batch is being written the open batch
   * keeps growing, and is sealed the moment the writer is free again: group commit. A waiting
   * maintenance write (snapshot, prune) goes right after a batch, so at most one runs between
   * two batches; none starts once close has begun.
   */
  pump(): void {
    if (this.writing || !this.host.writable()) return;
    const maintenance = this.host.closing() ? null : (this.host.state().snapshots.nextWrite(this.durable) ?? this.host.pruneStep());
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

  /** Resolves once every decided command is durable, or once the writer can write no more. */
  drained(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
  }

  /** Wakes whoever waits for the drain: everything decided is durable, or nothing more will be written. */
  notifyDrained(): void {
    const waiters = this.drainWaiters;
    this.drainWaiters = [];
    for (const resolve of waiters) resolve();
  }

  /**
   * After a failed write: hands back every batch decided on RAM that is now thrown away (the
   * failed one first, then the sealed ones, then the open one) and starts again empty.
   */
  abandon(batch: Batch<To> | null): Batch<To>[] {
    this.writing = false;
    const undurable = batch === null ? [] : [batch];
    undurable.push(...this.sealed.splice(0), this.open);
    this.open = newBatch();
    this.encoder = new BatchEncoder();
    return undurable;
  }

  /** After a rebuild from disk: what is durable is what the reopened ledger holds. */
  rebased(): void {
    this.durable = this.host.state().ledger.lastSeq;
  }

  /** After the disk takes writes again: a waiting maintenance write may go first. */
  recovered(): void {
    this.maintenanceTurn = true;
  }

  /** `batch` is the batch being written, or null for a maintenance write. */
  private startWrite(write: Write, onDone: () => void, label: string, batch: Batch<To> | null): void {
    this.writing = true;
    let promise: Promise<void>;
    // LMDB must never meet a full disk (wal/disk.ts): a write that would find too little room is
    // not started, and counts as a failed one. A batch that writes nothing needs no room.
    const shortfall = batch?.wal === null ? null : diskShortfall(this.host.walDir, this.host.diskReserveBytes);
    try {
      if (shortfall !== null) throw new Error(`not started: ${shortfall}`);
      promise = write();
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise
      .then(onDone, (error: unknown) => this.host.writeFailed(label, error, batch))
      // A throw while answering a durable write is a broken assertion: stop like any other.
      .catch((error: unknown) => this.host.fatal(`answering a ${label} threw: ${describe(error)}`));
  }

  private write(batch: Batch<To>): Promise<void> {
    // A batch of read-only or refused commands writes nothing, but it still waits its turn:
    // what it read may have come from batches that were not yet durable.
    const wal = batch.wal;
    if (wal === null) return Promise.resolve();
    const started = performance.now();
    // LMDB's append first: a write it refuses at once (a broken assertion) never reaches PostgreSQL.
    const local = this.host
      .state()
      .log.appendBatch(wal)
      .then(() => this.metrics.batchDurable(wal, started));
    const pgLog = this.host.pgLog();
    if (pgLog === null) return local;
    // Side by side: the batch is answered once both hold it (pg-log.ts says what else may happen).
    return durableInBoth(local, pgLog.append(wal), wal.lastSeq, this.host.fatal);
  }

  private onMaintained(): void {
    if (this.host.failed()) return;
    this.writing = false;
    this.maintenanceTurn = false;
    this.pump();
  }

  private onDurable(batch: Batch<To>): void {
    if (this.host.failed()) return;
    this.writing = false;
    this.maintenanceTurn = true;
    this.host.state().processed.settle(batch.wal?.processed ?? []);
    if (batch.wal !== null) {
      this.durable = batch.wal.lastSeq;
      this.batches++;
    }
    this.commands += batch.commands;
    // The next batch goes to LMDB's writer first, then this one is answered: the single writer
    // bounds group commit, so it must not wait while thousands of replies are serialized.
    this.pump();
    for (const [to, replies] of batch.replies) this.host.answer(to, replies);
  }
}
