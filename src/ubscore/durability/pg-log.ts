// UBSCore's log in PostgreSQL: every group commit's WAL blocks also go to spot_log, on
// a connection of UBSCore's own that carries the owner epoch, so the fence of migration 0010
// refuses them from a process that no longer owns the ledger. The writer (group-commit.ts) runs
// the LMDB write and this one side by side and answers a batch only once both are durable: a
// batch that lived on one disk only could be lost with that machine (rule 8).
//
// An error that is neither the fence nor a conflict is an unknown outcome: the same append (it is
// idempotent) is tried again with capped backoff until PostgreSQL takes it, and the writer stays
// busy meanwhile, so nothing of that batch or a later one is answered. The fence (another process
// owns the ledger), a conflict (the same seq with other bytes) or a break of the chain (the batch
// does not continue PostgreSQL's log: PostgreSQL lost its tail, or another writer forked it) is
// fatal: no retry can mend it.
// Snapshots are copied in the background (pg-snapshots.ts) and never hold the writer.

import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { backoffMs } from '../../backoff.js';
import { openSql, type Sql } from '../../db/sql.js';
import { errorDetail as describe } from '../../error-text.js';
import { UBS_PG_LOG_CLOSE_WAIT_MS, UBS_RECOVERY_BACKOFF_BASE_MS, UBS_RECOVERY_BACKOFF_CAP_MS } from '../../limits.js';
import { isFenced, SpotLogConflict, SpotLogGap, SpotLogStore, type LogBlock } from '../spot-log/store.js';
import type { WalBatch } from '../../../wal/block.js';
import type { EncodedSnapshot } from '../../../wal/snapshot.js';
import type { UbsHealthEvent, UbsSpotLog } from '../control.js';
import { logger } from '../log.js';
import type { UbsMetrics } from '../metrics.js';
import { SnapshotCopier } from './pg-snapshots.js';

/** An append's outcome, as a value: committed, or a reason this process must stop. */
export type PgAppendOutcome = { readonly kind: 'committed' } | { readonly kind: 'fatal'; readonly message: string };

type PgLogHooks = {
  /** Tells the main thread that the log waits for PostgreSQL (ubs.degraded) and that it is back (ubs.recovered). */
  readonly post: (event: UbsHealthEvent) => void;
  readonly metrics: UbsMetrics;
};

/** The blocks of one batch as spot_log stores them: each block's first seq follows the one before. */
function logBlocks(wal: WalBatch): LogBlock[] {
  let firstSeq = wal.firstSeq;
  return wal.blocks.map((block) => {
    const row = { firstSeq, lastSeq: block.lastSeq, bytes: block.bytes };
    firstSeq = block.lastSeq + 1;
    return row;
  });
}

export class PgLog {
  private readonly store: SpotLogStore;
  readonly snapshots: SnapshotCopier;
  /** Non-null while an append is being retried: since when, for the health events. */
  private waiting: { readonly since: number; attempts: number } | null = null;

  private constructor(
    private readonly sql: Sql,
    private readonly epoch: number,
    private readonly hooks: PgLogHooks,
  ) {
    this.store = new SpotLogStore(sql);
    this.snapshots = new SnapshotCopier(this.store, hooks.metrics);
    hooks.metrics.pgLogOpened();
  }

  /**
   * Opens UBSCore's own connections: one for the appends, one for the snapshot copies, so a copy
   * never makes a batch wait for a connection.
   */
  static open(spotLog: UbsSpotLog, hooks: PgLogHooks): PgLog {
    const epoch = spotLog.owner.epoch;
    if (epoch === 'standby') throw new Error('ubscore: a standby connection may not write the SPOT log');
    const sql = openSql(spotLog.databaseUrl, {
      max: 2,
      application: 'ubscore-log',
      owner: spotLog.owner,
      ...(spotLog.timeouts === undefined ? {} : { timeouts: spotLog.timeouts }),
    });
    return new PgLog(sql, epoch, hooks);
  }

