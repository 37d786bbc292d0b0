// UBSCore's snapshots copied into PostgreSQL's spot_snapshots, so the SPOT ledger can
// be rebuilt from PostgreSQL alone: once a snapshot is durable in LMDB, its header and chunks (the
// same bytes) are copied in the background on UBSCore's own connection, and the newest
// UBS_PG_SNAPSHOTS_KEPT are kept there. Nothing waits for a copy: the WAL blocks in spot_log hold
// every record a snapshot covers, so a copy that fails is only tried again later (the next
// snapshot replaces it, or a timer), and logged; it never stops UBSCore.

import { errorDetail as describe } from '../../error-text.js';
import { UBS_PG_SNAPSHOT_RETRY_MS, UBS_PG_SNAPSHOTS_KEPT } from '../../limits.js';
import type { SpotLogStore, StoredSnapshot } from '../spot-log/store.js';
import { within } from '../../within.js';
import { logger } from '../log.js';
import type { UbsMetrics } from '../metrics.js';

/** A snapshot to copy; `onlyIfMissing`: the one found in LMDB at start, which PostgreSQL may hold already. */
type CopyJob = { readonly snapshot: StoredSnapshot; readonly onlyIfMissing: boolean };

export class SnapshotCopier {
  /** The newest snapshot not yet copied; a newer one replaces it. */
  private pending: CopyJob | null = null;
  private running: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly store: SpotLogStore,
    private readonly metrics: UbsMetrics,
  ) {}

  /** A snapshot is durable in LMDB: copy it as soon as no copy is under way. */
  offer(snapshot: StoredSnapshot, onlyIfMissing = false): void {
    if (this.stopped || (this.pending !== null && this.pending.snapshot.seq >= snapshot.seq)) return;
    this.pending = { snapshot, onlyIfMissing };
    // A new snapshot is the "later" a failed copy waits for: no need to wait for the timer too.
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.kick();
  }

  private kick(): void {
    const job = this.pending;
    if (this.running !== null || this.timer !== null || job === null || this.stopped) return;
    this.running = this.copy(job).finally(() => {
      this.running = null;
      this.kick();
    });
  }

  private async copy(job: CopyJob): Promise<void> {
    const { seq } = job.snapshot;
    try {
      const there = job.onlyIfMissing && (await this.store.snapshotSeqs()).includes(seq);
      if (!there) {
        await this.store.putSnapshot(job.snapshot);
        this.metrics.pgSnapshotCopied(seq);
      }
      await this.prune();
      if (this.pending === job) this.pending = null;
    } catch (error) {
      const waitMs = UBS_PG_SNAPSHOT_RETRY_MS;
      logger.error('copying a snapshot into PostgreSQL failed; it is tried again later', {
        seq,
        reason: describe(error),
        next_ms: waitMs,
      });
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.timer = null;
        this.kick();
      }, waitMs);
      // The retry alone never keeps the thread alive.
      this.timer.unref();
    }
  }

  /** Deletes the snapshots older than the newest UBS_PG_SNAPSHOTS_KEPT. */
  private async prune(): Promise<void> {
    const seqs = await this.store.snapshotSeqs();
    const oldestKept = seqs[UBS_PG_SNAPSHOTS_KEPT - 1];
    if (seqs.length > UBS_PG_SNAPSHOTS_KEPT && oldestKept !== undefined) await this.store.deleteSnapshotsBefore(oldestKept);
  }

  /** Takes no new copy and waits up to `waitMs` for the one under way; a copy left undone is redone by the next start. */
  async stop(waitMs: number): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.running !== null && (await within(this.running, waitMs, 'late')) === 'late')
      logger.warn('closing before a snapshot copy into PostgreSQL finished; the next start copies it', { wait_ms: waitMs });
  }
}
