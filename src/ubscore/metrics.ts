// UBSCore's own series, kept in its thread's registry: the group commit's histograms, observed
// as each batch becomes durable, and the ledger's, the processed set's and the disk's gauges,
// set when a scrape asks. GET /metrics gathers them through the control port.

import { statSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import type { MetricFamily } from '../metrics/registry.js';
import { Registry } from '../metrics/registry.js';
import type { WalBatch } from '../../wal/block.js';
import { freeBytes } from '../../wal/disk.js';
import type { UbsStats } from './control.js';
import type { CoreState } from './state.js';

/** Histogram bounds for UBSCore's group commit: sync time in seconds and records per batch. */
const WAL_SYNC_BUCKETS_S = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1];
const BATCH_RECORDS_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024, 4096];

export class UbsMetrics {
  private readonly registry = new Registry({ runtime: { processWide: false } });

  constructor() {
    // The retention's counters are shown from 0, before the first pass deletes anything.
    this.countPrune(0, 0);
  }

  /** A WAL batch submitted at `startedMs` (performance.now()) is durable now. */
  batchDurable(wal: WalBatch, startedMs: number): void {
    this.registry.observe(
      'transfer_ubscore_wal_sync_seconds',
      'Time from submitting a WAL batch to LMDB until it is durable',
      WAL_SYNC_BUCKETS_S,
      {},
      (performance.now() - startedMs) / 1000,
    );
    this.registry.observe(
      'transfer_ubscore_wal_batch_records',
      'WAL records per group commit (one sync each)',
      BATCH_RECORDS_BUCKETS,
      {},
      wal.lastSeq - wal.firstSeq + 1,
    );
  }

  /** The PostgreSQL log is on: its counters are shown from 0. */
  pgLogOpened(): void {
    this.pgLogRetried(0);
    this.pgSnapshotCopied(0, 0);
  }

  /** A batch's blocks, submitted to PostgreSQL's log at `startedMs` (retries included), are committed there. */
  pgLogDurable(lastSeq: number, startedMs: number): void {
    this.registry.observe(
      'transfer_ubscore_pg_log_append_seconds',
      "Time from submitting a batch's WAL blocks to PostgreSQL's spot_log until they are committed, retries included",
      WAL_SYNC_BUCKETS_S,
      {},
      (performance.now() - startedMs) / 1000,
    );
    this.registry.set(
      'transfer_ubscore_pg_log_seq',
      "Sequence number of the last WAL record committed in PostgreSQL's spot_log",
      {},
      lastSeq,
    );
  }

  /** A PostgreSQL log append ended with an unknown outcome and is tried again. */
  pgLogRetried(by = 1): void {
    this.registry.inc('transfer_ubscore_pg_log_retries_total', 'PostgreSQL log appends tried again after an unknown outcome', {}, by);
  }

  /** A snapshot was copied into PostgreSQL's spot_snapshots. */
  pgSnapshotCopied(seq: number, by = 1): void {
    this.registry.inc('transfer_ubscore_pg_log_snapshots_copied_total', "Snapshots copied into PostgreSQL's spot_snapshots", {}, by);
    this.registry.set('transfer_ubscore_pg_log_snapshot_seq', 'Sequence number of the newest snapshot copied into PostgreSQL', {}, seq);
  }

  /** A processed-set prune step is durable; it deleted `pruned` entries. */
  processedPruneStep(pruned: number): void {
    this.countPrune(pruned, 1);
  }

  private countPrune(pruned: number, steps: number): void {
    this.registry.inc(
      'transfer_ubscore_processed_pruned_total',
      'Processed-set entries deleted by the retention since UBSCore started',
      {},
      pruned,
    );
    this.registry.inc(
      'transfer_ubscore_processed_prune_steps_total',
      'Steps of processed-set retention passes (each at most one LMDB transaction) since UBSCore started',
      {},
      steps,
    );
  }

  /** A prune pass ended at the end of the processed set; `oldestSeq` is its oldest live entry's seq, 0 for none. */
  processedPruned(oldestSeq: number): void {
    this.registry.set(
      'transfer_ubscore_processed_oldest_seq',
      'Seq of the oldest processed-set entry the last retention pass left (0: none)',
      {},
      oldestSeq,
    );
  }

