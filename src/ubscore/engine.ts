// UBSCore's engine: it takes its clients' messages (from ports that only actors/ubscore/ knows,
// through a RequestWire) and decides their commands strictly one at a time in arrival order, and answers the main thread's control calls (stats,
// metrics, a backup's pause and copy, a retention pass over the processed set, close). What it decides is written by the group-commit writer
// (group-commit.ts), which posts no reply before its batch is durable; a write that fails starts
// a degraded episode (degraded.ts) until the disk takes writes again.

import { performance } from 'node:perf_hooks';
import { oncePerTurn } from '../turn-flush.js';
import { copyEnvironment } from '../../wal/copy.js';
import { readLedgerId } from '../../wal/meta.js';
import type { UbsCommand } from '../domain/spot-commands.js';
import type {
  UbsCopyOutcome,
  UbsFollowOutcome,
  UbsHealthEvent,
  UbsLeadOutcome,
  UbsMetricsOutcome,
  UbsPauseOutcome,
  UbsPruneOutcome,
  UbsPrunePlan,
  UbsResumeOutcome,
  UbsStats,
} from './control.js';
import type { CrashPoint } from '../faults/crash-points.js';
import { ProcessedPruner } from './processed/pruner.js';
import { PauseGate } from './pause.js';
import { errorDetail as describe } from '../error-text.js';
import type { UbsMetrics } from './metrics.js';
import type { PgLog } from './durability/pg-log.js';
import type { CoreState } from './state.js';
import { answerWriteFailed, followedBatch, STANDBY, WAL_UNWRITABLE, type Answer, type Batch, type Replies } from './durability/batch.js';
import { applyFollowed, planFollow } from './spot-log/follow.js';
import type { LogBlock } from './spot-log/store.js';
import { closeForRebuild, DegradedEpisode, logRebuilt } from './durability/degraded.js';
import { GroupCommit } from './durability/group-commit.js';
import { logger } from './log.js';

/** How a client's message is read and answered: the thread's wire format, which actors/ubscore/ports.ts knows. */
export type RequestWire<To, Message> = {
  /** Calls `take` for each request of `message`, in order; names the damage when the rest of it is unreadable, else null. */
  readonly unpack: (message: Message, take: (id: number, command: unknown) => void) => string | null;
  readonly answer: Answer<To>;
};

/** What the engine needs from its thread: stop the process, tell the main thread, reopen the state, read and answer clients. */
type EngineHooks<To, Message> = {
  readonly onFatal: (message: string) => void;
  readonly post: (event: UbsHealthEvent) => void;
  readonly wire: RequestWire<To, Message>;
  /** Closes every client's channel: the engine has closed and answers nothing more. */
  readonly closeClients: () => void;
  /** Opens the state from disk as at start-up (src/ubscore/state.ts); throws on failure. */
  readonly reopen: () => CoreState;
  readonly walDir: string;
  /** No write starts with fewer bytes free than this on the WAL's filesystem; 0: no check. */
  readonly diskReserveBytes: number;
  /** Start as a standby's core: no commands, only followed blocks, until `lead` (follow.ts). */
  readonly follow: boolean;
  /** UBSCore's log in PostgreSQL, written beside LMDB's; null: LMDB only (or a standby's core until it leads). */
  readonly pgLog: PgLog | null;
  readonly metrics: UbsMetrics;
  /** The armed crash point's hook (src/faults/crash-points.ts); a no-op unless one is armed. */
  readonly crash: (point: CrashPoint) => void;
};

export class UbsEngine<To, Message> {
  /** Flushes once the messages of this turn are taken: no timer, no fixed wait. */
  private readonly scheduleFlush = oncePerTurn(() => this.writer.pump());
  private closing: Promise<{ readonly closed: true }> | null = null;
  private failed = false;
  /** Non-null while the disk takes no writes: every command is answered `unavailable`. */
  private degraded: DegradedEpisode | null = null;
  /** A backup's pause: while it holds, messages wait undecided. */
  private readonly gate = new PauseGate<To, Message>();
  private readonly metrics: UbsMetrics;
  private readonly writer: GroupCommit<To>;
  /** A standby's core: commands are refused, the owner's blocks are followed. */
  private following: boolean;
  /** Where batches also go (PostgreSQL's spot_log); a standby's core gets it when it leads. */
  private pgLog: PgLog | null;
  /** Follow calls run one at a time, in the order they came. */
  private followed: Promise<unknown> = Promise.resolve();
  /** The retention passes over the processed set, one at a time. */
  private readonly pruner: ProcessedPruner;

