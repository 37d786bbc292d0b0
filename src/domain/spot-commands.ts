// UBSCore's command language: what a client may ask of the spot ledger, and every answer.
// Plain data, so it can cross a thread as a structured clone (bigint included).

import type { AccountStatus, BusinessCode, TransferOp, ValidationCode } from './types.js';

/** External movements of spot funds (admin deposit, trading-side spend), keyed by `ref`. */
export type ExternalOp = 'EXTERNAL_DEPOSIT' | 'EXTERNAL_WITHDRAW';
/** The operation part of a processed-set key. */
export type UbsOpName = TransferOp | ExternalOp;

export type UbsCommand =
  | {
      readonly kind: 'transfer_op';
      readonly op: TransferOp;
      readonly reqId: string;
      readonly userId: bigint;
      readonly asset: string;
      readonly amount: bigint;
    }
  | {
      readonly kind: 'external_op';
      readonly op: ExternalOp;
      readonly ref: string;
      readonly userId: bigint;
      readonly asset: string;
      readonly amount: bigint;
    }
  | {
      readonly kind: 'set_status';
      readonly userId: bigint;
      readonly asset: string;
      readonly status: AccountStatus;
    }
  | { readonly kind: 'query_op'; readonly op: UbsOpName; readonly key: string }
  | { readonly kind: 'balances'; readonly userId: bigint }
  /** Every account at the current WAL position, for the conservation check. Read-only. */
  | { readonly kind: 'audit_cut' }
  /** At which WAL position each operation was applied (null: never applied). Read-only. */
  | { readonly kind: 'op_seqs'; readonly keys: readonly { readonly op: UbsOpName; readonly key: string }[] };

/** Codes UBSCore answers with when it refuses a command on business grounds. */
/**
 * OVERFLOW: a credit that would take the balance beyond BIGINT. It is recorded, so a late repeat
 * of the same DEPOSIT can never be applied after the transfer was compensated.
 */
/** What UBSCore may refuse with: the business codes of an account it holds (a constraint is PostgreSQL's). */
export type UbsRejectCode = Exclude<BusinessCode, 'CONSTRAINT_VIOLATION'> | 'REFUND_WITHOUT_WITHDRAW' | 'OVERFLOW';

export type SpotBalance = {
  readonly asset: string;
  readonly available: bigint;
  readonly status: AccountStatus;
};

export type UbsResult =
  /** Applied (now, or earlier when `duplicate`): the effect is durable. */
  | { readonly kind: 'applied'; readonly duplicate: boolean }
  /** Refused on business grounds; the refusal itself is durable and answers every repeat. */
  | { readonly kind: 'rejected'; readonly code: UbsRejectCode; readonly duplicate: boolean }
  /** Input refused by UBSCore's own checks; nothing recorded, nothing changed. */
  | { readonly kind: 'invalid'; readonly code: ValidationCode }
  /** The key was processed before with other parameters; nothing applied. A programmer error. */
  | { readonly kind: 'conflict'; readonly detail: string }
  /** `query_op` for a key never processed. */
  | { readonly kind: 'not_found' }
  | { readonly kind: 'balances'; readonly balances: readonly SpotBalance[] }
  /** The status was recorded durably. */
  | { readonly kind: 'status_set' }
  | { readonly kind: 'audit_cut'; readonly seq: number; readonly accounts: readonly AuditAccount[] }
  | { readonly kind: 'op_seqs'; readonly seqs: readonly (number | null)[] }
  /**
   * Nothing about the command is known: UBSCore could not make its batch durable, or refuses
   * every command while its disk takes no writes (docs/operations.md, "A full disk"). An unknown outcome,
   * never a failure: retry idempotently later. Answered at once, so no caller waits for its timeout.
   */
  | { readonly kind: 'unavailable'; readonly reason: UbsUnavailableReason };

/**
 * Why UBSCore answered `unavailable`: its batch failed to write, it is waiting for the disk, or it
 * is a standby's core, following the owner's log (it decides nothing until it leads).
 */
type UbsUnavailableReason = 'write_failed' | 'wal_unwritable' | 'standby';

export type AuditAccount = { readonly userId: bigint; readonly asset: string; readonly available: bigint };
