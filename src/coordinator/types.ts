// What the coordinator takes in and reports out, as plain data that can cross a thread.

import type { CoordinatorSettings } from '../config.js';
import type { TransferStateName } from '../domain/fsm.js';
import type { AccountKind, BusinessCode, ValidationCode } from '../domain/types.js';

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
