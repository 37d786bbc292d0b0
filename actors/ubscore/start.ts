// UBSCore's start options, read from its workerData and bounded (the ledger is rebuilt from disk
// by src/ubscore/durability/restore.ts).

import type { UbsOptions, UbsSpotLog } from '../../src/ubscore/control.js';
import type { UbsWorkerData } from '../protocol.js';
import { type CrashPoint, isCrashPoint } from '../../src/faults/crash-points.js';
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

function optionalCount(value: unknown, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new Error(`ubscore: workerData.${name} must be an integer in ${min}..${max}`);
  }
  return value;
}

function isCount(value: unknown, min: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min;
}

/** The PostgreSQL log's settings, checked: a URL, an owner with a tag and a numeric epoch, timeouts if any. */
function readSpotLog(value: unknown): UbsSpotLog | null {
  if (value === undefined || value === null) return null;
  const candidate = (typeof value === 'object' ? value : {}) as Partial<Record<keyof UbsSpotLog, unknown>>;
  const { databaseUrl, owner, timeouts } = candidate;
  if (typeof databaseUrl !== 'string' || databaseUrl.length === 0) throw new Error('ubscore: workerData.spotLog.databaseUrl must be a URL');
  const { tag, epoch } = (typeof owner === 'object' && owner !== null ? owner : {}) as { tag?: unknown; epoch?: unknown };
  if (typeof tag !== 'string' || tag.length === 0) throw new Error('ubscore: workerData.spotLog.owner.tag must be a non-empty string');
  // A standby's connections may write nothing: only an owner with a claimed epoch writes the log.
  if (!isCount(epoch, 1)) throw new Error('ubscore: workerData.spotLog.owner.epoch must be a claimed epoch (an integer from 1)');
  if (timeouts === undefined) return { databaseUrl, owner: { tag, epoch } };
  const t = (typeof timeouts === 'object' && timeouts !== null ? timeouts : {}) as Record<string, unknown>;
  const { statementMs, lockMs, idleInTransactionMs } = t;
  if (!isCount(statementMs, 0) || !isCount(lockMs, 0) || !isCount(idleInTransactionMs, 0))
    throw new Error('ubscore: workerData.spotLog.timeouts must hold statementMs, lockMs and idleInTransactionMs in ms');
  return { databaseUrl, owner: { tag, epoch }, timeouts: { statementMs, lockMs, idleInTransactionMs } };
}

/** The armed crash point, if any: a name src/faults/crash-points.ts lists. */
function readCrashPoint(value: unknown): CrashPoint | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !isCrashPoint(value))
    throw new Error(`ubscore: workerData.crashPoint names no crash point: ${String(value)}`);
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
    spotLog: readSpotLog(candidate.spotLog),
    crashPoint: readCrashPoint(candidate.crashPoint),
  };
}
