// What the coordinator takes in and reports out, as plain data that can cross a thread.

import type { CoordinatorSettings } from '../config.js';
import type { TransferStateName } from '../domain/fsm.js';
import type { ErrorCode } from '../domain/errors.js';
import type { AccountKind, FailureCode } from '../domain/types.js';

/**
 * Why a coordinator refused to create a transfer (nothing was recorded), or to drive one it does
 * not know (NOT_FOUND).
 */
type RefusalCode =
  | FailureCode
  | 'NOT_FOUND'
  | 'DAILY_LIMIT_EXCEEDED'
  | 'DAILY_AMOUNT_EXCEEDED'
  | 'RATE_LIMIT_EXCEEDED'
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
  /** DUPLICATE_REQUEST: the client_order_id is held by another request, the transfer `originalReqId`. */
  | { readonly kind: 'duplicate'; readonly originalReqId: string }
  | { readonly kind: 'busy' }
  | { readonly kind: 'error'; readonly message: string };

/**
 * What a coordinator shard runs with: the configuration's coordinator section (src/config.ts,
 * COORDINATOR_SETTINGS) whole, plus what only a shard has.
 */
export type CoordinatorConfig = CoordinatorSettings & {
  readonly shard: number;
  readonly shards: number;
  /** The PostgreSQL server's URL: the one configured, or the embedded server's. */
  readonly databaseUrl: string;
  /** Transfers one recovery-scan query reads (SCAN_BATCH_MAX; tests make it smaller). */
  readonly scanBatchMax: number;
  /** Retry timers a shard holds at once (RETRY_TIMERS_MAX). */
  readonly retryTimersMax: number;
};
