// The archive of PostgreSQL's SPOT log (issue 26: "the log can be pruned before the oldest snapshot
// kept there"). Every few minutes, and at start, the main thread takes the oldest snapshot
// spot_snapshots keeps (S) and archives spot_log through the last block boundary at or before S:
// the processed-set entries of those blocks into spot_processed, their rows deleted, the mark
// moved (SpotLogStore.archiveThrough), one bounded page per transaction on the main pool, which
// carries the owner epoch, so a former owner archives nothing.
//
// Crash-safe at every point: a page is one transaction (its entries, its deletion and the mark
// together), and an entry archived twice is kept once. A rebuild needs a snapshot at or after the
// mark plus the blocks after it: every snapshot kept is at or after S, and only blocks <= S go.

import { performance } from 'node:perf_hooks';
import { errorText } from '../error-text.js';
import { SPOT_LOG_PAGE_BLOCKS } from '../limits.js';
import type { Logger } from '../log.js';
import { blockEntries } from '../../wal/import.js';
import type { ArchivedEntry, SpotLogStore } from './store.js';

export type Archived = { readonly throughSeq: number; readonly blocks: number; readonly entries: number; readonly ms: number };

/** Archives spot_log through the oldest snapshot PostgreSQL keeps, page by page; resolves what it did. */
export async function archiveSpotLog(store: SpotLogStore, pageBlocks = SPOT_LOG_PAGE_BLOCKS): Promise<Archived> {
  const started = performance.now();
  const seqs = await store.snapshotSeqs();
  const oldest = seqs[seqs.length - 1];
  let through = await store.archivedThrough();
  let blocks = 0;
  let entries = 0;
  while (oldest !== undefined) {
    const page = (await store.read(through + 1, pageBlocks)).filter((block) => block.lastSeq <= oldest);
    const last = page[page.length - 1];
    if (last === undefined) break;
    const pageEntries: ArchivedEntry[] = page.flatMap((block) => blockEntries(block));
    await store.archiveThrough(last.lastSeq, pageEntries);
    through = last.lastSeq;
    blocks += page.length;
    entries += pageEntries.length;
  }
  return { throughSeq: through, blocks, entries, ms: performance.now() - started };
}

/** The archive on a timer: at start, then every `intervalMs`; a failure is logged and retried at the next turn. */
export class SpotLogArchive {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly store: SpotLogStore,
    private readonly log: Logger,
  ) {}

  start(intervalMs: number): void {
    this.turn();
    this.timer = setInterval(() => this.turn(), intervalMs);
    this.timer.unref();
  }

  private turn(): void {
    if (this.stopped || this.running !== null) return;
    this.running = archiveSpotLog(this.store)
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
