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

import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { expose } from 'comlink';
import { createLogger } from '../src/log.js';
import { Registry } from '../src/metrics/registry.js';
import { SpotLedger } from '../src/ubscore/core.js';
import type { AccountCapture, OpRecord } from '../src/ubscore/core.js';
import { RecordEncoder } from '../wal/codec.js';
import { WAL_PRUNE_RECORDS_PER_TXN_MAX, openWal } from '../wal/log.js';
import type { ProcessedWrite, WalLog, WalWrite } from '../wal/log.js';
import { SnapshotEncoder, SnapshotStore } from '../wal/snapshot.js';
import type { EncodedSnapshot } from '../wal/snapshot.js';
import { unreachable } from './protocol.js';
import { nodeEndpoint } from './ubscore-client.js';
import type {
  UbsControlApi,
  UbsParentEvent,
  UbsParentMessage,
  UbsPortMessage,
  UbsPortReply,
  UbsReply,
  UbsRequest,
  UbsStats,
  UbsWorkerData,
} from './protocol.js';

/** The largest `batchMax` accepted: commands (and so WAL records) per LMDB transaction; matches the UBS_BATCH_MAX bound in src/config.ts. */
export const UBS_BATCH_COMMANDS_MAX = 100_000;
export const UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT = 100_000;
/**
 * Replaying this few records at the next start costs about a millisecond, less than encoding and
 * syncing a snapshot of every account, so `close` skips the snapshot for a shorter tail.
 */
export const UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT = 1_000;
/** Measured about 4 ms per 20,000 accounts on the 2-core machine: well under the 50 ms budget. */
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT = 20_000;
/** Bounds the snapshot options so that no setting is effectively unbounded. */
export const UBS_SNAPSHOT_RECORDS_MAX = 1_000_000_000;
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX = 1_000_000;

/** Histogram bounds for UBSCore's group commit: sync time in seconds and records per batch. */
const WAL_SYNC_BUCKETS_S = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1];
const BATCH_RECORDS_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096];

const logger = createLogger({ level: 'warn', name: 'ubscore' });

type Options = Required<UbsWorkerData>;

type Batch = {
  readonly records: WalWrite[];
  readonly processed: ProcessedWrite[];
  /** Replies grouped by the port they answer, posted as one message per port. */
  readonly replies: Map<MessagePort, UbsReply[]>;
  commands: number;
};

function newBatch(): Batch {
  return { records: [], processed: [], replies: new Map(), commands: 0 };
}

function describe(error: unknown): string {
  return error instanceof Error ? `${error.message}\n${error.stack ?? ''}` : String(error);
}

function isPortMessage(message: unknown): message is UbsPortMessage {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as { kind?: unknown; requests?: unknown };
  return candidate.kind === 'ubs.requests' && Array.isArray(candidate.requests);
}

function hasValidId(request: unknown): request is UbsRequest {
  return typeof request === 'object' && request !== null && Number.isSafeInteger((request as { id?: unknown }).id);
}

// ---------------------------------------------------------------------------------------------
// Snapshots and pruning: one cycle at a time, idle → encoding → ready → pruning → idle.

type Phase =
  | { readonly kind: 'idle' }
  | { readonly kind: 'encoding'; readonly capture: AccountCapture; readonly encoder: SnapshotEncoder }
  | { readonly kind: 'ready'; readonly snapshot: EncodedSnapshot }
  | { readonly kind: 'pruning'; readonly throughSeq: number; snapshotsDeleted: boolean };

/** A write for the single writer: it resolves once durable. */
type Write = () => Promise<void>;

class Snapshotter {
  private phase: Phase = { kind: 'idle' };
  private written = 0;
  private sliceMsMax = 0;
  private closing = false;

  constructor(
    private readonly ledger: SpotLedger,
    private readonly log: WalLog,
    private readonly store: SnapshotStore,
    private readonly options: Options,
    /** The newest durable snapshot's seq: pruning and the next snapshot are measured from it. */
    private newestSeq: number,
    /** Asks the actor to offer the writer a turn: a write became ready. */
    private readonly wake: () => void,
    private readonly onFatal: (message: string) => void,
  ) {
    // A restart may follow a crash between a snapshot and its pruning: finish that pruning.
    if (newestSeq > 0) this.phase = { kind: 'pruning', throughSeq: newestSeq, snapshotsDeleted: false };
  }

