// UBSCore's snapshot cycle, run by the actor's single writer (src/ubscore/engine.ts): capture at a batch boundary, encode
// in slices between batches, write once every record it covers is durable, then prune older
// snapshots and the WAL up to it in bounded transactions.

import { performance } from 'node:perf_hooks';
import type { AccountCapture, SpotLedger } from '../ledger/core.js';
import type { UbsCoreOptions, UbsStats } from '../control.js';
import { unreachable } from '../../unreachable.js';
import { WAL_PRUNE_RECORDS_PER_TXN_MAX } from '../../limits.js';
import type { WalLog } from '../../../wal/log.js';
import { SnapshotEncoder } from '../../../wal/snapshot.js';
import type { EncodedSnapshot } from '../../../wal/snapshot.js';
import type { SnapshotStore } from '../../../wal/snapshot-store.js';
import { errorDetail } from '../../error-text.js';

/** When a snapshot is taken and how it is sliced (UBSCore's start options, defaults applied). */
type SnapshotPolicy = Required<Pick<UbsCoreOptions, 'snapshotEveryRecords' | 'snapshotSliceAccounts' | 'closeSnapshotRecordsMin'>>;

/** An error as text for a log line or a fatal message, with its stack when it has one. */

/** One cycle at a time: idle → encoding → ready → pruning → idle. */
type Phase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'encoding'; readonly capture: AccountCapture; readonly encoder: SnapshotEncoder }
  | { readonly kind: 'ready'; readonly snapshot: EncodedSnapshot }
  | { readonly kind: 'pruning'; readonly throughSeq: number; snapshotsDeleted: boolean };

/** A write for the single writer: it resolves once durable. */
export type Write = () => Promise<void>;

export class Snapshotter {
  private phase: Phase = { kind: 'idle' };
  private written = 0;
  private sliceMsMax = 0;
  private closing = false;

  constructor(
    private readonly ledger: SpotLedger,
    private readonly log: WalLog,
    private readonly store: SnapshotStore,
    private readonly options: SnapshotPolicy,
    /** The newest durable snapshot's seq: pruning and the next snapshot are measured from it. */
    private newestSeq: number,
    /** Asks the actor to offer the writer a turn: a write became ready. */
    private readonly wake: () => void,
    private readonly onFatal: (message: string) => void,
    /** A snapshot is durable in LMDB (copied into PostgreSQL from here, so the SPOT ledger can be rebuilt without this machine); must not throw. */
    private readonly onDurable: (snapshot: EncodedSnapshot) => void = () => undefined,
  ) {
    // A restart may follow a crash between a snapshot and its pruning: finish that pruning.
    if (newestSeq > 0) this.phase = { kind: 'pruning', throughSeq: newestSeq, snapshotsDeleted: false };
  }

  stats(): UbsStats['snapshots'] {
    const pendingSeq =
      this.phase.kind === 'encoding' ? this.phase.capture.seq : this.phase.kind === 'ready' ? this.phase.snapshot.info.seq : null;
    if (this.newestSeq === 0 && pendingSeq === null) return undefined;
    return {
      written: this.written,
      seq: this.newestSeq,
      pendingSeq,
      walPrunedThroughSeq: this.log.prunedThroughSeq(),
      sliceMsMax: this.sliceMsMax,
    };
  }

  /**
   * Called as a batch is sealed, and when a cycle ends. It runs between two commands, so every
   * record decided so far sits in a batch (sealed or open) and the state is exactly the state
   * after the last of them, S; the snapshot is written only once S is durable (`nextWrite`).
   */
  maybeCapture(): void {
    const every = this.options.snapshotEveryRecords;
    if (every === 0 || this.phase.kind !== 'idle') return;
    if (this.ledger.lastSeq - this.newestSeq < every) return;
    const capture = this.ledger.captureAccounts();
    this.phase = { kind: 'encoding', capture, encoder: new SnapshotEncoder(capture.seq, capture.accountCount, Date.now()) };
    setImmediate(() => this.encodeSlice());
  }