  /**
   * Commits the batch's blocks in spot_log; tries again after every unknown outcome, for ever.
   * Never rejects: the fence, a conflict or a break of the chain comes back as a fatal outcome.
   */
  async append(wal: WalBatch): Promise<PgAppendOutcome> {
    const blocks = logBlocks(wal);
    const started = performance.now();
    for (let attempt = 0; ; attempt++) {
      try {
        await this.store.append(this.epoch, blocks);
        break;
      } catch (error) {
        if (isFenced(error) || error instanceof SpotLogConflict || error instanceof SpotLogGap) {
          return { kind: 'fatal', message: `the PostgreSQL log refused the batch ending at seq ${wal.lastSeq}: ${describe(error)}` };
        }
        await this.retryLater(wal.lastSeq, error, attempt);
      }
    }
    this.hooks.metrics.pgLogDurable(wal.lastSeq, started);
    if (this.waiting !== null) this.recovered(wal.lastSeq, this.waiting);
    return { kind: 'committed' };
  }

  private async retryLater(lastSeq: number, error: unknown, attempt: number): Promise<void> {
    const waitMs = backoffMs({ baseMs: UBS_RECOVERY_BACKOFF_BASE_MS, capMs: UBS_RECOVERY_BACKOFF_CAP_MS }, attempt);
    const reason = `the PostgreSQL log append of the batch ending at seq ${lastSeq} failed: ${describe(error)}`;
    this.hooks.metrics.pgLogRetried();
    logger.warn('UBSCore answers nothing until PostgreSQL takes its log: retrying', { reason, attempt: attempt + 1, next_ms: waitMs });
    if (this.waiting === null) {
      this.waiting = { since: Date.now(), attempts: 0 };
      this.hooks.post({ kind: 'ubs.degraded', cause: 'pg-log', reason, since: this.waiting.since });
    }
    this.waiting.attempts++;
    await sleep(waitMs);
  }

  private recovered(lastSeq: number, waiting: { readonly since: number; readonly attempts: number }): void {
    this.waiting = null;
    const degradedMs = Date.now() - waiting.since;
    logger.warn("PostgreSQL takes UBSCore's log again: batches are answered", { degraded_ms: degradedMs, pg_log_seq: lastSeq });
    this.hooks.post({ kind: 'ubs.recovered', since: waiting.since, degradedMs, attempts: waiting.attempts + 1 });
  }

  /** A snapshot is durable in LMDB: its bytes are copied into PostgreSQL in the background. */
  snapshotDurable(snapshot: EncodedSnapshot): void {
    this.snapshots.offer({ seq: snapshot.info.seq, header: snapshot.header, chunks: snapshot.chunks });
  }

  /** After the last batch is durable: waits a bounded time for a snapshot copy under way, then ends the connections. */
  async close(): Promise<void> {
    await this.snapshots.stop(UBS_PG_LOG_CLOSE_WAIT_MS);
    await this.sql.end({ timeout: UBS_PG_LOG_CLOSE_WAIT_MS / 1000 });
  }
}

/**
 * Both halves of one batch's durability: LMDB's append and PostgreSQL's, started side by side.
 * Resolves once both hold the batch; otherwise calls `fatal` or rejects as LMDB did:
 * - PostgreSQL refused it for good (the fence, a conflict, a break of the chain): fatal;
 * - LMDB failed but PostgreSQL holds the batch: fatal too, since rebuilding RAM from LMDB alone
 *   would decide other records under seqs PostgreSQL already holds; the restart's reconcile
 *   writes PostgreSQL's blocks into LMDB (src/ubscore/spot-log/reconcile.ts).
 */
export async function durableInBoth(
  lmdb: Promise<void>,
  pg: Promise<PgAppendOutcome>,
  lastSeq: number,
  fatal: (message: string) => void,
): Promise<void> {
  const [local, remote] = await Promise.allSettled([lmdb, pg]);
  const outcome: PgAppendOutcome =
    remote.status === 'fulfilled'
      ? remote.value
      : { kind: 'fatal', message: `the PostgreSQL log append threw: ${describe(remote.reason)}` };
  if (outcome.kind === 'fatal') {
    fatal(outcome.message);
    throw new Error(outcome.message);
  }
  if (local.status === 'rejected') {
    const message = `LMDB failed the batch ending at seq ${lastSeq} that PostgreSQL's log holds: ${describe(local.reason)}`;
    fatal(message);
    throw new Error(message);
  }
}
