// The interface both account adapters offer the coordinator (spec 003 §6.1). Every operation
// is idempotent per (req_id, op) and answers an OpOutcome value; none throws.

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

export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
