// UBSCore's start-up recovery: the ledger rebuilt from the newest snapshot that verifies plus the
// WAL records after it, or a refusal to start when records between them are gone.

import { performance } from 'node:perf_hooks';
import { createLogger } from '../../log.js';
import { SpotLedger } from '../ledger/core.js';
import type { WalLog } from '../../../wal/log.js';
import type { SnapshotStore } from '../../../wal/snapshot-store.js';

const logger = createLogger({ level: 'warn', name: 'ubscore' });

/**
 * The ledger as of the newest snapshot that verifies. If the newest is damaged, an older one (or
 * none, seq 0) may stand in only when every WAL record after it is still there; otherwise the
 * records between them are gone and starting would silently lose them, so start is refused.
 */
function loadSnapshot(store: SnapshotStore, prunedThrough: number): { ledger: SpotLedger; seq: number } {
  let damage: string | null = null;
  for (const seq of [...store.seqs(), 0]) {
    if (seq < prunedThrough) {
      const problem = damage ?? `no snapshot covers the WAL records through seq ${prunedThrough}, which were pruned`;
      throw new Error(
        `ubscore: ${problem}; the WAL is pruned through seq ${prunedThrough}, so no older state can be completed: refusing to start`,
      );
    }
    const ledger = new SpotLedger();
    const loaded =
      seq === 0 ? null : store.load(seq, (userId, asset, available, status) => ledger.restoreAccount(userId, asset, available, status));
    if (loaded === null || loaded.ok) {
      if (loaded !== null) ledger.finishRestore(seq, loaded.record.accountCount);
      if (damage !== null)
        logger.critical('UBSCore fell back past a corrupt snapshot; every WAL record after the one used is present', {
          used_seq: seq,
          damage,
        });
      return { ledger, seq };
    }
    damage ??= `the newest snapshot, at seq ${seq}, is corrupt: ${loaded.reason}`;
    logger.critical('UBSCore snapshot is corrupt; looking for an older state whose WAL tail is complete', { seq, reason: loaded.reason });
  }
  throw new Error('ubscore: unreachable: the seq 0 candidate always ends the search');
}

/** Replays every durable record after the ledger's seq; the log verifies checksums and sequence continuity. */
function replayInto(ledger: SpotLedger, wal: WalLog): number {
  const lastSeq = wal.lastSeq();
  if (ledger.lastSeq > lastSeq) {
    throw new Error(`ubscore: the snapshot at seq ${ledger.lastSeq} is ahead of the WAL, which ends at seq ${lastSeq}: refusing to start`);
  }
  const replayed = wal.replayInto(ledger.lastSeq + 1, (record) => ledger.applyRecord(record));
  if (ledger.lastSeq !== lastSeq) throw new Error(`ubscore: replay reached seq ${ledger.lastSeq}, log ends at ${lastSeq}`);
  return replayed;
}

export type Restored = {
  readonly ledger: SpotLedger;
  readonly snapshotSeq: number;
  readonly snapshotLoadMs: number;
  readonly replayedRecords: number;
  readonly replayMs: number;
};

export function restore(wal: WalLog, store: SnapshotStore): Restored {
  const started = performance.now();
  const { ledger, seq } = loadSnapshot(store, wal.prunedThroughSeq());
  const loaded = performance.now();
  const replayedRecords = replayInto(ledger, wal);
  return { ledger, snapshotSeq: seq, snapshotLoadMs: loaded - started, replayedRecords, replayMs: performance.now() - loaded };
}
