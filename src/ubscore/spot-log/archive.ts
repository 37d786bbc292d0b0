// The archive of PostgreSQL's SPOT log (the log need not be kept from before the oldest snapshot
// kept there: a rebuild starts from that snapshot). Every few minutes, and at start, the main thread takes the oldest snapshot
// spot_snapshots keeps (S) and archives spot_log through the last block boundary at or before S:
// the processed-set entries of those blocks into spot_processed, their rows deleted, the mark
// moved (SpotLogStore.archiveThrough), one bounded page per transaction on the main pool, which
// carries the owner epoch, so a former owner archives nothing.
//
// An entry the processed set's retention may already forget (seq at or below the horizon
// H of a plan read at the start of the turn, its key not in that plan's KEEP) is not copied: the
// retention would delete it from spot_processed at its next pass, and a pruned entry stays
// prunable (H only grows, and a final transfer or movement never becomes unfinished). With a week's
// retention that is none; with a short one, nearly every entry.
//
// Crash-safe at every point: a page is one transaction (its entries, its deletion and the mark
// together), and an entry archived twice is kept once. A rebuild needs a snapshot at or after the
// mark plus the blocks after it: every snapshot kept is at or after S, and only blocks <= S go.

import { performance } from 'node:perf_hooks';
import { errorText } from '../../error-text.js';
import { SPOT_LOG_PAGE_BLOCKS } from '../../limits.js';
import type { Logger } from '../../log.js';
import type { RetentionPlan } from '../processed/retention-plan.js';
import { keyOfProcessedRow } from '../processed/processed-rows.js';
import { blockEntries } from '../../../wal/import.js';
import type { ArchivedEntry, SpotLogStore } from './store.js';

export type Archived = {
  readonly throughSeq: number;
  readonly blocks: number;
  /** Processed-set entries copied into spot_processed. */
  readonly entries: number;
  /** Entries the retention may already forget, not copied. */
  readonly forgotten: number;
  readonly ms: number;
};

/** The retention's plan of now (src/ubscore/processed/retention-plan.ts), for the entries it may forget. */
export type ForgetPlan = () => Promise<Pick<RetentionPlan, 'throughSeq' | 'keep'>>;

/**
 * Archives spot_log through the oldest snapshot PostgreSQL keeps, page by page, leaving out the
 * entries `plan` says the retention may forget (none without a plan); resolves what it did.
 */
export async function archiveSpotLog(store: SpotLogStore, pageBlocks = SPOT_LOG_PAGE_BLOCKS, plan?: ForgetPlan): Promise<Archived> {
  const started = performance.now();
  const seqs = await store.snapshotSeqs();
  const oldest = seqs[seqs.length - 1];
  let through = await store.archivedThrough();
  let blocks = 0;
  let entries = 0;
  let forgotten = 0;
  let forgettable: ((entry: ArchivedEntry) => boolean) | null = null;
  while (oldest !== undefined) {
    const page = (await store.read(through + 1, pageBlocks)).filter((block) => block.lastSeq <= oldest);
    const last = page[page.length - 1];
    if (last === undefined) break;
    // Read once, when there is something to archive: a plan stays valid as long as it is kept.
    forgettable ??= plan === undefined ? () => false : forgettableBy(await plan());
    const pageEntries: ArchivedEntry[] = page.flatMap((block) => blockEntries(block));
    const kept = pageEntries.filter((entry) => !forgettable?.(entry));
    await store.archiveThrough(last.lastSeq, kept);
    through = last.lastSeq;
    blocks += page.length;
    entries += kept.length;
    forgotten += pageEntries.length - kept.length;
  }
  return { throughSeq: through, blocks, entries, forgotten, ms: performance.now() - started };
}

/** An entry the plan's retention would prune: its seq at or below the horizon, its key not kept. */
function forgettableBy({ throughSeq, keep }: Pick<RetentionPlan, 'throughSeq' | 'keep'>): (entry: ArchivedEntry) => boolean {
  const kept = new Set(keep);
  return (entry) => entry.seq <= throughSeq && !kept.has(keyOfProcessedRow(entry.key));
}

/** The archive on a timer: at start, then every `intervalMs`; a failure is logged and retried at the next turn. */
export class SpotLogArchive {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly store: SpotLogStore,
    private readonly log: Logger,
    private readonly plan?: ForgetPlan,
  ) {}

  start(intervalMs: number): void {
    this.turn();
    this.timer = setInterval(() => this.turn(), intervalMs);
    this.timer.unref();
  }

  private turn(): void {
    if (this.stopped || this.running !== null) return;
    this.running = archiveSpotLog(this.store, SPOT_LOG_PAGE_BLOCKS, this.plan)
      .then((done) => {
        if (done.blocks > 0) this.log.info('SPOT log archived', { ...done, ms: Math.round(done.ms) });
      })
      .catch((error: unknown) => this.log.error('SPOT log archive failed; retried at the next turn', { error: errorText(error) }))
      .finally(() => {
        this.running = null;
      });
  }

  /** Stops the timer and waits for a turn in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }
}
