// Every message that crosses a thread, as members of discriminated unions, for each actor by
// transport: its start data (workerData), its parent port, its raw MessagePorts, its comlink
// surface, its piscina tasks; `UbsTransports` and `CoordinatorTransports` list them side by side.
// The values inside a message (a command, a transfer, a write) are the service's own types,
// imported from src/ and never re-exported: src/ uses them without knowing a thread exists.
// Outcomes cross as values; no handler lets an exception cross a thread boundary.

import type { MessagePort } from 'node:worker_threads';
import type { CoordinatorConfig } from '../src/coordinator/types.js';
import type { NewTransfer, SubmitReply } from '../src/domain/transfer.js';
import type { VersionedHalt } from '../src/db/halt-state.js';
import type { WriteItem, WriteResult } from '../src/db/transfer-writes.js';
import type { MetricFamily } from '../src/metrics/registry.js';
import type { UbsControlApi, UbsCoreOptions, UbsHealthEvent } from '../src/ubscore/control.js';
import type { FilterBuildInput, FilterBuildOutcome } from '../src/ubscore/processed/processed.js';
import type { UbsCommand, UbsResult } from '../src/domain/spot-commands.js';

// ---------------------------------------------------------------------------------------------
// UBSCore: the data plane. A coordinator (or the main thread) posts `ubs.requests` on its own
// MessagePort; UBSCore answers with `ubs.replies` on the same port, only after the WAL records
// of every command in the reply are durable. Both travel in columns rather than one object per
// request: a structured clone of objects cost more than deciding the commands (actors/ubscore/wire.ts).

export type UbsRequest = { readonly id: number; readonly command: UbsCommand };

/**
 * `count` requests in arrival order: keyed operations packed in `bytes` (actors/ubscore/wire.ts), any
 * other command as an object of `others`, its place in the order marked in `bytes`.
 */
export type UbsPortMessage = {
  readonly kind: 'ubs.requests';
  readonly count: number;
  readonly bytes: Uint8Array<ArrayBuffer>;
  readonly others: readonly UbsRequest[];
};
/**
 * `results[i]` answers the request `ids[i]`. Common results are shared objects, which a clone
 * writes once per message.
 */
export type UbsPortReply = { readonly kind: 'ubs.replies'; readonly ids: Float64Array; readonly results: readonly UbsResult[] };

/** Messages from the main thread to the UBSCore worker on its parent port. */
export type UbsParentMessage =
  /** Serve a new client (a coordinator, or the main thread) on this port. */
  | { readonly kind: 'ubs.attach'; readonly port: MessagePort }
  /** Expose the control API (comlink) on this port. */
  | { readonly kind: 'ubs.control'; readonly port: MessagePort };

/** Messages from the UBSCore worker to the main thread on its parent port. */
export type UbsParentEvent =
  /**
   * `snapshotSeq` is the snapshot the ledger was loaded from (0 for none) and `snapshotLoadMs` the
   * time to read, verify and load it; `replayMs` is the time to replay the WAL records after it.
   */
  | {
      readonly kind: 'ubs.ready';
      readonly replayedRecords: number;
      readonly replayMs: number;
      readonly snapshotSeq: number;
      readonly snapshotLoadMs: number;
    }
  | UbsHealthEvent;

/** The UBSCore thread's start options, as src/ gives them. */
export type UbsWorkerData = UbsCoreOptions;

/**
 * What crosses UBSCore's thread boundary, by transport. Its control surface is declared in src/
 * (src/ubscore/control.ts `UbsControlApi`), which calls it without knowing it is a thread.
 */
export type UbsTransports = {
  readonly workerData: UbsWorkerData;
  readonly parentPort: { readonly toCore: UbsParentMessage; readonly fromCore: UbsParentEvent };
  readonly clientPort: { readonly toCore: UbsPortMessage; readonly fromCore: UbsPortReply };
  readonly comlink: UbsControlApi;
  /**
   * The helper that reads every durable processed-set key into a filter off UBSCore's thread
   * (actors/ubscore/filter-worker.ts): the processed set's own input and answer, served as they are.
   */
  readonly filterHelper: { readonly workerData: FilterBuildInput; readonly fromHelper: FilterBuildOutcome };
};

// ---------------------------------------------------------------------------------------------
// Coordinators: one piscina pool of one thread per shard. New transfers travel on each shard's
// submit port, in batches, and each is answered on it the moment its own drive ends (the answers
// of one turn share a message); an operator's drive is a piscina task; control (metrics, assets,
// halt, stop) goes through each shard's comlink port.

