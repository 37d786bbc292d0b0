// Every message that crosses a thread, as members of discriminated unions.
// Outcomes cross as values; no handler lets an exception cross a thread boundary.

import type { MessagePort } from 'node:worker_threads';
import type { CoordinatorConfig, NewTransfer, RefusalCode, TransferView } from '../src/coordinator/types.js';
import type { HaltState } from '../src/db/halt-state.js';
import type { MetricFamily } from '../src/metrics/registry.js';
import type { UbsCommand, UbsResult } from '../src/ubscore/types.js';
export type * from '../src/ubscore/types.js';

// ---------------------------------------------------------------------------------------------
// UBSCore: the data plane. A coordinator (or the main thread) posts `ubs.requests` on its own
// MessagePort; UBSCore answers with `ubs.replies` on the same port, only after the WAL records
// of every command in the reply are durable. Both travel in columns rather than one object per
// request: a structured clone of objects cost more than deciding the commands (actors/ubscore-wire.ts).

export type UbsRequest = { readonly id: number; readonly command: UbsCommand };

/**
 * `count` requests in arrival order: keyed operations packed in `bytes` (actors/ubscore-wire.ts), any
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
  | { readonly kind: 'ubs.fatal'; readonly message: string }
  /**
   * A WAL write failed (a full disk, say): RAM was thrown away and is being rebuilt from disk,
   * and every command is answered `unavailable` until a probe write succeeds. `since` is the
   * epoch ms the episode began; it is posted once per episode.
   */
  | { readonly kind: 'ubs.degraded'; readonly reason: string; readonly since: number }
  /** The disk takes writes again and RAM equals what is durable: UBSCore serves again. */
  | { readonly kind: 'ubs.recovered'; readonly since: number; readonly degradedMs: number; readonly attempts: number };

/** The control surface UBSCore exposes through comlink: low-frequency calls only. */
export type UbsControlApi = {
  stats(): Promise<UbsStats>;
  /** UBSCore's prom-client registry as values for GET /metrics; a failure is a value too. */
  metrics(): Promise<UbsMetricsOutcome>;
  /** Stop accepting commands, make every accepted command durable, close LMDB. */
  close(): Promise<{ readonly closed: true }>;
  /**
   * A backup's cut (src/backup/take.ts): stop deciding commands (they wait, in order, undecided),
   * make every decided one durable, and answer the WAL position they end at. The pause lifts by
   * itself after `pauseMsMax` if `resume` does not come first.
   */
  pause(pauseMsMax: number): Promise<UbsPauseOutcome>;
  /**
   * While paused: copy the LMDB environment into `dir` (created if missing; it must hold no
   * data.mdb yet) as `dir/data.mdb` (mdb_env_copy2 on an environment opened with a subdirectory), and read its ledger id.
   */
  copyTo(dir: string): Promise<UbsCopyOutcome>;
  /** Decides the commands held by the pause, in arrival order, and takes new ones again. */
  resume(): Promise<UbsResumeOutcome>;
};

export type UbsMetricsOutcome =
  | { readonly kind: 'metrics'; readonly families: readonly MetricFamily[] }
  | { readonly kind: 'failed'; readonly message: string };

export type UbsPauseOutcome = { readonly kind: 'paused'; readonly walSeq: number } | { readonly kind: 'refused'; readonly reason: string };
export type UbsCopyOutcome =
  | { readonly kind: 'copied'; readonly walSeq: number; readonly ledgerId: string | null; readonly copyMs: number }
  | { readonly kind: 'refused'; readonly reason: string };
/** `heldMessages`: port messages that waited; `expired`: the pause had already lifted by itself. */
export type UbsResumeOutcome = { readonly kind: 'resumed'; readonly heldMessages: number; readonly expired: boolean };

