// What the coordinator takes in and reports out, as plain data that can cross a thread.

import type { PgTimeouts } from '../db/sql.js';
import type { TransferStateName } from '../domain/fsm.js';
import type { AccountKind, BusinessCode, ValidationCode } from '../domain/types.js';
import type { CrashPoint } from '../faults/crash-points.js';

/** Why a coordinator refused to create a transfer: nothing was recorded. */
export type RefusalCode =
  | ValidationCode
  | BusinessCode
  | 'DAILY_LIMIT_EXCEEDED'
  | 'DAILY_AMOUNT_EXCEEDED'
  | 'RATE_LIMIT_EXCEEDED'
  | 'DUPLICATE_REQUEST'
  /** MON-003: the service is halted; new transfers are refused, in-flight ones go on. */
  | 'SERVICE_HALTED';

export type NewTransfer = {
  readonly reqId: string;
  readonly userId: bigint;
  readonly from: AccountKind;
  readonly to: AccountKind;
  readonly asset: string;
  readonly amount: bigint;
  readonly clientOrderId: string | null;
};

/** A transfer as the coordinator reports it to the HTTP edge. */
export type TransferView = {
  readonly transferId: string;
  readonly reqId: string;
  readonly userId: bigint;
  readonly from: AccountKind;
  readonly to: AccountKind;
  readonly asset: string;
  readonly amount: bigint;
  readonly state: TransferStateName;
  readonly errorCode: string | null;
  readonly retryCount: number;
  /** Unknown outcomes since the last state change. */
  readonly attempts: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

export type CoordinatorConfig = {
  readonly shard: number;
  readonly shards: number;
  readonly databaseUrl: string;
  readonly pgPoolMax: number;
  readonly pgTimeouts: PgTimeouts;
  readonly adapterTimeoutMs: number;
  readonly happyPathDeadlineMs: number;
  readonly retryBaseMs: number;
  readonly retryCapMs: number;
  readonly scanIntervalMs: number;
  readonly staleThresholdMs: number;
  readonly scanBatchMax: number;
  readonly scanConcurrencyMax: number;
  /** Rows per batched statement (reads, state changes, Funding operations). */
  readonly pgBatchMax: number;
  readonly targetPendingAlertMs: number;
  readonly refundFailuresAlertMax: number;
  readonly stuckRetriesMax: number;
  readonly stuckAgeMs: number;
  readonly alertWebhookUrl: string | null;
  readonly retryTimersMax: number;
  /** Transfers per user per UTC day; 0 switches the limit off. */
  readonly dailyTransferLimit: number;
  /** Whether assets' daily_amount_limit_units is enforced. */
  readonly dailyAmountLimits: boolean;
  /** Tests only: the named point where the process kills itself. */
  readonly crashPoint: CrashPoint | null;
};