export type CoordinatorWorkerData = {
  readonly config: CoordinatorConfig;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  readonly logFormat: 'json' | 'pretty';
};

export type CoordinatorTask =
  /**
   * Starts the shard: its UBSCore port, its submit port, the port its control API (comlink) is
   * exposed on, and with several shards its end of the shared writer's ports: shard 0 serves
   * every other shard's writes (`writeServePorts`), each other shard sends its own on `writeLinkPort`.
   */
  | {
      readonly kind: 'coord.init';
      readonly ubsPort: MessagePort;
      readonly submitPort: MessagePort;
      readonly controlPort: MessagePort;
      readonly writeServePorts: readonly MessagePort[];
      readonly writeLinkPort: MessagePort | null;
    }
  | { readonly kind: 'coord.drive'; readonly reqId: string };

export type CoordinatorResult =
  | { readonly kind: 'coord.ready' }
  /** The answer to `coord.drive`, in the shape of a submitted transfer's. */
  | { readonly kind: 'coord.drove'; readonly reply: SubmitReply }
  | { readonly kind: 'coord.error'; readonly message: string };

/** Main thread to shard, on the submit port: new transfers, each with the id its answer carries back. */
export type CoordinatorSubmit = {
  readonly kind: 'coord.submit';
  readonly ids: readonly number[];
  readonly transfers: readonly NewTransfer[];
};

/**
 * Shard to main thread, on the submit port: the transfers whose drives ended in one turn, each
 * the shard's own reply (the HTTP edge takes it as it is), `ids[i]` answered by `answers[i]`.
 */
export type CoordinatorAnswers = {
  readonly kind: 'coord.answers';
  readonly ids: readonly number[];
  readonly answers: readonly SubmitReply[];
};

/** Shard i to shard 0, on its write port: transfer writes for the writer every shard shares, each with the id its outcome carries back. */
export type SharedWrites = {
  readonly kind: 'writes.request';
  readonly ids: readonly number[];
  readonly items: readonly WriteItem[];
};

/**
 * One shared write's outcome, as a value: the writer's result, or the error it threw, by its
 * message and, for a database error, its SQLSTATE (or the driver's code), which the shard's
 * adapters read to tell a refusal from an unknown outcome.
 */
export type SharedWriteOutcome =
  | { readonly kind: 'result'; readonly result: WriteResult }
  | { readonly kind: 'failed'; readonly message: string; readonly code: string | null };

/** Shard 0 to shard i: the writes that ended in one turn, `ids[i]` answered by `outcomes[i]`. */
export type SharedWriteAnswers = {
  readonly kind: 'writes.answers';
  readonly ids: readonly number[];
  readonly outcomes: readonly SharedWriteOutcome[];
};

/**
 * The control surface each coordinator shard exposes through comlink on its own MessagePort, so
 * control never waits behind the shard's transfers in piscina's task queue. Comlink has no
 * timeout: the main thread bounds every call. Each outcome is a value; none is thrown.
 */
export type CoordinatorControlApi = {
  /** The shard's prom-client registry as values (getMetricsAsJSON). */
  metrics(): Promise<CoordinatorMetricsOutcome>;
  /** An operator changed an asset: forget cached assets and daily tallies before the next transfer. */
  assetsChanged(): Promise<CoordinatorControlOutcome>;
  /** The service was halted (a state) or resumed (null): refuse, or again accept, new transfers. */
  haltChanged(halt: VersionedHalt): Promise<CoordinatorControlOutcome>;
  /** Stops the shard's timers and drives, and closes its UBSCore port and PostgreSQL pool. */
  stop(): Promise<CoordinatorStopOutcome>;
};

export type CoordinatorMetricsOutcome =
  | { readonly kind: 'metrics'; readonly families: readonly MetricFamily[] }
  | { readonly kind: 'failed'; readonly message: string };
export type CoordinatorControlOutcome = { readonly kind: 'done' } | { readonly kind: 'failed'; readonly message: string };
export type CoordinatorStopOutcome = { readonly kind: 'stopped' } | { readonly kind: 'failed'; readonly message: string };

/** What crosses a coordinator shard's thread boundary, by transport. */
export type CoordinatorTransports = {
  readonly workerData: CoordinatorWorkerData;
  readonly piscina: { readonly task: CoordinatorTask; readonly result: CoordinatorResult };
  readonly submitPort: { readonly toShard: CoordinatorSubmit; readonly fromShard: CoordinatorAnswers };
  readonly writePort: { readonly toWriter: SharedWrites; readonly fromWriter: SharedWriteAnswers };
  readonly comlink: CoordinatorControlApi;
};
