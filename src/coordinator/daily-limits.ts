// Daily limits per user (spec 001 §1.5.6): transfers per UTC day, and amount per asset per UTC
// day. All of a user's transfers go through one shard, so the shard's thread counts them alone;
// each user's counters start from PostgreSQL the first time that user is seen in a day.

import type { Sql } from '../db/sql.js';
import type { NewTransfer } from './types.js';

export type LimitCode = 'DAILY_LIMIT_EXCEEDED' | 'DAILY_AMOUNT_EXCEEDED' | 'RATE_LIMIT_EXCEEDED';

export type DailyLimitConfig = {
  /** Transfers per user per UTC day; 0 switches the limit off. */
  readonly transfersPerDayMax: number;
  /** Amount per user per asset per UTC day, in smallest units, from the asset row (null: none). */
  readonly amountPerDayUnitsMax: (asset: string) => Promise<bigint | null>;
};

type Counter = { count: number; amounts: Map<string, bigint> };

const DAY_MS = 86_400_000;

export class DailyLimits {
  private day = -1;
  private readonly users = new Map<bigint, Counter>();

  constructor(
    private readonly sql: Sql,
    private readonly config: DailyLimitConfig,
    private readonly now: () => number = Date.now,
  ) {}

  /** The first limit `t` would exceed, or null. Counts only transfers already recorded. */
  async check(t: NewTransfer): Promise<LimitCode | null> {
    const counter = await this.counter(t.userId);
    const perDay = this.config.transfersPerDayMax;
    if (perDay > 0 && counter.count + 1 > perDay) return 'DAILY_LIMIT_EXCEEDED';
    const max = await this.config.amountPerDayUnitsMax(t.asset);
    if (max !== null && (counter.amounts.get(t.asset) ?? 0n) + t.amount > max) return 'DAILY_AMOUNT_EXCEEDED';
    return null;
  }

  /** Counts a transfer that was recorded. */
  record(t: NewTransfer): void {
    const counter = this.users.get(t.userId);
    if (counter === undefined) return; // a new day began in between: the next check reloads it
    counter.count += 1;
    counter.amounts.set(t.asset, (counter.amounts.get(t.asset) ?? 0n) + t.amount);
  }

  private async counter(userId: bigint): Promise<Counter> {
    const today = Math.floor(this.now() / DAY_MS);
    if (today !== this.day) {
      this.day = today;
      this.users.clear();
    }
    const known = this.users.get(userId);
    if (known !== undefined) return known;
    const since = new Date(today * DAY_MS);
    const rows = await this.sql<{ asset: string; n: number; total: bigint }[]>`
      SELECT asset, count(*)::int AS n, sum(amount)::bigint AS total FROM transfers_tb
       WHERE user_id = ${userId} AND created_at >= ${since} GROUP BY asset`;
    const counter: Counter = { count: 0, amounts: new Map() };
    for (const r of rows) {
      counter.count += r.n;
      counter.amounts.set(r.asset, r.total);
    }
    if (this.day === today) this.users.set(userId, counter);
    return counter;
  }
}