  /** The registry as values, its gauges brought up to date first; `disk` false skips the LMDB reads (a closed environment). */
  async values(stats: UbsStats, state: CoreState, walDir: string, disk: boolean): Promise<readonly MetricFamily[]> {
    setCoreGauges(this.registry, stats);
    setProcessedGauges(this.registry, state);
    if (disk) setDiskGauges(this.registry, state, walDir);
    return this.registry.json();
  }
}

/** The ledger's counters and gauges, from the actor's own running totals. */
function setCoreGauges(metrics: Registry, stats: UbsStats): void {
  metrics.countTo('transfer_ubscore_commands_total', 'Commands UBSCore processed since it started', {}, stats.commands);
  metrics.countTo(
    'transfer_ubscore_wal_batches_total',
    'WAL batches UBSCore committed since it started (one sync each)',
    {},
    stats.batches,
  );
  metrics.set('transfer_ubscore_accounts', 'Spot accounts held by UBSCore', {}, stats.accounts);
  metrics.set('transfer_ubscore_wal_seq', "Sequence number of UBSCore's last durable WAL record", {}, stats.walSeq);
}

/** The processed set's filter gauges. */
function setProcessedGauges(metrics: Registry, state: CoreState): void {
  const processed = state.processed.stats();
  metrics.set(
    'transfer_ubscore_processed_filter_ready',
    'Whether the processed-set filter holds every key (1), so fresh keys skip LMDB',
    {},
    processed.filterReady ? 1 : 0,
  );
  metrics.set('transfer_ubscore_processed_filter_keys', 'Keys in the processed-set filter', {}, processed.filterKeys);
  metrics.countTo(
    'transfer_ubscore_processed_lmdb_reads_total',
    'Processed-set lookups that read LMDB since this processed set was opened',
    {},
    processed.lmdbReads,
  );
}

/** The LMDB databases whose size on disk GET /metrics reports. */
const DISK_DATABASES = ['wal', 'processed', 'snapshot', 'meta'] as const;

/**
 * Sets the disk gauges: each database's pages times the page size (LMDB's own count, free pages
 * not included), the data file's size, and the space left on its filesystem. A few mdb_stat
 * calls and two stat syscalls: cheap enough for a scrape, and never on the command path.
 */
function setDiskGauges(metrics: Registry, state: CoreState, walDir: string): void {
  for (const name of DISK_DATABASES) {
    const stats = state.log.databases[name].getStats() as Partial<
      Record<'pageSize' | 'treeBranchPageCount' | 'treeLeafPageCount' | 'overflowPages' | 'mapSize', number>
    >;
    const pages = (stats.treeBranchPageCount ?? 0) + (stats.treeLeafPageCount ?? 0) + (stats.overflowPages ?? 0);
    metrics.set(
      'transfer_ubscore_lmdb_bytes',
      'Bytes of each UBSCore LMDB database: its pages times the page size, free pages not included',
      { db: name },
      pages * (stats.pageSize ?? 0),
    );
    // mdb_env_info's map size: the environment's, the same through every database of it.
    if (stats.mapSize !== undefined)
      metrics.set(
        'transfer_ubscore_lmdb_map_size_bytes',
        "Size of UBSCore's LMDB memory map: the most the data file can grow to before LMDB grows the map",
        {},
        stats.mapSize,
      );
  }
  // LMDB's own count (mdb_stat), so the processed set's growth and its pruning are
  // seen in entries and not only in pages.
  metrics.set(
    'transfer_ubscore_processed_entries',
    "Entries in UBSCore's processed set in LMDB (one per command key it remembers)",
    {},
    state.log.processedCount(),
  );
  try {
    metrics.set(
      'transfer_ubscore_lmdb_file_bytes',
      "Size of UBSCore's LMDB data file, free pages included",
      {},
      statSync(path.join(walDir, 'data.mdb')).size,
    );
    metrics.set(
      'transfer_ubscore_disk_free_bytes',
      "Bytes free on the filesystem of UBSCore's WAL (writes stop below UBS_DISK_RESERVE_MB)",
      {},
      freeBytes(walDir),
    );
  } catch {
    // A file or filesystem that cannot be read leaves the last values; the next scrape tries again.
  }
}