  constructor(
    /** The ledger, its LMDB environment, the snapshot cycle and the processed set: replaced whole after a failed write. */
    private state: CoreState,
    batchMax: number,
    private readonly hooks: EngineHooks<To, Message>,
  ) {
    this.following = hooks.follow;
    this.pgLog = hooks.pgLog;
    this.metrics = hooks.metrics;
    this.writer = new GroupCommit(
      {
        state: () => this.state,
        failed: () => this.failed,
        writable: () => !this.failed && this.degraded === null,
        closing: () => this.closing !== null,
        writeFailed: (label, error, batch) => this.onWriteFailed(label, error, batch),
        answer: hooks.wire.answer,
        fatal: (message) => this.fatal(message),
        walDir: hooks.walDir,
        diskReserveBytes: hooks.diskReserveBytes,
        batchMax,
        pgLog: () => this.pgLog,
        pruneStep: () => this.pruner.nextWrite(),
      },
      this.metrics,
    );
    this.pruner = new ProcessedPruner({
      state: () => this.state,
      wake: this.wake,
      crash: hooks.crash,
      metrics: this.metrics,
    });
  }

  /** The state now (a rebuild after a failed write replaces it whole). */
  currentState(): CoreState {
    return this.state;
  }

  /** A close has begun: no client is taken any more. */
  get closed(): boolean {
    return this.closing !== null;
  }

