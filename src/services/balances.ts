// A user's balances on both sides: FUNDING from PostgreSQL, SPOT from UBSCore.

import type { UbsSend } from '../ubscore/control.js';
import type { Sql } from '../db/sql.js';
import type { AccountStatus } from '../domain/types.js';
import type { SpotBalance } from '../domain/spot-commands.js';

type AccountBalance = { readonly asset: string; readonly available: bigint; readonly status: AccountStatus };
export type Balances = { readonly funding: readonly AccountBalance[]; readonly spot: readonly SpotBalance[] };

export class BalanceReader {
  constructor(private readonly deps: { readonly sql: Sql; readonly ubs: UbsSend; readonly ubsTimeoutMs: number }) {}

  /** Null when UBSCore did not answer in time: the caller says so rather than guess. */
  async read(userId: bigint): Promise<Balances | null> {
    const [funding, spot] = await Promise.all([
      this.deps.sql<AccountBalance[]>`SELECT asset, available, status FROM funding_balances WHERE user_id = ${userId} ORDER BY asset`,
      this.deps.ubs({ kind: 'balances', userId }, this.deps.ubsTimeoutMs),
    ]);
    if (spot === null || spot.kind !== 'balances') return null;
    return { funding: funding.map((r) => ({ asset: r.asset, available: r.available, status: r.status })), spot: spot.balances };
  }
}
