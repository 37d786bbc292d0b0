// Everything UBSCore's thread derives from its LMDB directory, opened and closed as one: the
// environment, the ledger restored from the newest snapshot plus the WAL after it, the snapshot
// cycle and the processed set. Start-up opens it once; after a failed write the actor closes it
// and opens it again, so RAM is exactly what is durable (wal/recovery.ts).

import type { SpotLedger } from './ledger/core.js';
import { openWal } from '../../wal/log.js';
import type { WalLog } from '../../wal/log.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import { ProcessedSet, type StartFilterBuild } from './processed/processed.js';
import { Snapshotter } from './durability/snapshotter.js';
import type { EncodedSnapshot } from '../../wal/snapshot.js';
import { restore } from './durability/restore.js';
import type { Restored } from './durability/restore.js';
import type { UbsOptions } from './control.js';

export type CoreState = {
  readonly ledger: SpotLedger;
  readonly log: WalLog;
  readonly snapshots: Snapshotter;
  /** The processed set: LMDB, the entries not yet durable, and a filter of every key. */
  readonly processed: ProcessedSet;
  readonly restored: Restored;
};

/** What the snapshot cycle calls: a write became ready, encoding threw (fatal), a snapshot is durable. */
type CoreHooks = {
  readonly wake: () => void;
  readonly die: (message: string) => void;
  readonly snapshotDurable?: (snapshot: EncodedSnapshot) => void;
  /** Builds the processed set's filter off this thread (actors/ubscore/filter-build.ts). */
  readonly startFilterBuild: StartFilterBuild;
};

/** Opens the environment and restores the ledger from it, exactly as at start-up. Throws on failure. */
export function openCoreState(options: UbsOptions, hooks: CoreHooks): CoreState {
  const log = openWal(options.walDir);
  try {
    const store = new SnapshotStore(log.databases);
    const restored = restore(log, store);
    const snapshots = new Snapshotter(
      restored.ledger,
      log,
      store,
      options,
      restored.snapshotSeq,
      hooks.wake,
      hooks.die,
      hooks.snapshotDurable,
    );
    const processed = new ProcessedSet(log, options.walDir, hooks.startFilterBuild);
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
