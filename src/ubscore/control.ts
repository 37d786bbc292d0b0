// What the rest of the service may ask of UBSCore, as values: the port a command is sent through
// (UbsSend; the commands are src/domain/spot-commands.ts), the control calls (stats, metrics, close, a backup's
// pause and copy), their outcomes, and the health events the core reports. Typed here, in src,
// so that src uses UBSCore without knowing it runs on a thread; actors/ implements them.

import type { PgOwnerIdentity, PgTimeouts } from '../db/sql.js';
import type { CrashPoint } from '../faults/crash-points.js';
import type { MetricFamily } from '../metrics/registry.js';
import type { LogBlock } from './spot-log/store.js';
import type { UbsCommand, UbsResult } from '../domain/spot-commands.js';

/** One command to UBSCore with a timeout; `null` is "no answer in time": unknown, retry idempotently. */
export type UbsSend = (command: UbsCommand, timeoutMs: number) => Promise<UbsResult | null>;

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
  /**
   * A standby's core (started with `follow`): verifies the blocks of the owner's log (spot_log),
   * writes them to LMDB exactly as the owner's group commit did and applies them to RAM; blocks
   * already held are checked byte for byte and skipped. Refused once the core leads.
   */
  follow(blocks: readonly LogBlock[]): Promise<UbsFollowOutcome>;
  /**
   * Ends the follow mode: from now on the core takes commands, and writes every batch to
   * `spotLog` too (opened with the epoch this process claimed; null with SPOT_LOG=off).
   */
  lead(spotLog: UbsSpotLog | null): Promise<UbsLeadOutcome>;
  /**
   * The processed set's retention: one pass over LMDB's processed set that deletes every durable entry with
   * seq <= `plan.throughSeq` whose key (the req_id or ref) is not in `plan.keep`, in bounded steps
   * between batches; then the key filter is rebuilt for the live keys. Entries decided but not
   * yet durable are never touched. One pass at a time. A repeat of a pruned key is applied again:
   * the caller prunes only keys whose command can never come again (docs/design.md says why).
   */
  prune(plan: UbsPrunePlan): Promise<UbsPruneOutcome>;
};

/** What the main thread planned from PostgreSQL: the horizon H and the keys of every unfinished transfer and movement. */
export type UbsPrunePlan = { readonly throughSeq: number; readonly keep: readonly string[] };

/**
 * `pruned`: the pass reached the end of the processed set; `liveEntries` is LMDB's count after it,
 * `oldestLiveSeq` the lowest seq of an entry it kept (null when it kept none and none is left),
 * `ms` the pass's time. `refused`: a pass is under way, the plan is malformed, UBSCore closes,
 * a write failed or an entry did not decode; the entries already deleted stay deleted (a valid
 * set), and the next pass goes on from the start.
 */
export type UbsPruneOutcome =
  | {
      readonly kind: 'pruned';
      readonly scanned: number;
      readonly pruned: number;
      readonly liveEntries: number;
      readonly oldestLiveSeq: number | null;
      readonly ms: number;
    }
  | { readonly kind: 'refused'; readonly reason: string };

/**
 * `applied`: every block is durable in LMDB and applied (`lastSeq` is the core's last seq now).
 * `gap`: a block does not continue the core's log; `corrupt`: a block fails its checks;
 * `divergent`: a block the core already holds has other bytes; `refused`: the core leads, is
 * closing, or cannot write; `failed`: the LMDB write failed (the core rebuilds from disk). Nothing
 * of a call is applied unless every block of it verifies.
 */
export type UbsFollowOutcome =
  | { readonly kind: 'applied'; readonly lastSeq: number; readonly appliedBlocks: number; readonly skippedBlocks: number }
  | { readonly kind: 'gap' | 'corrupt' | 'divergent'; readonly lastSeq: number; readonly reason: string }
  | { readonly kind: 'refused' | 'failed'; readonly reason: string };
export type UbsLeadOutcome = { readonly kind: 'leading'; readonly lastSeq: number } | { readonly kind: 'refused'; readonly reason: string };

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

/** What the core reports once ready: the snapshot it loaded (seq 0 for none) and the WAL tail replayed after it. */
export type UbsReady = {
  readonly replayedRecords: number;
  readonly replayMs: number;
  readonly snapshotSeq: number;
  readonly snapshotLoadMs: number;
};

/**
 * What the core reports after it is ready: its WAL stopped taking writes, took them again, or it
 * stops (its thread's exit then stops the process).
 */
/** Which half of UBSCore's durability is failing: its LMDB WAL, or its log in PostgreSQL. */
export type UbsDegradedCause = 'wal' | 'pg-log';

export type UbsHealthEvent =
  | { readonly kind: 'ubs.fatal'; readonly message: string }
  /**
   * UBSCore cannot make its batches durable, posted once per episode (`since`: the epoch ms it
   * began). `cause` says which half and what commands meet meanwhile: `wal`, an LMDB write
   * failed (a full disk, say): RAM is rebuilt from disk and every command is answered
   * `unavailable` until a probe write succeeds; `pg-log`, PostgreSQL's log append had an unknown
   * outcome: it is retried, and commands wait, unanswered, until it commits.
   */
  | { readonly kind: 'ubs.degraded'; readonly cause: UbsDegradedCause; readonly reason: string; readonly since: number }
  /** The disk takes writes again and RAM equals what is durable: UBSCore serves again. */
  | { readonly kind: 'ubs.recovered'; readonly since: number; readonly degradedMs: number; readonly attempts: number };

/** The options as the core runs with them: every one set (actors/ubscore/start.ts fills the defaults). */
export type UbsOptions = Required<UbsCoreOptions>;

/** How UBSCore starts: where its WAL lives and its batch, snapshot and disk bounds (omitted ones take the defaults). */
export type UbsCoreOptions = {
  readonly walDir: string;
  readonly batchMax: number;
  /** Take a snapshot every this many WAL records; 0 disables periodic snapshots. Default 100,000. */
  readonly snapshotEveryRecords?: number;
  /** `close` writes a snapshot when at least this many records follow the newest one. Default 1,000. */
  readonly closeSnapshotRecordsMin?: number;
  /** Accounts encoded per slice of a periodic snapshot, between batches. Default 20,000. */
  readonly snapshotSliceAccounts?: number;
  /**
   * No write is started while fewer bytes than this are free on the WAL's filesystem (docs/operations.md,
   * "A full disk"); 0 disables the check. Default 256 MiB.
   */
  readonly diskReserveBytes?: number;
  /** Start as a standby: take no commands, only `follow` calls, until `lead`. Default false. */
  readonly follow?: boolean;
  /**
   * Where UBSCore also writes its log and snapshots (PostgreSQL's spot_log and
   * spot_snapshots, so the SPOT ledger survives the loss of its machine), on a connection of its own fenced by `owner`'s epoch; null or omitted: LMDB
   * only (SPOT_LOG=off, and tests of the core alone).
   */
  readonly spotLog?: UbsSpotLog | null;
  /** The crash point armed in this process (src/faults/crash-points.ts): UBSCore's own fire on its thread. Default none. */
  readonly crashPoint?: CrashPoint | null;
};

/** UBSCore's PostgreSQL log: the database, the owner identity its connection carries (a numeric epoch), and its timeouts. */
export type UbsSpotLog = {
  readonly databaseUrl: string;
  readonly owner: PgOwnerIdentity;
  readonly timeouts?: PgTimeouts;
};
