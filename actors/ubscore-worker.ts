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

import { mkdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { expose } from 'comlink';
import { Registry } from '../src/metrics/registry.js';
import type { SpotLedger } from '../src/ubscore/core.js';
import { BatchEncoder } from '../wal/block.js';
import type { WalBatch } from '../wal/block.js';
import { openWal } from '../wal/log.js';
import type { WalLog } from '../wal/log.js';
import { SnapshotStore } from '../wal/snapshot.js';
import { readLedgerId } from '../wal/meta.js';
import { unreachable } from './protocol.js';
import { nodeEndpoint } from './ubscore-client.js';
import type { UbsCommand, UbsControlApi, UbsCopyOutcome, UbsParentEvent, UbsParentMessage, UbsPauseOutcome, UbsPortMessage, UbsPortReply, UbsResult, UbsResumeOutcome, UbsStats } from './protocol.js';
import { PauseGate } from './ubscore-pause.js';
import { ProcessedSet } from './ubscore-processed.js';
import { RequestUnpacker } from './ubscore-wire.js';
import { Snapshotter, describeError as describe } from './ubscore-snapshotter.js';
import type { Write } from './ubscore-snapshotter.js';
import { readWorkerData, restore } from './ubscore-start.js';

/** Histogram bounds for UBSCore's group commit: sync time in seconds and records per batch. */
const WAL_SYNC_BUCKETS_S = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1];
const BATCH_RECORDS_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096];

/** The answers a batch owes one port, in columns: posted as one message once the batch is durable. */
type PortReplies = { readonly ids: number[]; readonly results: UbsResult[] };

type Batch = {
  /** Replies grouped by the port they answer, posted as one message per port. */
  readonly replies: Map<MessagePort, PortReplies>;
  commands: number;
  /** What the batch writes, set when it is sealed; null when it decided no record. */
  wal: WalBatch | null;
};

function newBatch(): Batch {
  return { replies: new Map(), commands: 0, wal: null };
}

function isPortMessage(message: unknown): message is UbsPortMessage {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as { kind?: unknown };
  return candidate.kind === 'ubs.requests';
}

// ---------------------------------------------------------------------------------------------
// The actor.

class UbsActor {
  /** Encodes the open batch's records as they are decided. */
  private readonly encoder = new BatchEncoder();
  private readonly unpacker = new RequestUnpacker();
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
  /** A backup's pause: while it holds, messages wait undecided. */
  private readonly gate = new PauseGate();