  stats(): UbsStats {
    const base = {
      accounts: this.state.ledger.accountCount,
      walSeq: this.writer.durableSeq,
      batches: this.writer.batchesWritten,
      commands: this.writer.commandsAnswered,
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
    if (this.closing === null) this.writer.pump();
  };

  /** Decides the requests of one client's message, in order; they are answered once durable. */
  receive(to: To, message: Message): void {
    // After close nothing is taken: the caller's timeout reads as "unknown" and it retries,
    // idempotently, against the restarted core.
    if (this.closing !== null || this.failed) return;
    if (this.degraded !== null || this.following) {
      this.refuseAll(to, message);
      return;
    }
    const gate = this.gate.hold(to, message);
    if (gate === 'held') return;
    if (gate === 'dropped') {
      logger.error('dropped a port message: too many held by a backup pause; its callers retry');
      return;
    }
    try {
      const problem = this.hooks.wire.unpack(message, (id, command) => this.take(to, id, command));
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

  /**
   * While the disk fails, or while a standby follows: every request of `message` is answered
   * `unavailable` at once (an unknown outcome: the caller retries), nothing is decided.
   */
  private refuseAll(to: To, message: Message): void {
    const refusal = this.following ? STANDBY : WAL_UNWRITABLE;
    const replies: Replies = { ids: [], results: [] };
    const problem = this.hooks.wire.unpack(message, (id) => {
      if (!Number.isSafeInteger(id)) return;
      replies.ids.push(id);
      replies.results.push(refusal);
    });
    if (problem !== null) logger.error('dropped the rest of a malformed port message', { problem });
    if (replies.ids.length > 0) this.hooks.wire.answer(to, replies);
  }

  private take(to: To, id: number, command: unknown): void {
    if (!Number.isSafeInteger(id)) {
      logger.error('dropped a request without a valid id');
      return;
    }
    // decide trusts no field of what it is given: the command came from another thread.
    const decision = this.state.ledger.decide(command as UbsCommand, this.state.processed.lookup);
    this.writer.join(to, id, decision);
  }

  /**
   * A write failed, so RAM is ahead of disk. The failed batch (none for a maintenance write),
   * every sealed one and the open one were decided on RAM that is now thrown away: each of
   * their commands is answered `unavailable`, and the state is rebuilt from disk.
   */
  private onWriteFailed(label: string, error: unknown, batch: Batch<To> | null): void {
    if (this.failed || this.degraded !== null) return;
    this.pruner.end(`a ${label} failed: UBSCore rebuilds from disk`);
    const undurable = this.writer.abandon(batch);
    const degraded = new DegradedEpisode({
      walDir: this.hooks.walDir,
      diskReserveBytes: this.hooks.diskReserveBytes,
      rebuild: () => this.rebuild(),
      recovered: (attempts) => this.onRecovered(attempts),
      post: this.hooks.post,
      fatal: (message) => this.fatal(message),
      closing: () => this.closing !== null,
      drained: () => this.writer.notifyDrained(),
    });
    this.degraded = degraded;
    answerWriteFailed(undurable, this.hooks.wire.answer);
    degraded.report(label, error, countCommands(undurable));
  }

  /** Throws RAM away and restores it from disk exactly as at start-up. */
  private async rebuild(): Promise<void> {
    await closeForRebuild(this.state);
    this.state = this.hooks.reopen();
    this.writer.rebased();
    logRebuilt(this.state, this.writer.durableSeq);
  }

  private onRecovered(attempts: number): void {
    const degraded = this.degraded;
    if (degraded === null || this.closing !== null) return;
    this.degraded = null;
    this.writer.recovered();
    degraded.ended(attempts, this.writer.durableSeq);
    this.writer.pump();
  }

  private fatal(message: string): void {
    if (this.failed) return;
    this.failed = true;
    this.pruner.end('UBSCore failed');
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
    await this.writer.drained();
    if (this.failed || this.degraded !== null || !this.gate.paused)
      return { kind: 'refused', reason: 'UBSCore failed, or the pause lifted, before every decided command was durable' };
    // Pair assertion: nothing decided is waiting for the writer.
    if (this.writer.durableSeq !== this.state.ledger.lastSeq)
      throw new Error(`ubscore: paused at durable seq ${this.writer.durableSeq} with the ledger at ${this.state.ledger.lastSeq}`);
    return { kind: 'paused', walSeq: this.writer.durableSeq };
  }

  /** Copies the environment while paused: the copy holds exactly the records through the paused position. */
  async copyTo(dir: string): Promise<UbsCopyOutcome> {
    if (!this.gate.paused) return { kind: 'refused', reason: 'UBSCore is not paused' };
    const walSeq = this.writer.durableSeq;
    const started = performance.now();
    try {
      await copyEnvironment(this.state.log.databases, dir);
    } catch (error) {
      return { kind: 'refused', reason: `the LMDB copy failed: ${describe(error)}` };
    }
    if (!this.gate.paused || this.writer.durableSeq !== walSeq) return { kind: 'refused', reason: 'the pause lifted during the copy' };
    return { kind: 'copied', walSeq, ledgerId: readLedgerId(this.state.log.databases), copyMs: Math.round(performance.now() - started) };
  }

  resume(): UbsResumeOutcome {
    const { held, expired } = this.gate.release();
    for (const { to, message } of held) this.receive(to, message);
    return { kind: 'resumed', heldMessages: held.length, expired };
  }

  /** A standby's core: verifies, writes and applies the owner's blocks (follow.ts), one call at a time. */
  follow(blocks: readonly LogBlock[]): Promise<UbsFollowOutcome> {
    const outcome = this.followed.then(() => this.followNow(blocks));
    this.followed = outcome.catch(() => undefined);
    return outcome;
  }

  private async followNow(blocks: readonly LogBlock[]): Promise<UbsFollowOutcome> {
    if (!this.following) return { kind: 'refused', reason: 'UBSCore leads: it follows no log' };
    if (this.closing !== null || this.failed || this.degraded !== null)
      return { kind: 'refused', reason: 'UBSCore is closing, failed, or cannot write its WAL' };
    const plan = planFollow(this.state, blocks);
    if (plan.kind !== 'plan') return plan;
    const { batch, skippedBlocks } = plan;
    if (batch === null) return { kind: 'applied', lastSeq: this.state.ledger.lastSeq, appliedBlocks: 0, skippedBlocks };
    try {
      applyFollowed(this.state, plan.records);
    } catch (error) {
      // Every byte verified, yet a record breaks the ledger's rules: RAM is half-applied.
      this.fatal(`applying the owner's log threw: ${describe(error)}`);
      return { kind: 'failed', reason: describe(error) };
    }
    this.writer.enqueue(followedBatch<To>(batch));
    await this.writer.drained();
    if (this.writer.durableSeq < batch.lastSeq)
      return { kind: 'failed', reason: `the LMDB write of seqs ${batch.firstSeq}..${batch.lastSeq} failed; UBSCore rebuilds from disk` };
    return { kind: 'applied', lastSeq: this.writer.durableSeq, appliedBlocks: batch.blocks.length, skippedBlocks };
  }

  /**
   * Ends the follow mode once the follow calls under way are done: commands are taken from now on,
   * and every batch also goes to `pgLog` (opened with the epoch this process now owns).
   */
  async lead(pgLog: PgLog | null): Promise<UbsLeadOutcome> {
    await this.followed;
    if (this.closing !== null || this.failed) return { kind: 'refused', reason: 'UBSCore is closing or failed' };
    this.pgLog = pgLog;
    this.following = false;
    return { kind: 'leading', lastSeq: this.writer.durableSeq };
  }

  /**
   * One retention pass over the processed set (pruner.ts), in steps between batches. A
   * standby's core prunes too: its processed set is its own LMDB's.
   */
  prune(plan: UbsPrunePlan): Promise<UbsPruneOutcome> {
    if (this.closing !== null || this.failed || this.degraded !== null)
      return Promise.resolve({ kind: 'refused', reason: 'UBSCore is closing, failed, or cannot write its WAL' });
    return this.pruner.start(plan);
  }

  close(): Promise<{ readonly closed: true }> {
    // A step in flight ends durable or failed; no other starts once closing.
    this.pruner.end('UBSCore is closing');
    this.closing ??= this.drainAndClose();
    return this.closing;
  }

  private async drainAndClose(): Promise<{ readonly closed: true }> {
    // Every accepted command durable first; then no write is in flight, and no new one starts.
    // While the disk fails nothing is accepted, so there is nothing to drain.
    if (this.degraded === null) {
      await this.writer.drained();
    }
    await this.degraded?.recovery.stop();
    this.hooks.closeClients();
    await this.state.processed.close();
    try {
      // After the drain every decided record is durable, so the snapshot covers only durable ones.
      if (!this.failed && this.degraded === null) await this.state.snapshots.closeWithSnapshot(this.writer.durableSeq);
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
    // Last: every batch is durable in PostgreSQL too, and the closing snapshot's copy had its chance.
    await this.pgLog?.close().catch((error: unknown) => logger.error('closing the PostgreSQL log failed', { reason: describe(error) }));
    return { closed: true };
  }
}

function countCommands<To>(batches: readonly Batch<To>[]): number {
  return batches.reduce((n, b) => n + b.commands, 0);
}