  /** Encodes one slice, then yields to the event loop so batches go on between slices. */
  private encodeSlice(): void {
    const phase = this.phase;
    if (phase.kind !== 'encoding') return;
    try {
      const started = performance.now();
      const done = phase.capture.visit(this.options.snapshotSliceAccounts, phase.encoder.add);
      const snapshot = done ? this.finishEncoding(phase.capture, phase.encoder) : null;
      this.sliceMsMax = Math.max(this.sliceMsMax, performance.now() - started);
      if (snapshot === null) {
        setImmediate(() => this.encodeSlice());
        return;
      }
      this.phase = { kind: 'ready', snapshot };
      this.wake();
    } catch (error) {
      this.onFatal(`encoding the snapshot at seq ${phase.capture.seq} threw: ${errorDetail(error)}`);
    }
  }

  private finishEncoding(capture: AccountCapture, encoder: SnapshotEncoder): EncodedSnapshot {
    this.ledger.releaseCapture(capture);
    return encoder.finish();
  }

  /**
   * The next maintenance write, or null. A snapshot is offered only once every record it covers
   * is durable: LMDB would commit it after the batch anyway, but waiting makes it independent of
   * the order in which transactions were queued.
   */
  nextWrite(durableSeq: number): Write | null {
    const phase = this.phase;
    switch (phase.kind) {
      case 'idle':
      case 'encoding':
        return null;
      case 'ready':
        return phase.snapshot.info.seq <= durableSeq ? () => this.writeSnapshot(phase.snapshot, durableSeq) : null;
      case 'pruning':
        return () => this.prune(phase);
      default:
        return unreachable(phase);
    }
  }

  private async writeSnapshot(snapshot: EncodedSnapshot, durableSeq: number): Promise<void> {
    const { seq } = snapshot.info;
    if (seq <= this.newestSeq) throw new Error(`ubscore: snapshot at seq ${seq} is not newer than ${this.newestSeq}`);
    // Pair assertion of the ordering rule, checked where the write is submitted: the records the
    // snapshot covers are durable, and a read of the log on disk already finds the last of them.
    const onDisk = this.log.lastSeq();
    if (seq > durableSeq || seq > onDisk) {
      throw new Error(
        `ubscore: snapshot at seq ${seq} submitted before its records are durable (durable ${durableSeq}, on disk ${onDisk})`,
      );
    }
    await this.store.write(snapshot);
    this.newestSeq = seq;
    this.written++;
    this.onDurable(snapshot);
    this.phase = { kind: 'pruning', throughSeq: seq, snapshotsDeleted: false };
  }

  /**
   * One bounded prune transaction: the older snapshots first, then WAL records up to the snapshot.
   * The processed set is not touched: it lives in its own database, written with each batch, so
   * a repeated (req_id, op) still finds its first outcome after its WAL record is gone.
   */
  private async prune(phase: Extract<Phase, { kind: 'pruning' }>): Promise<void> {
    if (!phase.snapshotsDeleted) {
      await this.store.deleteBefore(phase.throughSeq);
      phase.snapshotsDeleted = true;
    } else if (this.log.prunedThroughSeq() < phase.throughSeq) {
      await this.log.pruneThrough(phase.throughSeq, WAL_PRUNE_RECORDS_PER_TXN_MAX);
    }
    if (phase.snapshotsDeleted && this.log.prunedThroughSeq() >= phase.throughSeq) {
      this.phase = { kind: 'idle' };
      // Records that arrived during the cycle may already make the next snapshot due.
      if (!this.closing) this.maybeCapture();
    }
  }

  /**
   * Drops the cycle under way and takes no new one: the ledger it reads is being thrown away
   * (after a failed write). A snapshot not yet written is simply not written: the WAL holds
   * every record it would cover, and the next state captures again when one is due.
   */
  dispose(): void {
    this.closing = true;
    if (this.phase.kind === 'encoding') this.ledger.releaseCapture(this.phase.capture);
    this.phase = { kind: 'idle' };
  }

  /** At close, once no write is in flight: drops the cycle under way and writes a final snapshot. */
  async closeWithSnapshot(durableSeq: number): Promise<void> {
    this.closing = true;
    if (this.phase.kind === 'encoding') this.ledger.releaseCapture(this.phase.capture);
    this.phase = { kind: 'idle' };
    const tail = this.ledger.lastSeq - this.newestSeq;
    if (tail < this.options.closeSnapshotRecordsMin || tail <= 0) return;
    const capture = this.ledger.captureAccounts();
    const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, Date.now());
    // Nothing else runs any more, so the whole capture is encoded in one go.
    capture.visit(Number.MAX_SAFE_INTEGER, encoder.add);
    await this.writeSnapshot(this.finishEncoding(capture, encoder), durableSeq);
  }
}
