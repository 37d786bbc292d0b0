// The retention on UBSCore's side: one pass over LMDB's processed set deletes every durable
// entry with seq <= H whose key the main thread did not ask to keep (docs/design.md says
// why that is safe). The pass reads the entries at or below H in seq order, through the set's seq
// index (wal/processed-index.ts), so its work follows what it prunes (and the few kept entries),
// not the size of the set. It goes in steps of at most PRUNE_STEP_ENTRIES entries, each one LMDB
// transaction offered to the group commit's maintenance slot (group-commit.ts), so at most one
// step runs between two batches and commands are answered between steps. Each step reads from
// the seq the last one reached, when no other write is in flight; an entry decided but not yet
// durable (the overlay) is kept, so a step never deletes a key a later batch writes again.
// Deleting is idempotent: a crash mid-pass leaves a valid set, and the next pass goes on.

import { performance } from 'node:perf_hooks';
import type { CrashPoint } from '../../faults/crash-points.js';
import { PRUNE_STEP_ENTRIES } from '../../limits.js';
import { errorDetail as describe } from '../../error-text.js';
import type { ProcessedPruneStep } from '../../../wal/processed-prune.js';
import type { Write } from '../durability/snapshotter.js';
import type { UbsPruneOutcome } from '../control.js';
import { logger } from '../log.js';
import type { UbsMetrics } from '../metrics.js';
import type { CoreState } from '../state.js';

/** What the pruner reads of the actor. */
export type PrunerHost = {
  /** The state now: a rebuild after a failed write replaces it whole. */
  readonly state: () => CoreState;
  /** Offers the writer a turn: a pass began. */
  readonly wake: () => void;
  readonly crash: (point: CrashPoint) => void;
  readonly metrics: UbsMetrics;
};

/** A pass under way: its plan, where its next step starts, and what it did so far. */
type Pass = {
  readonly throughSeq: number;
  readonly keep: ReadonlySet<string>;
  readonly startedMs: number;
  readonly resolve: (outcome: UbsPruneOutcome) => void;
  /** The seq the next step reads from. */
  cursor: number;
  scanned: number;
  pruned: number;
};

export class ProcessedPruner {
  private pass: Pass | null = null;

  constructor(private readonly host: PrunerHost) {}

  /** Starts a pass for a plan from another thread (checked here), or refuses. */
  start(plan: unknown): Promise<UbsPruneOutcome> {
    if (this.pass !== null) return Promise.resolve({ kind: 'refused', reason: 'a pass is under way' });
    const checked = checkPlan(plan);
    if (typeof checked === 'string') return Promise.resolve({ kind: 'refused', reason: checked });
    return new Promise<UbsPruneOutcome>((resolve) => {
      this.pass = {
        throughSeq: checked.throughSeq,
        keep: new Set(checked.keep),
        startedMs: performance.now(),
        resolve,
        cursor: 0,
        scanned: 0,
        pruned: 0,
      };
      this.host.wake();
    });
  }

  /** The next step of the pass under way, for the writer's maintenance slot; null when none runs. */
  nextWrite(): Write | null {
    const pass = this.pass;
    return pass === null ? null : () => this.step(pass);
  }

  /** Ends the pass under way, refused: UBSCore closes, or a write failed. What was deleted stays deleted. */
  end(reason: string): void {
    const pass = this.pass;
    if (pass === null) return;
    this.pass = null;
    logger.warn('a processed-set prune pass ended early', { reason, pruned: pass.pruned });
    pass.resolve({ kind: 'refused', reason });
  }

  /**
   * One step, started by the writer while no other write is in flight: so every entry it reads
   * as durable is, and every entry not yet durable is in the overlay, which it keeps.
   */
  private step(pass: Pass): Promise<void> {
    const state = this.host.state();
    const keep = (opKey: string): boolean => pass.keep.has(opKey.slice(opKey.indexOf(':') + 1)) || state.processed.isPending(opKey);
    let durable: Promise<ProcessedPruneStep>;
    try {
      durable = state.log.pruneProcessed(pass.cursor, PRUNE_STEP_ENTRIES, pass.throughSeq, keep);
    } catch (error) {
      // Nothing was deleted: an entry did not decode. That is no failed write; the pass ends.
      logger.error('a processed-set prune step could not read its entries', { reason: describe(error) });
      this.end(`a processed-set entry could not be read: ${describe(error)}`);
      return Promise.resolve();
    }
    return durable.then(
      (step) => this.stepDurable(pass, step, state),
      (error: unknown) => {
        // The writer starts a degraded episode for the failed write; the pass ends with it.
        this.end(`the LMDB write of a prune step failed: ${describe(error)}`);
        throw error;
      },
    );
  }

  private stepDurable(pass: Pass, step: ProcessedPruneStep, state: CoreState): void {
    if (this.pass !== pass) return;
    pass.scanned += step.scanned;
    pass.pruned += step.pruned;
    this.host.metrics.processedPruneStep(step.pruned);
    // A no-op unless armed; armed, it kills the process at the first step that deleted entries.
    if (step.pruned > 0) this.host.crash('ubscore_prune_after_step');
    if (step.next === null) this.finish(pass, state);
    else pass.cursor = step.next;
  }

  private finish(pass: Pass, state: CoreState): void {
    this.pass = null;
    const liveEntries = state.log.processedCount();
    // The index's first key: the oldest live entry, a kept one or the first above the horizon.
    const oldestLiveSeq = state.log.oldestProcessedSeq();
    // The filter still holds the pruned keys (a stale key costs one LMDB read, never a wrong
    // answer); it is rebuilt for the live ones once stale keys are at least half of it, so RAM
    // follows the live keys without a helper thread after every pass.
    if (pass.pruned > 0 && state.processed.filterOutgrown(liveEntries)) state.processed.rebuildFilter();
    this.host.metrics.processedPruned(oldestLiveSeq ?? 0);
    const ms = Math.round(performance.now() - pass.startedMs);
    logger.info('processed-set prune pass done', { scanned: pass.scanned, pruned: pass.pruned, live: liveEntries, ms });
    pass.resolve({ kind: 'pruned', scanned: pass.scanned, pruned: pass.pruned, liveEntries, oldestLiveSeq, ms });
  }
}

/** The plan as values: a horizon that is a seq, and keys that are strings; else why not. */
function checkPlan(plan: unknown): { readonly throughSeq: number; readonly keep: readonly string[] } | string {
  const candidate = (typeof plan === 'object' && plan !== null ? plan : {}) as { throughSeq?: unknown; keep?: unknown };
  const { throughSeq, keep } = candidate;
  if (typeof throughSeq !== 'number' || !Number.isSafeInteger(throughSeq) || throughSeq < 0)
    return 'the plan needs throughSeq, a seq (an integer from 0)';
  if (!Array.isArray(keep) || !keep.every((key) => typeof key === 'string')) return 'the plan needs keep, a list of keys';
  return { throughSeq, keep };
}
