// Everything UBSCore's thread derives from its LMDB directory, opened and closed as one: the
// environment, the ledger restored from the newest snapshot plus the WAL after it, the snapshot
// cycle and the processed set. Start-up opens it once; after a failed write the actor closes it
// and opens it again, so RAM is exactly what is durable (wal/recovery.ts).

import { statSync } from 'node:fs';
import path from 'node:path';
import type { Registry } from '../src/metrics/registry.js';
import type { UbsStats } from './protocol.js';
import type { SpotLedger } from '../src/ubscore/core.js';
import { freeBytes } from '../wal/disk.js';
import { openWal } from '../wal/log.js';
import type { WalLog } from '../wal/log.js';
import { SnapshotStore } from '../wal/snapshot.js';
import { ProcessedSet } from './ubscore-processed.js';
import { Snapshotter } from '../wal/snapshotter.js';
import { restore } from '../wal/restore.js';
import type { Restored } from '../wal/restore.js';
import type { UbsOptions } from './ubscore-start.js';

export type CoreState = {
  readonly ledger: SpotLedger;
  readonly log: WalLog;
  readonly snapshots: Snapshotter;
  /** The processed set: LMDB, the entries not yet durable, and a filter of every key. */
  readonly processed: ProcessedSet;
  readonly restored: Restored;
};

/** What the snapshot cycle calls: a write became ready, or encoding threw (fatal). */
type CoreHooks = { readonly wake: () => void; readonly die: (message: string) => void };

/** Opens the environment and restores the ledger from it, exactly as at start-up. Throws on failure. */
export function openCoreState(options: UbsOptions, hooks: CoreHooks): CoreState {
  const log = openWal(options.walDir);
  try {
    const store = new SnapshotStore(log.databases);
    const restored = restore(log, store);
    const snapshots = new Snapshotter(restored.ledger, log, store, options, restored.snapshotSeq, hooks.wake, hooks.die);
    const processed = new ProcessedSet(log, options.walDir);
    return { ledger: restored.ledger, log, snapshots, processed, restored };
  } catch (error) {
    void log.close().catch(() => undefined);
    throw error;
  }
}

/**
 * Drops the state: the snapshot cycle under way, the filter build, then the environment. Called
 * only when no write is in flight; what RAM held beyond the durable state is thrown away with it.
 */
export async function closeCoreState(state: CoreState): Promise<void> {
  state.snapshots.dispose();
  await state.processed.close();
  await state.log.close();
}

/** The ledger's counters and gauges, from the actor's own running totals. */
export function setCoreGauges(metrics: Registry, stats: UbsStats): void {
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
export function setProcessedGauges(metrics: Registry, state: CoreState): void {
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
export function setDiskGauges(metrics: Registry, state: CoreState, walDir: string): void {
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