  stats(): UbsStats['snapshots'] {
    const pendingSeq = this.phase.kind === 'encoding' ? this.phase.capture.seq : this.phase.kind === 'ready' ? this.phase.snapshot.info.seq : null;
    if (this.newestSeq === 0 && pendingSeq === null) return undefined;
    return { written: this.written, seq: this.newestSeq, pendingSeq, walPrunedThroughSeq: this.log.prunedThroughSeq(), sliceMsMax: this.sliceMsMax };
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
      this.onFatal(`encoding the snapshot at seq ${phase.capture.seq} threw: ${describe(error)}`);
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
      throw new Error(`ubscore: snapshot at seq ${seq} submitted before its records are durable (durable ${durableSeq}, on disk ${onDisk})`);
    }
    await this.store.write(snapshot);
    this.newestSeq = seq;
    this.written++;
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

// ---------------------------------------------------------------------------------------------
// The actor.

class UbsActor {
  /** Processed entries decided but not yet durable: the lookup must see them before LMDB. */
  private readonly overlay = new Map<string, OpRecord>();
  private readonly encoder = new RecordEncoder();
  private open: Batch = newBatch();
  /** Full batches waiting for the writer, oldest first. */
  private readonly sealed: Batch[] = [];
  private writing = false;
  /** True when the last write was a batch: a waiting maintenance write may go next. */
  private maintenanceTurn = true;
  private flushScheduled = false;
  private closing: Promise<{ readonly closed: true }> | null = null;
  private failed = false;
  private readonly ports = new Set<MessagePort>();
  private drainWaiters: (() => void)[] = [];
  private durableSeq: number;
  private batchesWritten = 0;
  private readonly metrics = new Registry();
  private commandsAnswered = 0;
  private readonly lookup = (opKey: string): OpRecord | undefined => this.overlay.get(opKey) ?? this.log.getProcessed(opKey);

  constructor(
    private readonly ledger: SpotLedger,
    private readonly log: WalLog,
    private readonly snapshots: Snapshotter,
    private readonly batchMax: number,
    private readonly onFatal: (message: string) => void,
  ) {
    this.durableSeq = ledger.lastSeq;
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
      accounts: this.ledger.accountCount,
      walSeq: this.durableSeq,
      batches: this.batchesWritten,
      commands: this.commandsAnswered,
    };
    const snapshots = this.snapshots.stats();
    const withMetrics = { ...base, metrics: this.metrics.snapshot() };
    return snapshots === undefined ? withMetrics : { ...withMetrics, snapshots };
  }

  /** Asks for a writer turn from outside a write (a snapshot finished encoding). */
  readonly wake = (): void => {
    if (this.closing === null) this.pump();
  };

  private onPortMessage(port: MessagePort, message: unknown): void {
    if (!isPortMessage(message)) {
      console.error('ubscore: dropped a malformed port message');
      return;
    }
    switch (message.kind) {
      case 'ubs.requests':
        this.onRequests(port, message.requests);
        break;
      default:
        unreachable(message.kind);
    }
  }

  private onRequests(port: MessagePort, requests: readonly UbsRequest[]): void {
    // After close nothing is taken: the caller's timeout reads as "unknown" and it retries,
    // idempotently, against the restarted core.
    if (this.closing !== null || this.failed) return;
    try {
      for (const request of requests) this.take(port, request);
    } catch (error) {
      // A throw while deciding is a programmer error and RAM may be half-applied: like a failed
      // write, only a restart and a replay from the durable log can be trusted.
      this.fatal(`deciding a command threw: ${describe(error)}`);
      return;
    }
    this.scheduleFlush();
  }

  private take(port: MessagePort, request: unknown): void {
    if (!hasValidId(request)) {
      console.error('ubscore: dropped a request without a valid id');
      return;
    }
    const decision = this.ledger.decide(request.command, this.lookup);
    const batch = this.open;
    if (decision.record !== null) {
      const bytes = this.encoder.encode(decision.record);
      batch.records.push({ seq: decision.record.seq, bytes });
      if (decision.processedKey !== null) {
        if (decision.record.kind !== 'op') throw new Error('ubscore: a processed key on a status record');
        batch.processed.push({ opKey: decision.processedKey, bytes });
        this.overlay.set(decision.processedKey, decision.record);
      }
    }
    let replies = batch.replies.get(port);
    if (replies === undefined) {
      replies = [];
      batch.replies.set(port, replies);
    }
    replies.push({ id: request.id, result: decision.result });
    batch.commands++;
    if (batch.commands >= this.batchMax) this.seal();
  }

  private seal(): void {
    if (this.open.commands === 0) return;
    const last = this.open.records[this.open.records.length - 1];
    // Every decided record joins the open batch at once, so the ledger stands at its last record.
    if (last !== undefined && last.seq !== this.ledger.lastSeq) {
      throw new Error(`ubscore: sealing a batch ending at seq ${last.seq} while the ledger is at ${this.ledger.lastSeq}`);
    }
    this.sealed.push(this.open);
    this.open = newBatch();
    if (this.closing === null) this.snapshots.maybeCapture();
  }

