// The transfer's contract: what a new transfer is, what a transfer looks like to the layers
// that report it, and what a submitted transfer gets back. Plain data that can cross a thread;
// every layer from the HTTP edge to the adapters speaks it, so it lives in the domain.

import type { TransferStateName } from './fsm.js';
import type { ErrorCode } from './errors.js';
import type { AccountKind, FailureCode } from './types.js';

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
