// Funds entering from outside (the external deposit flow), idempotent by `ref`. Every movement
// is one row of external_movements, the ledger the conservation check sums. A FUNDING deposit
// is one PostgreSQL transaction. A SPOT deposit is recorded PENDING first, then sent to
// UBSCore (idempotent by ref there too), then marked DONE; a PENDING one is re-driven.

import type { UbsSend } from '../adapters/trading.js';
import type { Sql } from '../db/sql.js';
import type { AccountKind } from '../domain/types.js';
import type { Logger } from '../log.js';

export type Deposit = {
  readonly ref: string;
  readonly userId: bigint;
  readonly account: AccountKind;
  readonly asset: string;
  readonly amount: bigint;
};

export type DepositOutcome =
  | { readonly kind: 'done'; readonly duplicate: boolean }
  | { readonly kind: 'pending'; readonly reason: string }
  | { readonly kind: 'refused'; readonly code: string };

type MovementRow = { user_id: bigint; account: string; asset: string; amount: bigint; kind: string; state: string; code: string | null };

const NUMERIC_OUT_OF_RANGE = '22003';

export class ExternalMovements {
  constructor(
    private readonly deps: { readonly sql: Sql; readonly ubs: UbsSend; readonly ubsTimeoutMs: number; readonly log: Logger },
  ) {}

  async deposit(d: Deposit): Promise<DepositOutcome> {
    const existing = await this.find(d.ref);
    if (existing !== null) return this.repeat(existing, d);
    if (d.account === 'FUNDING') return this.depositFunding(d);
    const inserted = await this.deps.sql`
      INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state)
      VALUES (${d.ref}, 'DEPOSIT', ${d.userId}, 'SPOT', ${d.asset}, ${d.amount}, 'PENDING')
      ON CONFLICT (ref) DO NOTHING RETURNING ref`;
    if (inserted.length === 0) return this.deposit(d);
    return this.driveSpot(d);
  }

  /** Re-drives every SPOT deposit left PENDING by a crash or a timeout. */
  async resumePending(): Promise<number> {
    const rows = await this.deps.sql<(MovementRow & { ref: string })[]>`
      SELECT * FROM external_movements WHERE state = 'PENDING' ORDER BY created_at`;
    for (const r of rows) {
      await this.driveSpot({ ref: r.ref, userId: r.user_id, account: 'SPOT', asset: r.asset, amount: r.amount });
    }
    return rows.length;
  }

  private async depositFunding(d: Deposit): Promise<DepositOutcome> {
    try {
      const done = await this.deps.sql.begin(async (tx) => {
        const rows = await tx`
          INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state)
          VALUES (${d.ref}, 'DEPOSIT', ${d.userId}, 'FUNDING', ${d.asset}, ${d.amount}, 'DONE')
          ON CONFLICT (ref) DO NOTHING RETURNING ref`;
        if (rows.length === 0) return false;
        // The first deposit creates the FUNDING account (spec 001 §1.5.5).
        await tx`
          INSERT INTO funding_balances (user_id, asset, available) VALUES (${d.userId}, ${d.asset}, ${d.amount})
          ON CONFLICT (user_id, asset) DO UPDATE SET available = funding_balances.available + EXCLUDED.available, updated_at = now()`;
        return true;
      });
      return done ? { kind: 'done', duplicate: false } : this.deposit(d);
    } catch (error) {
      if ((error as { code?: unknown }).code === NUMERIC_OUT_OF_RANGE) return { kind: 'refused', code: 'OVERFLOW' };
      throw error;
    }
  }

  private async driveSpot(d: Deposit): Promise<DepositOutcome> {
    const result = await this.deps.ubs(
      { kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref: d.ref, userId: d.userId, asset: d.asset, amount: d.amount },
      this.deps.ubsTimeoutMs,
    );
    if (result === null) return { kind: 'pending', reason: 'UBSCore did not answer; retry with the same ref' };
    switch (result.kind) {
      case 'applied':
        await this.deps.sql`UPDATE external_movements SET state = 'DONE', updated_at = now() WHERE ref = ${d.ref} AND state = 'PENDING'`;
        return { kind: 'done', duplicate: result.duplicate };
      case 'invalid':
      case 'rejected':
        await this.deps.sql`UPDATE external_movements SET state = 'REJECTED', code = ${result.code}, updated_at = now()
                             WHERE ref = ${d.ref} AND state = 'PENDING'`;
        return { kind: 'refused', code: result.code };
      default:
        this.deps.log.critical('UBSCore answered a deposit unexpectedly', { ref: d.ref, result: result.kind });
        return { kind: 'pending', reason: `UBSCore answered ${result.kind}` };
    }
  }

  private async find(ref: string): Promise<MovementRow | null> {
    const rows = await this.deps.sql<MovementRow[]>`SELECT * FROM external_movements WHERE ref = ${ref}`;
    return rows[0] ?? null;
  }

  private async repeat(row: MovementRow, d: Deposit): Promise<DepositOutcome> {
    const same = row.kind === 'DEPOSIT' && row.user_id === d.userId && row.account === d.account && row.asset === d.asset && row.amount === d.amount;
    if (!same) return { kind: 'refused', code: 'DUPLICATE_REQUEST' };
    if (row.state === 'DONE') return { kind: 'done', duplicate: true };
    if (row.state === 'REJECTED') return { kind: 'refused', code: row.code ?? 'INVALID_REQUEST' };
    return this.driveSpot(d);
  }
}