  /** Flushes once the messages of this turn are taken: no timer, no fixed wait. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.pump();
    });
  }

  /**
   * Starts the next write if the writer is free. While a batch is being written the open batch
   * keeps growing, and is sealed the moment the writer is free again: group commit. A waiting
   * maintenance write (snapshot, prune) goes right after a batch, so at most one runs between
   * two batches; none starts once close has begun.
   */
  private pump(): void {
    if (this.writing || this.failed) return;
    const maintenance = this.closing === null ? this.snapshots.nextWrite(this.durableSeq) : null;
    if (maintenance !== null && (this.maintenanceTurn || (this.sealed.length === 0 && this.open.commands === 0))) {
      this.startWrite(maintenance, () => this.onMaintained(), 'snapshot or prune');
      return;
    }
    if (this.sealed.length === 0) this.seal();
    const batch = this.sealed.shift();
    if (batch === undefined) {
      if (maintenance !== null) this.startWrite(maintenance, () => this.onMaintained(), 'snapshot or prune');
      else this.notifyDrained();
      return;
    }
    this.startWrite(() => this.write(batch), () => this.onDurable(batch), 'WAL write');
  }

  private startWrite(write: Write, onDone: () => void, label: string): void {
    this.writing = true;
    let promise: Promise<void>;
    try {
      promise = write();
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise.then(onDone, (error: unknown) => this.fatal(`${label} failed, RAM is ahead of disk: ${describe(error)}`));
  }

  private write(batch: Batch): Promise<void> {
    // A batch of read-only or refused commands writes nothing, but it still waits its turn:
    // what it read may have come from batches that were not yet durable.
    if (batch.records.length === 0) return Promise.resolve();
    const started = performance.now();
    return this.log.appendBatch(batch.records, batch.processed).then(() => {
      this.metrics.observe('ubscore_wal_sync_seconds', 'Time from submitting a WAL batch to LMDB until it is durable', WAL_SYNC_BUCKETS_S, {}, (performance.now() - started) / 1000);
      this.metrics.observe('ubscore_batch_records', 'WAL records per group commit (one sync each)', BATCH_RECORDS_BUCKETS, {}, batch.records.length);
    });
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
    for (const entry of batch.processed) this.overlay.delete(entry.opKey);
    const last = batch.records[batch.records.length - 1];
    if (last !== undefined) {
      this.durableSeq = last.seq;
      this.batchesWritten++;
    }
    this.commandsAnswered += batch.commands;
    for (const [port, replies] of batch.replies) {
      const reply: UbsPortReply = { kind: 'ubs.replies', replies };
      try {
        port.postMessage(reply);
      } catch (error) {
        // The client is gone; its effects are durable and a retry will read them as duplicates.
        console.error(`ubscore: could not post replies: ${describe(error)}`);
      }
    }
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
    this.onFatal(message);
  }

  close(): Promise<{ readonly closed: true }> {
    this.closing ??= this.drainAndClose();
    return this.closing;
  }

  private async drainAndClose(): Promise<{ readonly closed: true }> {
    // Every accepted command durable first; then no write is in flight, and no new one starts.
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
    for (const port of this.ports) port.close();
    try {
      // After the drain every decided record is durable, so the snapshot covers only durable ones.
      if (!this.failed) await this.snapshots.closeWithSnapshot(this.durableSeq);
    } catch (error) {
      // The WAL holds every record; the next start replays them without this snapshot.
      console.error(`ubscore: the closing snapshot failed: ${describe(error)}`);
    }
    try {
      await this.log.close();
    } catch (error) {
      // Every accepted command is already durable; a failing close cannot lose any of them.
      console.error(`ubscore: closing LMDB failed: ${describe(error)}`);
    }
    return { closed: true };
  }
}

function exposeControl(actor: UbsActor, port: MessagePort): void {
  const api: UbsControlApi = {
    stats: () => Promise.resolve(actor.stats()),
    close: () => actor.close(),
  };
  expose(api, nodeEndpoint(port));
}

// ---------------------------------------------------------------------------------------------
// Start-up: options, snapshot, replay.

function optionalCount(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`ubscore: workerData.${name} must be an integer in ${min}..${max}`);
  }
  return value;
}

function readWorkerData(data: unknown): Options {
  const candidate = (typeof data === 'object' && data !== null ? data : {}) as Partial<UbsWorkerData>;
  const { walDir, batchMax } = candidate;
  if (typeof walDir !== 'string' || walDir.length === 0) throw new Error('ubscore: workerData.walDir must be a path');
  if (typeof batchMax !== 'number' || !Number.isSafeInteger(batchMax) || batchMax < 1 || batchMax > UBS_BATCH_COMMANDS_MAX) {
    throw new Error(`ubscore: workerData.batchMax must be an integer in 1..${UBS_BATCH_COMMANDS_MAX}`);
  }
  return {
    walDir,
    batchMax,
    snapshotEveryRecords: optionalCount(candidate.snapshotEveryRecords, 'snapshotEveryRecords', UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT, 0, UBS_SNAPSHOT_RECORDS_MAX),
    closeSnapshotRecordsMin: optionalCount(candidate.closeSnapshotRecordsMin, 'closeSnapshotRecordsMin', UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT, 1, UBS_SNAPSHOT_RECORDS_MAX),
    snapshotSliceAccounts: optionalCount(candidate.snapshotSliceAccounts, 'snapshotSliceAccounts', UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT, 1, UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX),
  };
}

