// UBSCore's start options, read from its workerData and bounded (the ledger is rebuilt from disk
// by wal/restore.ts).

import type { UbsWorkerData } from './protocol.js';

/** The largest `batchMax` accepted: commands (and so WAL records) per LMDB transaction; matches the UBS_BATCH_MAX bound in src/config.ts. */
export const UBS_BATCH_COMMANDS_MAX = 100_000;
export const UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT = 100_000;
/**
 * Replaying this few records at the next start costs about a millisecond, less than encoding and
 * syncing a snapshot of every account, so `close` skips the snapshot for a shorter tail.
 */
export const UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT = 1_000;
/** Measured about 4 ms per 20,000 accounts on the 2-core machine: well under the 50 ms budget. */
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT = 20_000;
/** Bounds the snapshot options so that no setting is effectively unbounded. */
export const UBS_SNAPSHOT_RECORDS_MAX = 1_000_000_000;
export const UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX = 1_000_000;
/**
 * Free bytes kept on the WAL's filesystem: more than one transaction can grow the file by (a full
 * batch's records, processed entries and B-tree pages, or a snapshot of a few million accounts).
 */
export const UBS_DISK_RESERVE_BYTES_DEFAULT = 256 * 1024 * 1024;
export const UBS_DISK_RESERVE_BYTES_MAX = 2 ** 50;

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
  if (typeof batchMax !== 'number' || !Number.isSafeInteger(batchMax) || batchMax < 1 || batchMax > UBS_BATCH_COMMANDS_MAX) {
    throw new Error(`ubscore: workerData.batchMax must be an integer in 1..${UBS_BATCH_COMMANDS_MAX}`);
  }
  return {
    walDir,
    batchMax,
    snapshotEveryRecords: optionalCount(
      candidate.snapshotEveryRecords,
      'snapshotEveryRecords',
      UBS_SNAPSHOT_EVERY_RECORDS_DEFAULT,
      0,
      UBS_SNAPSHOT_RECORDS_MAX,
    ),
    closeSnapshotRecordsMin: optionalCount(
      candidate.closeSnapshotRecordsMin,
      'closeSnapshotRecordsMin',
      UBS_CLOSE_SNAPSHOT_RECORDS_MIN_DEFAULT,
      1,
      UBS_SNAPSHOT_RECORDS_MAX,
    ),
    snapshotSliceAccounts: optionalCount(
      candidate.snapshotSliceAccounts,
      'snapshotSliceAccounts',
      UBS_SNAPSHOT_SLICE_ACCOUNTS_DEFAULT,
      1,
      UBS_SNAPSHOT_SLICE_ACCOUNTS_MAX,
    ),
    diskReserveBytes: optionalCount(
      candidate.diskReserveBytes,
      'diskReserveBytes',
      UBS_DISK_RESERVE_BYTES_DEFAULT,
      0,
      UBS_DISK_RESERVE_BYTES_MAX,
    ),
  };
}
