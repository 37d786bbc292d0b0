// UBSCore's start-up: its options, and the ledger rebuilt from the newest snapshot that verifies
// plus the WAL records after it.

import { performance } from 'node:perf_hooks';
import { createLogger } from '../src/log.js';
import { SpotLedger } from '../src/ubscore/core.js';
import type { WalLog } from '../wal/log.js';
import type { SnapshotStore } from '../wal/snapshot.js';
import type { UbsWorkerData } from './protocol.js';
import {
  UBS_BATCH_COMMANDS_MAX,
  UBS_BATCH_COMMANDS_MIN,
  UBS_CLOSE_SNAPSHOT_TAIL_RECORDS_MIN,
  UBS_DISK_RESERVE_BYTES_MIN,
  UBS_SNAPSHOT_EVERY_RECORDS_MIN,
  UBS_SNAPSHOT_SLICE_ACCOUNTS_MIN,
  UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT,
  UBS_DISK_RESERVE_BYTES_DEFAULT,
  UBS_DISK_RESERVE_BYTES_MAX,
  UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
  UBS_SNAPSHOT_RECORDS_MAX,
  UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT,
  UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX,
} from '../src/limits.js';

const logger = createLogger({ level: 'warn', name: 'ubscore' });

export type UbsOptions = Required<UbsWorkerData>;

function optionalCount(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`ubscore: workerData.${name} must be an integer in ${min}..${max}`);
  }
  return value;
}

export function readWorkerData(data: unknown): UbsOptions {
  const candidate = (typeof data === 'object' && data !== null ? data : {}) as Partial<UbsWorkerData>;
  const { walDir, batchMax } = candidate;
  if (typeof walDir !== 'string' || walDir.length === 0) throw new Error('ubscore: workerData.walDir must be a path');
  if (
    typeof batchMax !== 'number' ||
    !Number.isSafeInteger(batchMax) ||
    batchMax < UBS_BATCH_COMMANDS_MIN ||
    batchMax > UBS_BATCH_COMMANDS_MAX
  ) {
    throw new Error(`ubscore: workerData.batchMax must be an integer in ${UBS_BATCH_COMMANDS_MIN}..${UBS_BATCH_COMMANDS_MAX}`);
  }
  return {
    walDir,
    batchMax,
    snapshotEveryRecords: optionalCount(
      candidate.snapshotEveryRecords,
      'snapshotEveryRecords',
      UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
      UBS_SNAPSHOT_EVERY_RECORDS_MIN,
      UBS_SNAPSHOT_RECORDS_MAX,
    ),
    closeSnapshotRecordsMin: optionalCount(
      candidate.closeSnapshotRecordsMin,
      'closeSnapshotRecordsMin',
      UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT,
      UBS_CLOSE_SNAPSHOT_TAIL_RECORDS_MIN,
      UBS_SNAPSHOT_RECORDS_MAX,
    ),
    snapshotSliceAccounts: optionalCount(
      candidate.snapshotSliceAccounts,
      'snapshotSliceAccounts',
      UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT,
      UBS_SNAPSHOT_SLICE_ACCOUNTS_MIN,
      UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX,
    ),
    diskReserveBytes: optionalCount(
      candidate.diskReserveBytes,
      'diskReserveBytes',
      UBS_DISK_RESERVE_BYTES_DEFAULT,
      UBS_DISK_RESERVE_BYTES_MIN,
      UBS_DISK_RESERVE_BYTES_MAX,
    ),
  };
}

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
