// The interface both account adapters offer the coordinator (spec 003 §6.1). Every operation
// is idempotent per (req_id, op) and answers an OpOutcome value; none throws.

import type { NewTransfer } from '../domain/transfer.js';
import type { Paths, WriteResult } from '../db/transfer-writes.js';
import type { TransferStateName } from '../domain/fsm.js';
import type { AccountKind, OpOutcome, TransferOp } from '../domain/types.js';

export type OpRequest = {
  readonly reqId: string;
  readonly userId: bigint;
  readonly asset: string;
  readonly amount: bigint;
};

export type QueryOutcome = OpOutcome | { readonly kind: 'NOT_FOUND' };

export interface AccountAdapter {
  readonly account: AccountKind;
  /** Debits the source. */
  withdraw(req: OpRequest): Promise<OpOutcome>;
  /** Credits the target. */
  deposit(req: OpRequest): Promise<OpOutcome>;
  /** Credits back a successful withdraw of the same req_id; never answers FAILED. */
  refund(req: OpRequest): Promise<OpOutcome>;
  /** The recorded outcome of (req_id, op), without side effects. */
  query(reqId: string, op: TransferOp): Promise<QueryOutcome>;
}

/**
 * The move a local operation decides, made in the operation's own transaction (spec 003 §4.3):
 * from `from` along `paths.ok` when applied, `paths.ko` when refused. `create` makes the
 * transfer in the same transaction (its INIT step folded into its creation).
 */
export type TransferMove = { readonly create: NewTransfer | null; readonly from: TransferStateName; readonly paths: Paths };

export type MovedOutcome =
  /** Applied or refused, and the transfer moved along the path that outcome chose. */
  | { readonly kind: 'moved'; readonly outcome: OpOutcome; readonly result: Extract<WriteResult, { kind: 'moved' }> }
  /** The transfer was not in `from` (another drive moved it): nothing was applied. */
  | { readonly kind: 'lost' }
  /** The transfer to create exists already (its req_id or client_order_id): nothing was applied. */
  | { readonly kind: 'exists' }
  /** An answer with no move recorded (refused input, unknown outcome, a held refund): the caller decides. */
  | { readonly kind: 'unmoved'; readonly outcome: OpOutcome };

/**
 * An adapter whose store is the coordinator's own PostgreSQL: an operation and the state moves
 * around it commit together, so the move needs no pending state before the call.
 */
export interface LocalAccountAdapter extends AccountAdapter {
  applyWithMove(op: TransferOp, req: OpRequest, move: TransferMove): Promise<MovedOutcome>;
}

export function isLocal(adapter: AccountAdapter): adapter is LocalAccountAdapter {
  return typeof (adapter as Partial<LocalAccountAdapter>).applyWithMove === 'function';
}

/** The three money operations as one `apply(op, req)`, which each adapter implements. */
export abstract class OperationAdapter implements AccountAdapter {
  abstract readonly account: AccountKind;

  withdraw(req: OpRequest): Promise<OpOutcome> {
    return this.apply('WITHDRAW', req);
  }

  deposit(req: OpRequest): Promise<OpOutcome> {
    return this.apply('DEPOSIT', req);
  }

  refund(req: OpRequest): Promise<OpOutcome> {
    return this.apply('REFUND', req);
  }

  abstract query(reqId: string, op: TransferOp): Promise<QueryOutcome>;

  protected abstract apply(op: TransferOp, req: OpRequest): Promise<OpOutcome>;
}
