// UBSCore's start options, read from its workerData and bounded (the ledger is rebuilt from disk
// by wal/restore.ts).

import type { UbsWorkerData } from '../protocol.js';
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
} from '../../src/limits.js';

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
  const { walDir, batchMax, follow } = candidate;
  if (follow !== undefined && typeof follow !== 'boolean') throw new Error('ubscore: workerData.follow must be a boolean');
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
    follow: follow ?? false,
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
