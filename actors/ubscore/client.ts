// The client side of UBSCore: a UbsClient talks to the core over one MessagePort, and
// `startUbsCore` starts the core's thread. Sends made in the same event-loop turn travel as one
// message; an answer that does not come in time resolves `null`, which the caller must read as
// "unknown, retry idempotently", never as a failure.

import { createRequire } from 'node:module';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { wrap } from 'comlink';
import type { Endpoint, Remote } from 'comlink';
import { oncePerTurn } from '../../src/turn-flush.js';
import { unreachable } from '../../src/unreachable.js';
import type { UbsCommand, UbsResult } from '../../src/domain/spot-commands.js';
import type { UbsControlApi, UbsHealthEvent, UbsReady } from '../../src/ubscore/control.js';
import type { UbsParentEvent, UbsParentMessage, UbsPortReply, UbsWorkerData } from '../protocol.js';
import { RequestPacker } from './wire.js';
import {
  UBS_CLIENT_BATCH_MAX_DEFAULT,
  UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT,
  UBS_SEND_TIMEOUT_MS_MAX,
  UBS_WORKER_YOUNG_GENERATION_MB_MAX,
} from '../../src/limits.js';

/**
 * Comlink's own Node adapter. Its ESM build ships no type declarations and its UMD typings
 * describe a default export the CommonJS module does not have, so it is loaded with `require`
 * and given the type it really has.
 */
export const nodeEndpoint = createRequire(import.meta.url)('comlink/dist/umd/node-adapter.js') as (port: MessagePort) => Endpoint;

type Resolve = (result: UbsResult | null) => void;

/** The requests of one posted message that share a timeout: one timer for all of them. */
type TimeoutGroup = { readonly timeoutMs: number; remaining: number; timer: NodeJS.Timeout | null; readonly ids: number[] };

type Waiter = { readonly resolve: Resolve; readonly group: TimeoutGroup };

function isPortReply(message: unknown): message is UbsPortReply {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as { kind?: unknown; ids?: unknown; results?: unknown };
  return (
    candidate.kind === 'ubs.replies' &&
    candidate.ids instanceof Float64Array &&
    Array.isArray(candidate.results) &&
    candidate.ids.length === candidate.results.length
  );
}

export class UbsClient {
  private readonly batchMax: number;
  private readonly inFlightMax: number;
  private readonly waiters = new Map<number, Waiter>();
  private readonly outbox = new RequestPacker();
  /** The timeout groups of the requests in the outbox, by timeout; armed when the outbox is posted. */
  private outboxGroups = new Map<number, TimeoutGroup>();
  /** Posts the outbox once the current turn has run, so sends made in it share one message. */
  private readonly scheduleFlush = oncePerTurn(() => this.flush());
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly port: MessagePort,
    opts: { readonly batchMax?: number; readonly inFlightMax?: number } = {},
  ) {
    const batchMax = opts.batchMax ?? UBS_CLIENT_BATCH_MAX_DEFAULT;
    const inFlightMax = opts.inFlightMax ?? UBS_CLIENT_IN_FLIGHT_MAX_DEFAULT;
    if (!Number.isSafeInteger(batchMax) || batchMax < 1) throw new Error(`UbsClient: batchMax must be a positive integer, got ${batchMax}`);
    if (!Number.isSafeInteger(inFlightMax) || inFlightMax < 1)
      throw new Error(`UbsClient: inFlightMax must be a positive integer, got ${inFlightMax}`);
    this.batchMax = batchMax;
    this.inFlightMax = inFlightMax;
    port.on('message', (message: unknown) => this.onMessage(message));
    // A closed port can never answer: every waiter becomes "unknown" now rather than at its timeout.
    port.on('close', () => this.shutDown());
  }

  /**
   * Resolves the core's answer, or null when none came within `timeoutMs`, the port is closed, or
   * `inFlightMax` sends already await an answer. Null means "unknown": retry idempotently later.
   */
  send(command: UbsCommand, timeoutMs: number): Promise<UbsResult | null> {
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > UBS_SEND_TIMEOUT_MS_MAX) {
      throw new Error(`UbsClient.send: timeoutMs must be an integer in 1..${UBS_SEND_TIMEOUT_MS_MAX}, got ${timeoutMs}`);
    }
    // Refusing here, before anything is sent, keeps every queue behind this client bounded.
    if (this.closed || this.waiters.size >= this.inFlightMax) return Promise.resolve(null);
    const id = this.nextId;
    this.nextId = id === Number.MAX_SAFE_INTEGER ? 1 : id + 1;
    return new Promise<UbsResult | null>((resolve) => {
      const group = this.groupFor(timeoutMs);
      group.remaining++;
      group.ids.push(id);
      this.waiters.set(id, { resolve, group });
      this.outbox.add(id, command);
      if (this.outbox.size >= this.batchMax) this.flush();
      else this.scheduleFlush();
    });
  }

  /** Stops the client: every pending send resolves null, and the port is closed. */
  close(): void {
    if (this.closed) return;
    this.shutDown();
    this.port.close();
  }

  private groupFor(timeoutMs: number): TimeoutGroup {
    let group = this.outboxGroups.get(timeoutMs);
    if (group === undefined) {
      group = { timeoutMs, remaining: 0, timer: null, ids: [] };
      this.outboxGroups.set(timeoutMs, group);
    }
    return group;
  }

  private flush(): void {
    if (this.outbox.size === 0 || this.closed) return;
    const message = this.outbox.take();
    const groups = this.outboxGroups;
    this.outboxGroups = new Map();
    // One timer per distinct timeout among the requests being posted.
    for (const group of groups.values()) group.timer = setTimeout(() => this.expire(group), group.timeoutMs);
    try {
      // The packed bytes are handed over, not copied: the client never reads them again.
      this.port.postMessage(message, [message.bytes.buffer]);
    } catch {
      // Nothing was sent (a closed port, or a command that cannot be cloned): unknown, not failed.
      for (const group of groups.values()) for (const id of group.ids) this.settle(id, null);
    }
  }

  private expire(group: TimeoutGroup): void {
    group.timer = null;
    for (const id of group.ids) {
      if (this.waiters.get(id)?.group === group) this.settle(id, null);
    }
  }

  private settle(id: number, result: UbsResult | null): void {
    const waiter = this.waiters.get(id);
    if (waiter === undefined) return; // Answered already, or timed out: a late reply is dropped.
    this.waiters.delete(id);
    const group = waiter.group;
    if (--group.remaining === 0 && group.timer !== null) {
      clearTimeout(group.timer);
      group.timer = null;
    }
    waiter.resolve(result);
  }

  private onMessage(message: unknown): void {
    if (!isPortReply(message)) return;
    switch (message.kind) {
      case 'ubs.replies': {
        const { ids, results } = message;
        for (let i = 0; i < ids.length; i++) this.settle(ids[i] as number, results[i] as UbsResult);
        break;
      }
      default:
        unreachable(message.kind);
    }
  }

  private shutDown(): void {
    this.closed = true;
    this.outbox.take();
    this.outboxGroups = new Map();
    for (const id of [...this.waiters.keys()]) this.settle(id, null);
  }
}

