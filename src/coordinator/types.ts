// What the coordinator takes in and reports out, as plain data that can cross a thread.

import type { PgTimeouts } from '../db/sql.js';
import type { TransferStateName } from '../domain/fsm.js';
import type { ErrorCode } from '../domain/errors.js';
import type { AccountKind, FailureCode } from '../domain/types.js';
import type { CrashPoint } from '../faults/crash-points.js';

/**
 * Why a coordinator refused to create a transfer (nothing was recorded), or to drive one it does
 * not know (NOT_FOUND).
 */
export type RefusalCode =
  | FailureCode
  | 'NOT_FOUND'
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
  /** Why it ended FAILED or went COMPENSATING: a business rejection, or a daily limit for one recorded outside its shard. */
  readonly errorCode: ErrorCode | null;
  readonly retryCount: number;
  /** Unknown outcomes since the last state change. */
  readonly attempts: number;
  readonly createdAt: string;
  readonly updatedAt: string;
};

/**
 * What a submitted transfer (or an operator's drive) gets back: one shape from the shard, through
 * the thread and the mailbox, to the HTTP edge, which alone turns it into an answer. `busy`: the
 * shard's mailbox is full; `error`: the shard or its thread failed, the outcome is unknown.
 */
export type SubmitReply =
  | { readonly kind: 'transfer'; readonly view: TransferView }
  | { readonly kind: 'refused'; readonly code: RefusalCode }
  | { readonly kind: 'busy' }
  | { readonly kind: 'error'; readonly message: string };

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
