// The UBSCore thread: replays the WAL into the spot ledger, then serves client ports with group
// commit. Commands are decided strictly one at a time in arrival order; each decision joins the
// open batch; one batch is one LMDB transaction with one sync; and no reply of a batch is posted
// before that transaction is durable, because a reply that precedes durability can lose funds.

import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { expose } from 'comlink';
import { SpotLedger } from '../src/ubscore/core.js';
import type { OpRecord } from '../src/ubscore/core.js';
import { RecordEncoder } from '../wal/codec.js';
import { openWal } from '../wal/log.js';
import type { ProcessedWrite, WalLog, WalWrite } from '../wal/log.js';
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

class UbsActor {
  /** Processed entries decided but not yet durable: the lookup must see them before LMDB. */
  private readonly overlay = new Map<string, OpRecord>();
  private readonly encoder = new RecordEncoder();
  private open: Batch = newBatch();
  /** Full batches waiting for the writer, oldest first. */
  private readonly sealed: Batch[] = [];
  private writing = false;
  private flushScheduled = false;
  private closing: Promise<{ readonly closed: true }> | null = null;
  private failed = false;
  private readonly ports = new Set<MessagePort>();
  private drainWaiters: (() => void)[] = [];
  private durableSeq: number;
  private batchesWritten = 0;
  private commandsAnswered = 0;
  private readonly lookup = (opKey: string): OpRecord | undefined => this.overlay.get(opKey) ?? this.log.getProcessed(opKey);

  constructor(
    private readonly ledger: SpotLedger,
    private readonly log: WalLog,
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
    return {
      accounts: this.ledger.accountCount,
      walSeq: this.durableSeq,
      batches: this.batchesWritten,
      commands: this.commandsAnswered,
    };
  }

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
    this.sealed.push(this.open);
    this.open = newBatch();
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
   * Starts writing the oldest batch if the writer is free. While a batch is being written the
   * open batch keeps growing, and is sealed the moment the writer is free again: group commit.
   */
  private pump(): void {
    if (this.writing || this.failed) return;
    if (this.sealed.length === 0) this.seal();
    const batch = this.sealed.shift();
    if (batch === undefined) {
      this.notifyDrained();
      return;
    }
    this.writing = true;
    this.write(batch).then(
      () => this.onDurable(batch),
      (error: unknown) => this.fatal(`WAL write failed, RAM is ahead of disk: ${describe(error)}`),
    );
  }

  private write(batch: Batch): Promise<void> {
    // A batch of read-only or refused commands writes nothing, but it still waits its turn:
    // what it read may have come from batches that were not yet durable.
    if (batch.records.length === 0) return Promise.resolve();
    try {
      return this.log.appendBatch(batch.records, batch.processed);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private onDurable(batch: Batch): void {
    if (this.failed) return;
    this.writing = false;
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
    await new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
    for (const port of this.ports) port.close();
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

function readWorkerData(data: unknown): UbsWorkerData {
  const candidate = (typeof data === 'object' && data !== null ? data : {}) as Partial<UbsWorkerData>;
  const { walDir, batchMax } = candidate;
  if (typeof walDir !== 'string' || walDir.length === 0) throw new Error('ubscore: workerData.walDir must be a path');
  if (typeof batchMax !== 'number' || !Number.isSafeInteger(batchMax) || batchMax < 1 || batchMax > UBS_BATCH_COMMANDS_MAX) {
    throw new Error(`ubscore: workerData.batchMax must be an integer in 1..${UBS_BATCH_COMMANDS_MAX}`);
  }
  return { walDir, batchMax };
}

/** Replays every durable record; the log verifies checksums and sequence continuity. */
function replayInto(ledger: SpotLedger, log: WalLog): number {
  let replayed = 0;
  for (const record of log.replay()) {
    ledger.applyRecord(record);
    replayed++;
  }
  const lastSeq = log.lastSeq();
  if (ledger.lastSeq !== lastSeq) throw new Error(`ubscore: replay reached seq ${ledger.lastSeq}, log ends at ${lastSeq}`);
  return replayed;
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
    const started = performance.now();
    const data = readWorkerData(workerData);
    const log = openWal(data.walDir);
    const ledger = new SpotLedger();
    const replayedRecords = replayInto(ledger, log);
    const actor = new UbsActor(ledger, log, data.batchMax, die);
    parent.on('message', (message: UbsParentMessage) => {
      switch (message.kind) {
        case 'ubs.attach':
          actor.attach(message.port);
          break;
        case 'ubs.control':
          exposeControl(actor, message.port);
          break;
        default:
          unreachable(message);
      }
    });
    post({ kind: 'ubs.ready', replayedRecords, replayMs: performance.now() - started });
  } catch (error) {
    die(`ubscore: start failed: ${describe(error)}`);
  }
}

start();
