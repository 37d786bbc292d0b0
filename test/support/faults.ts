// Fault injection around the real adapters, for tests only: make a chosen operation time out,
// fail explicitly, throw, or succeed and lose its reply, a given number of times.

import {
  isLocal,
  type AccountAdapter,
  type MovedOutcome,
  type OpRequest,
  type QueryOutcome,
  type TransferMove,
} from '../../src/adapters/types.js';
import type { AccountKind, OpOutcome, TransferOp } from '../../src/domain/types.js';

export type Fault =
  /** The call never reaches the adapter and no answer comes: unknown. */
  | { readonly kind: 'timeout' }
  /** The adapter answers an explicit business rejection without applying anything. */
  | { readonly kind: 'fail'; readonly code: string }
  /** The adapter throws (a bug, a driver exception). */
  | { readonly kind: 'throw' }
  /** The adapter applies the operation, then the answer is lost: unknown, yet applied. */
  | { readonly kind: 'lose_reply' };

type Rule = { fault: Fault; remaining: number };

export class FaultPlan {
  private readonly rules = new Map<string, Rule>();
  /** Every call that reached a wrapped adapter, in order, as "ACCOUNT.OP". */
  readonly calls: string[] = [];

  /** Injects `fault` into the next `times` calls of account.op (Infinity: until cleared). */
  set(account: AccountKind, op: TransferOp, fault: Fault, times = Infinity): void {
    this.rules.set(`${account}.${op}`, { fault, remaining: times });
  }

  clear(account?: AccountKind, op?: TransferOp): void {
    if (account === undefined || op === undefined) this.rules.clear();
    else this.rules.delete(`${account}.${op}`);
  }

  take(account: AccountKind, op: TransferOp): Fault | null {
    const key = `${account}.${op}`;
    this.calls.push(key);
    const rule = this.rules.get(key);
    if (rule === undefined || rule.remaining <= 0) return null;
    rule.remaining -= 1;
    return rule.fault;
  }

  count(account: AccountKind, op: TransferOp): number {
    return this.calls.filter((c) => c === `${account}.${op}`).length;
  }
}

export function faulty(inner: AccountAdapter, plan: FaultPlan): AccountAdapter {
  /** The answer a fault gives in place of account.op; `real` is the real call, made only by a lost reply. */
  const inject = async (op: TransferOp, fault: Fault, real: () => Promise<unknown>): Promise<OpOutcome> => {
    switch (fault.kind) {
      case 'timeout':
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { kind: 'PENDING', cause: { kind: 'timeout', detail: `injected timeout on ${inner.account}.${op}` } };
      case 'fail':
        return { kind: 'FAILED', code: fault.code as 'ACCOUNT_DISABLED' };
      case 'throw':
        throw new Error(`injected exception on ${inner.account}.${op}`);
      case 'lose_reply':
        await real();
        return { kind: 'PENDING', cause: { kind: 'timeout', detail: `injected lost reply on ${inner.account}.${op}` } };
    }
  };
  const wrap =
    (op: TransferOp, call: (req: OpRequest) => Promise<OpOutcome>) =>
    async (req: OpRequest): Promise<OpOutcome> => {
      const fault = plan.take(inner.account, op);
      return fault === null ? call(req) : inject(op, fault, () => call(req));
    };
  const wrapped: AccountAdapter = {
    account: inner.account,
    withdraw: wrap('WITHDRAW', (r) => inner.withdraw(r)),
    deposit: wrap('DEPOSIT', (r) => inner.deposit(r)),
    refund: wrap('REFUND', (r) => inner.refund(r)),
    query: (reqId: string, op: TransferOp): Promise<QueryOutcome> => inner.query(reqId, op),
  };
  if (!isLocal(inner)) return wrapped;
  // The local adapter's operation with the moves it decides: an injected answer moves nothing,
  // so the driver records it as it would a remote adapter's (a lost reply did move, unseen).
  const applyWithMove = async (op: TransferOp, req: OpRequest, move: TransferMove): Promise<MovedOutcome> => {
    const fault = plan.take(inner.account, op);
    if (fault === null) return inner.applyWithMove(op, req, move);
    return { kind: 'unmoved', outcome: await inject(op, fault, () => inner.applyWithMove(op, req, move)) };
  };
  return { ...wrapped, applyWithMove } as AccountAdapter;
}

export function faultyAdapters(plan: FaultPlan) {
  return (real: { FUNDING: AccountAdapter; SPOT: AccountAdapter }) => ({
    FUNDING: faulty(real.FUNDING, plan),
    SPOT: faulty(real.SPOT, plan),
  });
}
