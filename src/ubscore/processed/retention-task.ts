// The processed set's retention on a timer: every PROCESSED_PRUNE_INTERVAL_S, one
// pass, never two at once. On the owner a pass ticks the seq clock with UBSCore's durable seq,
// trims it, plans (./retention-plan.ts), has UBSCore prune by the plan, and deletes the same entries from
// spot_processed. A standby's main thread plans from the owner's clock and has its own UBSCore
// prune, and writes nothing to PostgreSQL (its connection could not: the fence refuses it).
// A failed pass is logged and the next interval tries again; a fenced write (LF001: this process
// no longer owns the ledger) is the lease's to act on, never this task's.

import { performance } from 'node:perf_hooks';
import type { Sql } from '../../db/sql.js';
import { errorText } from '../../error-text.js';
import { RETENTION_STOP_WAIT_MS, SPOT_PROCESSED_DELETE_ROWS } from '../../limits.js';
import type { Logger } from '../../log.js';
import { recordPass, setOldestAge, setRetentionConfigured, setRetentionHorizon, type PrunePassOutcome } from '../../metrics/retention.js';
import type { Registry } from '../../metrics/registry.js';
import { isFenced } from '../../db/fence.js';
import type { UbsControlApi, UbsPruneOutcome } from '../control.js';
import { within } from '../../within.js';
import { PlanGate } from './retention-gate.js';
import { planRetention, type RetentionPlan } from './retention-plan.js';
import { deleteProcessedRows } from './processed-rows.js';
import { seqAgeS, tickSeqClock, trimSeqClock } from './seq-clock.js';

/** A pass with no horizon yet: nothing was asked of UBSCore. */
const NOTHING_TO_PRUNE: UbsPruneOutcome = { kind: 'pruned', scanned: 0, pruned: 0, liveEntries: 0, oldestLiveSeq: null, ms: 0 };

export type RetentionDeps = {
  /** The owner's fenced main pool, or a standby's read-only connection. */
  readonly sql: Sql;
  readonly ubs: Pick<UbsControlApi, 'stats' | 'prune'>;
  /** `owner` writes the clock and spot_processed; `standby` writes nothing. */
  readonly role: 'owner' | 'standby';
  readonly retentionS: number;
  readonly log: Logger;
  readonly registry: Registry;
  /** Shared with the conservation check (./retention-gate.ts); a standby, which runs none, may leave it out. */
  readonly gate?: PlanGate;
  /** spot_processed rows read and deleted per statement. */
  readonly pageRows?: number;
};

/** What one pass did. */
export type RetentionPass = {
  readonly plan: RetentionPlan;
  readonly outcome: UbsPruneOutcome;
  readonly rowsDeleted: number;
};

export class RetentionTask {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<RetentionPass> | null = null;
  private stopped = false;
  private readonly gate: PlanGate;

  constructor(private readonly deps: RetentionDeps) {
    this.gate = deps.gate ?? new PlanGate();
    setRetentionConfigured(deps.registry, deps.retentionS);
  }

  /** A pass at once, then one every `intervalS`; a pass still running when the timer fires is left alone. */
  start(intervalS: number): void {
    if (!(Number.isSafeInteger(intervalS) && intervalS > 0))
      throw new Error(`the prune interval must be a positive whole number of seconds, got ${intervalS}`);
    this.turn();
    this.timer = setInterval(() => this.turn(), intervalS * 1000);
    this.timer.unref();
  }

  /** One pass, or the one running: its result, or its failure (which the timer's turns only log). */
  pass(): Promise<RetentionPass> {
    this.running ??= this.runOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Stops the timer; waits a bounded time for a pass in flight (UBSCore's close ends its prune). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.running !== null)
      await within(
        this.running.catch(() => undefined),
        RETENTION_STOP_WAIT_MS,
        undefined,
      );
  }

  private turn(): void {
    if (this.stopped || this.running !== null) return;
    this.pass().catch((error: unknown) => {
      if (isFenced(error))
        this.deps.log.warn('retention pass refused by the fence: this process no longer owns the ledger', { error: errorText(error) });
      else this.deps.log.error('retention pass failed; tried again at the next interval', { error: errorText(error) });
    });
  }

  private async runOnce(): Promise<RetentionPass> {
    const started = performance.now();
    const { deps } = this;
    const owner = deps.role === 'owner';
    let outcome: PrunePassOutcome = 'failed';
    let rowsDeleted = 0;
    try {
      if (owner) {
        await tickSeqClock(deps.sql, (await deps.ubs.stats()).walSeq);
        await trimSeqClock(deps.sql, deps.retentionS);
      }
      const plan = await this.gate.run(() => planRetention(deps.sql, deps.retentionS));
      setRetentionHorizon(deps.registry, plan.throughSeq);
      // Nothing is a retention old yet (the first retention after the seq clock began): no entry
      // can go, so UBSCore is not asked to walk its whole processed set for nothing.
      if (plan.throughSeq === 0) {
        outcome = 'pruned';
        return { plan, outcome: NOTHING_TO_PRUNE, rowsDeleted };
      }
      const pruned = await deps.ubs.prune({ throughSeq: plan.throughSeq, keep: plan.keep });
      if (pruned.kind === 'pruned')
        setOldestAge(deps.registry, pruned.oldestLiveSeq === null ? 0 : await seqAgeS(deps.sql, pruned.oldestLiveSeq));
      else deps.log.warn('UBSCore pruned nothing this pass', { reason: pruned.reason, through_seq: plan.throughSeq });
      if (owner && !this.stopped) rowsDeleted = await deleteProcessedRows(deps.sql, plan, deps.pageRows ?? SPOT_PROCESSED_DELETE_ROWS);
      outcome = pruned.kind;
      this.logPass(plan, pruned, rowsDeleted, started);
      return { plan, outcome: pruned, rowsDeleted };
    } finally {
      recordPass(deps.registry, outcome, (performance.now() - started) / 1000, rowsDeleted);
    }
  }

  private logPass(plan: RetentionPlan, pruned: UbsPruneOutcome, rowsDeleted: number, started: number): void {
    if (pruned.kind !== 'pruned' || (pruned.pruned === 0 && rowsDeleted === 0)) return;
    this.deps.log.info('processed set pruned', {
      through_seq: plan.throughSeq,
      kept: plan.keep.length,
      pruned: pruned.pruned,
      live_entries: pruned.liveEntries,
      oldest_live_seq: pruned.oldestLiveSeq,
      pg_rows_deleted: rowsDeleted,
      ms: Math.round(performance.now() - started),
    });
  }
}
