// Funds entering or leaving from outside (the external deposit flow; the trading side spending
// SPOT funds), idempotent by `ref`. Every movement is one row of external_movements, the ledger
// the conservation check sums. A FUNDING movement is one PostgreSQL transaction. A SPOT movement
// is recorded PENDING first, then sent to UBSCore (idempotent by ref there too), then marked
// DONE or REJECTED; a PENDING one is re-driven by a repeat or at the next start.
// A correction (the operator's reason given) is the remedy for a conservation difference: it moves
// the balance like any movement and is kept in the ledger with its reason, and the conservation
// check does not count it as money entering or leaving (migration 0009): it brings a balance back
// to what the real movements prove. While the service is halted (MON-003) a new ref is refused
// with SERVICE_HALTED and nothing is recorded, unless it is a correction; a ref already recorded
// is answered (a PENDING one driven) as ever: it is in flight.

import type { UbsSend } from '../ubscore/control.js';
import type { Sql, Tx } from '../db/sql.js';
import type { HaltState } from '../db/halt-state.js';
import { mustBusinessCode, mustErrorCode, type ErrorCode } from '../domain/errors.js';
import type { AccountKind, BusinessCode } from '../domain/types.js';
import type { Logger } from '../log.js';
import { PENDING_RESUME_MAX } from '../limits.js';

export type MovementKind = 'DEPOSIT' | 'WITHDRAW';

type Movement = {
  readonly kind: MovementKind;
  readonly ref: string;
  readonly userId: bigint;
  readonly account: AccountKind;
  readonly asset: string;
  readonly amount: bigint;
};

type MovementOutcome =
  | { readonly kind: 'done'; readonly duplicate: boolean }
  | { readonly kind: 'pending'; readonly reason: string }
  | { readonly kind: 'refused'; readonly code: ErrorCode };

type MovementRow = {
  ref: string;
  user_id: bigint;
  account: AccountKind;
  asset: string;
  amount: bigint;
  kind: MovementKind;
  state: string;
  code: string | null;
  correction_reason: string | null;
};

const NUMERIC_OUT_OF_RANGE = '22003';

export class ExternalMovements {
  constructor(
    private readonly deps: {
      readonly sql: Sql;
      readonly ubs: UbsSend;
      readonly ubsTimeoutMs: number;
      readonly log: Logger;
      readonly halt: { readonly current: HaltState };
    },
  ) {}

  /** `correction`: the operator's reason when the movement corrects the ledger (allowed while halted). */
  async apply(m: Movement, correction: string | null = null): Promise<MovementOutcome> {
    const existing = await this.find(m.ref);
    if (existing !== null) return this.repeat(existing, m, correction);
    const halt = this.deps.halt.current;
    if (halt !== null) {
      if (correction === null) return { kind: 'refused', code: 'SERVICE_HALTED' };
      this.deps.log.critical('correcting movement while halted', {
        ref: m.ref,
        kind: m.kind,
        user_id: m.userId,
        account: m.account,
        asset: m.asset,
        amount: m.amount.toString(),
        correction_reason: correction,
        halt_reason: halt.reason,
      });
    }
    if (m.account === 'FUNDING') return this.applyFunding(m, correction);
    const inserted = await this.deps.sql`
      INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state, correction_reason)
      VALUES (${m.ref}, ${m.kind}, ${m.userId}, 'SPOT', ${m.asset}, ${m.amount}, 'PENDING', ${correction})
      ON CONFLICT (ref) DO NOTHING RETURNING ref`;
    if (inserted.length === 0) return this.apply(m, correction);
    return this.driveSpot(m);
  }

  /** Re-drives every SPOT movement left PENDING by a crash or a timeout. */
  async resumePending(): Promise<number> {
    const rows = await this.deps.sql<MovementRow[]>`
      SELECT * FROM external_movements WHERE state = 'PENDING' ORDER BY created_at LIMIT ${PENDING_RESUME_MAX}`;
    for (const r of rows) await this.driveSpot(toMovement(r));
    return rows.length;
  }