export type UbsCoreHandle = {
  readonly worker: Worker;
  readonly control: Remote<UbsControlApi>;
  /** Creates a MessageChannel, attaches one end to UBSCore, and returns the other. */
  connect(): MessagePort;
  readonly ready: UbsReady;
};

/**
 * Starts the UBSCore thread and waits until its snapshot is loaded and its WAL replayed; rejects
 * if it cannot start. The snapshot options are UbsWorkerData's; omitted ones take the defaults.
 */
export async function startUbsCore(
  opts: UbsWorkerData,
  onEvent: (event: UbsHealthEvent) => void = () => undefined,
): Promise<UbsCoreHandle> {
  const {
    walDir,
    batchMax,
    snapshotEveryRecords,
    closeSnapshotRecordsMin,
    snapshotSliceAccounts,
    diskReserveBytes,
    follow,
    spotLog,
    crashPoint,
  } = opts;
  const workerData: UbsWorkerData = {
    walDir,
    batchMax,
    snapshotEveryRecords,
    closeSnapshotRecordsMin,
    snapshotSliceAccounts,
    diskReserveBytes,
    follow,
    spotLog: spotLog ?? null,
    crashPoint: crashPoint ?? null,
  };
  const resourceLimits = { maxYoungGenerationSizeMb: UBS_WORKER_YOUNG_GENERATION_MB_MAX };
  const worker = new Worker(new URL('./worker.js', import.meta.url), { workerData, resourceLimits });
  const ready = await waitForReady(worker);
  // After start the core reports its health: a disk that takes no writes, and its return.
  worker.on('message', (event: UbsParentEvent) => {
    switch (event.kind) {
      case 'ubs.degraded':
      case 'ubs.recovered':
      case 'ubs.fatal':
        onEvent(event);
        break;
      case 'ubs.ready':
        onEvent({ kind: 'ubs.fatal', message: 'ubscore: a second ubs.ready after start' });
        break;
      default:
        unreachable(event);
    }
  });
  const post = (message: UbsParentMessage, port: MessagePort): void => worker.postMessage(message, [port]);
  const control = new MessageChannel();
  post({ kind: 'ubs.control', port: control.port2 }, control.port2);
  return {
    worker,
    control: wrap<UbsControlApi>(nodeEndpoint(control.port1)),
    connect(): MessagePort {
      const channel = new MessageChannel();
      post({ kind: 'ubs.attach', port: channel.port2 }, channel.port2);
      return channel.port1;
    },
    ready,
  };
}

function waitForReady(worker: Worker): Promise<UbsReady> {
  return new Promise((resolve, reject) => {
    const cleanUp = (): void => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const onMessage = (event: UbsParentEvent): void => {
      cleanUp();
      switch (event.kind) {
        case 'ubs.ready':
          resolve({
            replayedRecords: event.replayedRecords,
            replayMs: event.replayMs,
            snapshotSeq: event.snapshotSeq,
            snapshotLoadMs: event.snapshotLoadMs,
          });
          break;
        case 'ubs.fatal':
          reject(new Error(event.message));
          break;
        case 'ubs.degraded':
        case 'ubs.recovered':
          reject(new Error(`ubscore reported ${event.kind} before it was ready`));
          break;
        default:
          unreachable(event);
      }
    };
    const onError = (error: Error): void => {
      cleanUp();
      reject(error);
    };
    const onExit = (code: number): void => {
      cleanUp();
      reject(new Error(`ubscore worker exited with code ${code} before it was ready`));
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
  });
}