  constructor(
    private readonly ledger: SpotLedger,
    private readonly log: WalLog,
    private readonly snapshots: Snapshotter,
    /** The processed set: LMDB, the entries not yet durable, and a filter of every key. */
    private readonly processed: ProcessedSet,
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
    const processed = this.processed.stats();
    this.metrics.set('ubscore_processed_filter_ready', 'Whether the processed-set filter holds every key (1), so fresh keys skip LMDB', {}, processed.filterReady ? 1 : 0);
    this.metrics.set('ubscore_processed_filter_keys', 'Keys in the processed-set filter', {}, processed.filterKeys);
    this.metrics.set('ubscore_processed_lmdb_reads', 'Processed-set lookups that read LMDB since UBSCore started', {}, processed.lmdbReads);
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
    const gate = this.gate.hold(port, message);
    if (gate === 'held') return;
    if (gate === 'dropped') {
      console.error('ubscore: dropped a port message: too many held by a backup pause; its callers retry');
      return;
    }
    try {
      const problem = this.unpacker.unpack(message, (id, command) => this.take(port, id, command));
      // The requests before the damage were taken; the rest time out at the client as "unknown".
      if (problem !== null) console.error(`ubscore: dropped the rest of a malformed port message: ${problem}`);
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
      console.error('ubscore: dropped a request without a valid id');
      return;
    }
    // decide trusts no field of what it is given: the command came from another thread.
    const decision = this.ledger.decide(command as UbsCommand, this.processed.lookup);
    const batch = this.open;
    if (decision.record !== null) {
      this.encoder.add(decision.record, decision.processedKey);
      if (decision.processedKey !== null) {
        if (decision.record.kind !== 'op') throw new Error('ubscore: a processed key on a status record');
        this.processed.add(decision.processedKey, decision.record);
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
    if (wal !== null && wal.lastSeq !== this.ledger.lastSeq) {
      throw new Error(`ubscore: sealing a batch ending at seq ${wal.lastSeq} while the ledger is at ${this.ledger.lastSeq}`);
    }
    this.open.wal = wal;
    this.processed.seal();
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
    promise
      .then(onDone, (error: unknown) => this.fatal(`${label} failed, RAM is ahead of disk: ${describe(error)}`))
      // A throw while answering a durable write is a broken assertion: stop like any other.
      .catch((error: unknown) => this.fatal(`answering a ${label} threw: ${describe(error)}`));
  }

  private write(batch: Batch): Promise<void> {
    // A batch of read-only or refused commands writes nothing, but it still waits its turn:
    // what it read may have come from batches that were not yet durable.
    const wal = batch.wal;
    if (wal === null) return Promise.resolve();
    const started = performance.now();
    return this.log.appendBatch(wal).then(() => {
      this.metrics.observe('ubscore_wal_sync_seconds', 'Time from submitting a WAL batch to LMDB until it is durable', WAL_SYNC_BUCKETS_S, {}, (performance.now() - started) / 1000);
      this.metrics.observe('ubscore_batch_records', 'WAL records per group commit (one sync each)', BATCH_RECORDS_BUCKETS, {}, wal.lastSeq - wal.firstSeq + 1);
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
    this.processed.settle(batch.wal?.processed ?? []);
    if (batch.wal !== null) {
      this.durableSeq = batch.wal.lastSeq;
      this.batchesWritten++;
    }
    this.commandsAnswered += batch.commands;
    // The next batch goes to LMDB's writer first, then this one is answered: the single writer
    // bounds group commit, so it must not wait while thousands of replies are serialized.
    this.pump();
    for (const [port, replies] of batch.replies) {
      const reply: UbsPortReply = { kind: 'ubs.replies', ids: Float64Array.from(replies.ids), results: replies.results };
      try {
        port.postMessage(reply);
      } catch (error) {
        // The client is gone; its effects are durable and a retry will read them as duplicates.
        console.error(`ubscore: could not post replies: ${describe(error)}`);
      }
    }
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

  /**
   * Stops deciding, then waits until every decided command is durable: the WAL position answered
   * is then exactly the ledger's, and stays so until `resume` (or the time limit).
   */
  async pause(pauseMsMax: number): Promise<UbsPauseOutcome> {
    if (this.closing !== null || this.failed) return { kind: 'refused', reason: 'UBSCore is closing or has failed' };
    if (this.gate.paused) return { kind: 'refused', reason: 'UBSCore is already paused by another backup' };
    this.gate.start(pauseMsMax, () => {
      console.error(`ubscore: a backup pause lifted by itself after ${pauseMsMax} ms`);
      this.resume();
    });
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
    if (this.failed || !this.gate.paused) return { kind: 'refused', reason: 'UBSCore failed, or the pause lifted, before every decided command was durable' };
    // Pair assertion: nothing decided is waiting for the writer.
    if (this.durableSeq !== this.ledger.lastSeq) throw new Error(`ubscore: paused at durable seq ${this.durableSeq} with the ledger at ${this.ledger.lastSeq}`);
    return { kind: 'paused', walSeq: this.durableSeq };
  }

  /** Copies the environment while paused: the copy holds exactly the records through the paused position. */
  async copyTo(dir: string): Promise<UbsCopyOutcome> {
    if (!this.gate.paused) return { kind: 'refused', reason: 'UBSCore is not paused' };
    const walSeq = this.durableSeq;
    const started = performance.now();
    try {
      // lmdb-js's root database backup: mdb_env_copy, one read transaction, so one instant.
      // Without compaction: a page-for-page copy is the shortest pause. mdb_env_copy2 writes
      // dir/data.mdb and needs the directory to exist.
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await this.log.databases.env.backup(dir, false);
    } catch (error) {
      return { kind: 'refused', reason: `the LMDB copy failed: ${describe(error)}` };
    }
    if (!this.gate.paused || this.durableSeq !== walSeq) return { kind: 'refused', reason: 'the pause lifted during the copy' };
    return { kind: 'copied', walSeq, ledgerId: readLedgerId(this.log.databases), copyMs: Math.round(performance.now() - started) };
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
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
    for (const port of this.ports) port.close();
    this.processed.close();
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
    pause: (pauseMsMax) => actor.pause(pauseMsMax),
    copyTo: (dir) => actor.copyTo(dir),
    resume: () => Promise.resolve(actor.resume()),
  };
  expose(api, nodeEndpoint(port));
}

// ---------------------------------------------------------------------------------------------
// Start-up (options and restore are in ubscore-start.ts).

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
    actor = new UbsActor(restored.ledger, wal, snapshots, new ProcessedSet(wal, options.walDir), options.batchMax, die);
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