  private async applyFunding(m: Movement, correction: string | null): Promise<MovementOutcome> {
    try {
      // Null: another request recorded the same ref first; answer as its repeat.
      const outcome = await this.deps.sql.begin(async (tx): Promise<MovementOutcome | null> => {
        const rows = await tx`
          INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state, correction_reason)
          VALUES (${m.ref}, ${m.kind}, ${m.userId}, 'FUNDING', ${m.asset}, ${m.amount}, 'DONE', ${correction})
          ON CONFLICT (ref) DO NOTHING RETURNING ref`;
        if (rows.length === 0) return null;
        if (m.kind === 'DEPOSIT') {
          // The first deposit creates the FUNDING account (spec 001 §1.5.5).
          await tx`
            INSERT INTO funding_balances (user_id, asset, available) VALUES (${m.userId}, ${m.asset}, ${m.amount})
            ON CONFLICT (user_id, asset) DO UPDATE SET available = funding_balances.available + EXCLUDED.available, updated_at = now()`;
          return { kind: 'done', duplicate: false };
        }
        const refused = await debitFunding(tx, m);
        if (refused !== null) {
          await tx`UPDATE external_movements SET state = 'REJECTED', code = ${refused} WHERE ref = ${m.ref}`;
          return { kind: 'refused', code: refused };
        }
        return { kind: 'done', duplicate: false };
      });
      return outcome ?? (await this.apply(m, correction));
    } catch (error) {
      if ((error as { code?: unknown }).code === NUMERIC_OUT_OF_RANGE) return { kind: 'refused', code: 'OVERFLOW' };
      throw error;
    }
  }

  private async driveSpot(m: Movement): Promise<MovementOutcome> {
    const op = m.kind === 'DEPOSIT' ? 'EXTERNAL_DEPOSIT' : 'EXTERNAL_WITHDRAW';
    const result = await this.deps.ubs(
      { kind: 'external_op', op, ref: m.ref, userId: m.userId, asset: m.asset, amount: m.amount },
      this.deps.ubsTimeoutMs,
    );
    if (result === null) return { kind: 'pending', reason: 'UBSCore did not answer; repeat with the same ref' };
    switch (result.kind) {
      case 'applied':
        await this.deps.sql`UPDATE external_movements SET state = 'DONE', updated_at = now() WHERE ref = ${m.ref} AND state = 'PENDING'`;
        return { kind: 'done', duplicate: result.duplicate };
      case 'invalid':
      case 'rejected': {
        // UBSCore refuses an external movement with the codes of an account, never a refund's.
        const code = mustErrorCode(result.code, 'UBSCore answer to an external movement');
        await this.deps.sql`UPDATE external_movements SET state = 'REJECTED', code = ${code}, updated_at = now()
                             WHERE ref = ${m.ref} AND state = 'PENDING'`;
        return { kind: 'refused', code };
      }
      case 'unavailable':
        return { kind: 'pending', reason: `UBSCore is unavailable (${result.reason}); repeat with the same ref` };
      default:
        this.deps.log.critical('UBSCore answered an external movement unexpectedly', { ref: m.ref, result: result.kind });
        return { kind: 'pending', reason: `UBSCore answered ${result.kind}` };
    }
  }

  private async find(ref: string): Promise<MovementRow | null> {
    const rows = await this.deps.sql<MovementRow[]>`SELECT * FROM external_movements WHERE ref = ${ref}`;
    return rows[0] ?? null;
  }

  private async repeat(row: MovementRow, m: Movement, correction: string | null): Promise<MovementOutcome> {
    // A correction and an ordinary movement are different requests, whatever their reasons say.
    const same =
      row.kind === m.kind &&
      row.user_id === m.userId &&
      row.account === m.account &&
      row.asset === m.asset &&
      row.amount === m.amount &&
      (row.correction_reason === null) === (correction === null);
    if (!same) return { kind: 'refused', code: 'DUPLICATE_REQUEST' };
    if (row.state === 'DONE') return { kind: 'done', duplicate: true };
    if (row.state === 'REJECTED')
      return { kind: 'refused', code: row.code === null ? 'INVALID_REQUEST' : mustErrorCode(row.code, 'external_movements.code') };
    return this.driveSpot(m);
  }
}

/**
 * Debits a FUNDING account for an external withdrawal, with the row locked; null when done. What
 * refuses a FUNDING debit (no account, frozen, disabled, short of funds) is decided in one place
 * for transfers and external withdrawals alike: the SQL function funding_refusal
 * (src/db/migrations/repeatable/funding_refusal.sql), which transfer_apply calls for a transfer's WITHDRAW.
 */
async function debitFunding(tx: Tx, m: Movement): Promise<BusinessCode | null> {
  const rows = await tx<{ code: string | null }[]>`
    WITH account AS (
      SELECT available, status FROM funding_balances WHERE user_id = ${m.userId} AND asset = ${m.asset} FOR UPDATE)
    SELECT funding_refusal('WITHDRAW', EXISTS (SELECT 1 FROM account), (SELECT status FROM account),
                           (SELECT available FROM account), ${m.amount}::bigint, NULL, false) AS code`;
  const refused = rows[0]?.code ?? null;
  if (refused !== null) return mustBusinessCode(refused, 'funding_refusal');
  await tx`UPDATE funding_balances SET available = available - ${m.amount}, updated_at = now() WHERE user_id = ${m.userId} AND asset = ${m.asset}`;
  return null;
}

function toMovement(r: MovementRow): Movement {
  return { kind: r.kind, ref: r.ref, userId: r.user_id, account: r.account, asset: r.asset, amount: r.amount };
}
