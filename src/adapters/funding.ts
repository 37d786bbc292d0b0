// The Funding adapter: FUNDING balances in PostgreSQL. Each operation is one transaction that
// locks the balance row, checks the (req_id, op) record, changes the balance and records the
// outcome, so the effect and its idempotency record commit together or not at all.

import { checkOpRequest } from '../domain/checks.js';
import { BALANCE_UNITS_MAX } from '../domain/money.js';
import { failed, pending, SUCCESS, type OpOutcome, type TransferOp } from '../domain/types.js';
import type { Sql } from '../db/sql.js';
import { describeError, OperationAdapter, type OpRequest, type QueryOutcome } from './types.js';

type Account = { available: bigint; status: string };
type OpRecord = { user_id: bigint; asset: string; amount: bigint; outcome: 'APPLIED' | 'REJECTED'; code: string | null };

/** What one operation does to the balance: a signed delta and the outcome to record. */
type Decision = { readonly delta: bigint; readonly outcome: 'APPLIED' | 'REJECTED'; readonly code: string | null };

export class FundingAdapter extends OperationAdapter {
  override readonly account = 'FUNDING' as const;

  constructor(private readonly sql: Sql) {
    super();
  }

  /** Whether the FUNDING account exists; only the external deposit flow creates one. */
  async accountExists(userId: bigint, asset: string): Promise<boolean> {
    const rows = await this.sql`SELECT 1 FROM funding_balances WHERE user_id = ${userId} AND asset = ${asset}`;
    return rows.length === 1;
  }

  async query(reqId: string, op: TransferOp): Promise<QueryOutcome> {
    try {
      const rows = await this.sql<OpRecord[]>`SELECT * FROM funding_operations WHERE req_id = ${reqId} AND op = ${op}`;
      const row = rows[0];
      return row === undefined ? { kind: 'NOT_FOUND' } : recordedOutcome(op, row);
    } catch (error) {
      return pending(`funding query: ${describeError(error)}`);
    }
  }

  protected async apply(op: TransferOp, req: OpRequest): Promise<OpOutcome> {
    const invalid = checkOpRequest(req);
    if (invalid !== null) return failed(invalid);
    try {
      return await this.sql.begin(async (tx) => {
        // Lock the balance row first: a concurrent call for the same (req_id, op) then waits
        // here and, once it proceeds, sees the record the first one committed.
        const accounts = await tx<Account[]>`
          SELECT available, status FROM funding_balances WHERE user_id = ${req.userId} AND asset = ${req.asset} FOR UPDATE`;
        const prior = await tx<OpRecord[]>`SELECT * FROM funding_operations WHERE req_id = ${req.reqId} AND op = ${op}`;
        const seen = prior[0];
        if (seen !== undefined) return repeatOutcome(op, seen, req);
        const withdrawal =
          op === 'REFUND'
            ? await tx<OpRecord[]>`SELECT * FROM funding_operations WHERE req_id = ${req.reqId} AND op = 'WITHDRAW'`
            : [];
        const decision = decide(op, accounts[0] ?? null, req, withdrawal[0] ?? null);
        if (decision.delta !== 0n) {
          await tx`UPDATE funding_balances SET available = available + ${decision.delta}, updated_at = now()
                    WHERE user_id = ${req.userId} AND asset = ${req.asset}`;
        }
        await tx`INSERT INTO funding_operations (req_id, op, user_id, asset, amount, outcome, code)
                 VALUES (${req.reqId}, ${op}, ${req.userId}, ${req.asset}, ${req.amount}, ${decision.outcome}, ${decision.code})`;
        return recordedOutcome(op, decision);
      });
    } catch (error) {
      // The transaction may or may not have committed (a lost connection on COMMIT): unknown.
      return pending(`funding ${op}: ${describeError(error)}`);
    }
  }
}

/** The rules, with the row locked. Pure. */
function decide(op: TransferOp, account: Account | null, req: OpRequest, withdrawal: OpRecord | null): Decision {
  const reject = (code: string): Decision => ({ delta: 0n, outcome: 'REJECTED', code });
  switch (op) {
    case 'WITHDRAW':
      if (account === null) return reject('SOURCE_ACCOUNT_NOT_FOUND');
      if (account.status === 'FROZEN') return reject('ACCOUNT_FROZEN');
      if (account.status === 'DISABLED') return reject('ACCOUNT_DISABLED');
      if (account.available < req.amount) return reject('INSUFFICIENT_BALANCE');
      return { delta: -req.amount, outcome: 'APPLIED', code: null };
    case 'DEPOSIT':
      if (account === null) return reject('TARGET_ACCOUNT_NOT_FOUND');
      if (account.available + req.amount > BALANCE_UNITS_MAX) return reject('OVERFLOW');
      return { delta: req.amount, outcome: 'APPLIED', code: null };
    case 'REFUND':
      // Only a withdraw this adapter applied, with the same parameters, may be refunded.
      if (withdrawal === null || withdrawal.outcome !== 'APPLIED' || !sameParams(withdrawal, req) || account === null) {
        return reject('REFUND_WITHOUT_WITHDRAW');
      }
      return { delta: req.amount, outcome: 'APPLIED', code: null };
  }
}

function sameParams(row: OpRecord, req: OpRequest): boolean {
  return row.user_id === req.userId && row.asset === req.asset && row.amount === req.amount;
}

function repeatOutcome(op: TransferOp, row: OpRecord, req: OpRequest): OpOutcome {
  if (!sameParams(row, req)) {
    // The same (req_id, op) with other parameters is a programmer error: never apply, never
    // answer a definitive result, and let an operator look.
    return pending(`IDEMPOTENCY_CONFLICT: funding ${op} ${req.reqId} was recorded with other parameters`);
  }
  return recordedOutcome(op, row);
}

/** A refund that cannot be applied is never a final answer: the transfer stays COMPENSATING. */
function recordedOutcome(op: TransferOp, row: Pick<OpRecord, 'outcome' | 'code'>): OpOutcome {
  if (row.outcome === 'APPLIED') return SUCCESS;
  if (op === 'REFUND') return pending(`funding refund refused: ${row.code ?? 'unknown'}`);
  return failed((row.code ?? 'INVALID_REQUEST') as Parameters<typeof failed>[0]);
}