export type UbsStats = {
  readonly accounts: number;
  readonly walSeq: number;
  readonly batches: number;
  readonly commands: number;
  /** Present once a snapshot exists (loaded at start or written since) or is being taken. */
  readonly snapshots?: {
    /** Snapshots this core wrote since it started. */
    readonly written: number;
    /** The sequence number of the newest durable snapshot; 0 while the first is being taken. */
    readonly seq: number;
    /** The sequence number of a snapshot captured but not yet durable; null when none is. */
    readonly pendingSeq: number | null;
    /** WAL records up to this one were pruned after a durable snapshot. */
    readonly walPrunedThroughSeq: number;
    /** The longest the thread was blocked by one slice of snapshot encoding, in ms. */
    readonly sliceMsMax: number;
  };
};

export type UbsWorkerData = {
  readonly walDir: string;
  readonly batchMax: number;
  /** Take a snapshot every this many WAL records; 0 disables periodic snapshots. Default 100,000. */
  readonly snapshotEveryRecords?: number;
  /** `close` writes a snapshot when at least this many records follow the newest one. Default 1,000. */
  readonly closeSnapshotRecordsMin?: number;
  /** Accounts encoded per slice of a periodic snapshot, between batches. Default 20,000. */
  readonly snapshotSliceAccounts?: number;
  /**
   * No write is started while fewer bytes than this are free on the WAL's filesystem (README
   * "A full disk"); 0 disables the check. Default 256 MiB.
   */
  readonly diskReserveBytes?: number;
};

/**
 * UBSCore's helper that reads every durable processed-set key into a filter off UBSCore's thread
 * (actors/ubscore-filter-worker.ts): its input, and its one answer, the filter's bits handed over.
 */
export type UbsFilterWorkerData = {
  readonly walDir: string;
  readonly capacityKeys: number;
  readonly keysMin: number;
  /** Shared with UBSCore: set to 1 to stop the build; the thread then closes LMDB and exits. */
  readonly stop: Int32Array<SharedArrayBuffer>;
};
export type UbsFilterEvent =
  | { readonly kind: 'filter.built'; readonly words: Uint32Array<ArrayBuffer>; readonly keys: number }
  | { readonly kind: 'filter.failed'; readonly message: string };

// ---------------------------------------------------------------------------------------------
// Coordinators: the control of each shard, one piscina pool of one thread per shard.

export type CoordinatorWorkerData = {
  readonly config: CoordinatorConfig;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  readonly logFormat: 'json' | 'pretty';
};

/** One transfer's answer in a `coord.submitted` batch: the HTTP edge takes it as it is. */
export type SubmitAnswer =
  | { readonly kind: 'transfer'; readonly view: TransferView }
  | { readonly kind: 'refused'; readonly code: RefusalCode }
  | { readonly kind: 'error'; readonly message: string };

export type CoordinatorTask =
  | { readonly kind: 'coord.init'; readonly ubsPort: MessagePort }
  /** Creates and drives each transfer, all at once; answered by `coord.submitted` in the same order. */
  | { readonly kind: 'coord.submit_many'; readonly transfers: readonly NewTransfer[] }
  | { readonly kind: 'coord.drive'; readonly reqId: string }
  /** An operator changed an asset: forget cached assets before the next transfer. */
  | { readonly kind: 'coord.assets_changed' }
  /** The service was halted (a state) or resumed (null): refuse, or again accept, new transfers. */
  | { readonly kind: 'coord.halt'; readonly state: HaltState }
  /** The shard's prom-client registry as values (getMetricsAsJSON). */
  | { readonly kind: 'coord.metrics' }
  | { readonly kind: 'coord.stop' };

export type CoordinatorResult =
  | { readonly kind: 'coord.ready' }
  | { readonly kind: 'coord.done' }
  | { readonly kind: 'coord.metrics'; readonly families: readonly MetricFamily[] }
  | { readonly kind: 'coord.transfer'; readonly view: TransferView }
  | { readonly kind: 'coord.submitted'; readonly answers: readonly SubmitAnswer[] }
  | { readonly kind: 'coord.not_found' }
  | { readonly kind: 'coord.error'; readonly message: string }
  | { readonly kind: 'coord.stopped' };

/** Compile-time exhaustiveness guard for switches over a union's `kind`. */
export function unreachable(value: never): never {
  throw new Error(`unreachable: ${JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`);
}