/**
 * The ledger as of the newest snapshot that verifies. If the newest is damaged, an older one (or
 * none, seq 0) may stand in only when every WAL record after it is still there; otherwise the
 * records between them are gone and starting would silently lose them, so start is refused.
 */
function loadSnapshot(store: SnapshotStore, prunedThrough: number): { ledger: SpotLedger; seq: number } {
  let damage: string | null = null;
  for (const seq of [...store.seqs(), 0]) {
    if (seq < prunedThrough) {
      const problem = damage ?? `no snapshot covers the WAL records through seq ${prunedThrough}, which were pruned`;
      throw new Error(`ubscore: ${problem}; the WAL is pruned through seq ${prunedThrough}, so no older state can be completed: refusing to start`);
    }
    const ledger = new SpotLedger();
    const loaded = seq === 0 ? null : store.load(seq, (userId, asset, available, status) => ledger.restoreAccount(userId, asset, available, status));
    if (loaded === null || loaded.ok) {
      if (loaded !== null) ledger.finishRestore(seq, loaded.record.accountCount);
      if (damage !== null) logger.critical('UBSCore fell back past a corrupt snapshot; every WAL record after the one used is present', { used_seq: seq, damage });
      return { ledger, seq };
    }
    damage ??= `the newest snapshot, at seq ${seq}, is corrupt: ${loaded.reason}`;
    logger.critical('UBSCore snapshot is corrupt; looking for an older state whose WAL tail is complete', { seq, reason: loaded.reason });
  }
  throw new Error('ubscore: unreachable: the seq 0 candidate always ends the search');
}

/** Replays every durable record after the ledger's seq; the log verifies checksums and sequence continuity. */
function replayInto(ledger: SpotLedger, wal: WalLog): number {
  const lastSeq = wal.lastSeq();
  if (ledger.lastSeq > lastSeq) {
    throw new Error(`ubscore: the snapshot at seq ${ledger.lastSeq} is ahead of the WAL, which ends at seq ${lastSeq}: refusing to start`);
  }
  const replayed = wal.replayInto(ledger.lastSeq + 1, (record) => ledger.applyRecord(record));
  if (ledger.lastSeq !== lastSeq) throw new Error(`ubscore: replay reached seq ${ledger.lastSeq}, log ends at ${lastSeq}`);
  return replayed;
}

type Restored = { readonly ledger: SpotLedger; readonly snapshotSeq: number; readonly snapshotLoadMs: number; readonly replayedRecords: number; readonly replayMs: number };

function restore(wal: WalLog, store: SnapshotStore): Restored {
  const started = performance.now();
  const { ledger, seq } = loadSnapshot(store, wal.prunedThroughSeq());
  const loaded = performance.now();
  const replayedRecords = replayInto(ledger, wal);
  return { ledger, snapshotSeq: seq, snapshotLoadMs: loaded - started, replayedRecords, replayMs: performance.now() - loaded };
}

function start(): void {
  const parent = parentPort;
  if (parent === null) throw new Error('ubscore-worker must run in a worker thread');
  const post = (event: UbsParentEvent): void => parent.postMessage(event);
  const die = (message: string): void => {
    post({ kind: 'ubs.fatal', message });
    process.exit(1);
  };
  try {
    const options = readWorkerData(workerData);
    const wal = openWal(options.walDir);
    const store = new SnapshotStore(wal.databases);
    const restored = restore(wal, store);
    let actor: UbsActor | null = null;
    const snapshots = new Snapshotter(restored.ledger, wal, store, options, restored.snapshotSeq, () => actor?.wake(), die);
    actor = new UbsActor(restored.ledger, wal, snapshots, options.batchMax, die);
    const ready = actor;
    parent.on('message', (message: UbsParentMessage) => {
      switch (message.kind) {
        case 'ubs.attach':
          ready.attach(message.port);
          break;
        case 'ubs.control':
          exposeControl(ready, message.port);
          break;
        default:
          unreachable(message);
      }
    });
    const { replayedRecords, replayMs, snapshotSeq, snapshotLoadMs } = restored;
    post({ kind: 'ubs.ready', replayedRecords, replayMs, snapshotSeq, snapshotLoadMs });
    // Pruning left over from before a crash starts now, between the first batches.
    ready.wake();
  } catch (error) {
    die(`ubscore: start failed: ${describe(error)}`);
  }
}

start();
