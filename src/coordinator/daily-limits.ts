// Daily limits per user (spec 001 §1.5.6): transfers per UTC day, and amount per asset per UTC
// day. They count only what moved: a transfer that ends FAILED or ROLLED_BACK gives its share
// back. All of a user's transfers go through one shard, so this shard's thread is the one place
// that admits them, whatever path created them:
// - a request the shard takes is checked before it is created, and counted once created;
// - a transfer created elsewhere (the main thread records one in INIT when the shard's mailbox is
//   full) is checked when the shard first drives it out of INIT (`admit`), and ends FAILED with
//   the limit's code if it would exceed it.
// Each user's tally is loaded from PostgreSQL the first time that user is seen in a day (what was
// created that day and did not end FAILED or ROLLED_BACK), and it remembers which transfers it
// holds, so nothing is counted twice and nothing created behind its back is missed.

import type { Sql } from '../db/sql.js';
import { STATE_IDS } from '../domain/fsm.js';
import type { TransferView } from '../domain/transfer.js';

type LimitCode = 'DAILY_LIMIT_EXCEEDED' | 'DAILY_AMOUNT_EXCEEDED' | 'RATE_LIMIT_EXCEEDED';

type DailyLimitConfig = {
  /** Transfers per user per UTC day; 0 switches the limit off. */
  readonly transfersPerDayMax: number;
  /** Whether assets' daily amount limits apply at all. */
  readonly amountLimits: boolean;
  /** Amount per user per asset per UTC day, in smallest units, from the asset row (null: none). */
  readonly amountPerDayUnitsMax: (asset: string) => Promise<bigint | null>;
};

/** What a limit needs to know of a transfer. */
type Countable = { readonly reqId: string; readonly userId: bigint; readonly asset: string; readonly amount: bigint };

type Tally = {
  readonly held: Map<string, { readonly asset: string; readonly amount: bigint }>;
  count: number;
  readonly amounts: Map<string, bigint>;
};

const DAY_MS = 86_400_000;

export class DailyLimits {
  private day = -1;
  private readonly users = new Map<bigint, Tally>();

  constructor(
    private readonly sql: Sql,
    private readonly config: DailyLimitConfig,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether any limit can apply: with none, nothing is loaded or remembered. */
  get enabled(): boolean {
    return this.config.transfersPerDayMax > 0 || this.config.amountLimits;
  }

  /**
   * Counts a transfer about to be created, or answers the first limit it would exceed. The
   * decision and the count are one synchronous step after the awaits, so two requests of one
   * user at once cannot both take the last place. `release` gives it back if it was not created.
   */
  async reserve(t: Countable): Promise<LimitCode | null> {
    if (!this.enabled) return null;
    const max = this.config.amountLimits ? await this.config.amountPerDayUnitsMax(t.asset) : null;
    const perDay = this.config.transfersPerDayMax;
    // No limit applies to this transfer: nothing to load or remember (a tally would grow with
    // every transfer of the day for nothing). A limit set later resets every tally (`reset`).
    if (perDay === 0 && max === null) return null;
    const tally = await this.tally(t.userId);
    if (tally.held.has(t.reqId)) return null;
    if (perDay > 0 && tally.count + 1 > perDay) return 'DAILY_LIMIT_EXCEEDED';
    if (max !== null && (tally.amounts.get(t.asset) ?? 0n) + t.amount > max) return 'DAILY_AMOUNT_EXCEEDED';
    tally.held.set(t.reqId, { asset: t.asset, amount: t.amount });
    tally.count += 1;
    tally.amounts.set(t.asset, (tally.amounts.get(t.asset) ?? 0n) + t.amount);
    return null;
  }

  /** Gives back what `reserve` counted for a transfer that was not created, or moved nothing. */
  release(t: { readonly reqId: string; readonly userId: bigint }): void {
    const tally = this.users.get(t.userId);
    const held = tally?.held.get(t.reqId);
    if (tally === undefined || held === undefined) return;
    tally.held.delete(t.reqId);
    tally.count -= 1;
    tally.amounts.set(held.asset, (tally.amounts.get(held.asset) ?? 0n) - held.amount);
  }

  /**
   * A transfer leaving INIT: counted if this tally does not hold it yet (it was created outside
   * this shard), or refused with the limit's code. Only today's transfers count against today.
   */
  async admit(t: TransferView): Promise<LimitCode | null> {
    if (!this.enabled || this.dayOf(Date.parse(t.createdAt)) !== this.dayOf(this.now())) return null;
    return this.reserve(t);
  }

  /** A transfer that ended: FAILED or ROLLED_BACK moved nothing, so its share is given back. */
  settled(t: TransferView): void {
    if (t.state === 'FAILED' || t.state === 'ROLLED_BACK') this.release(t);
  }

  /** Forgets every tally (an asset's limit changed): each is reloaded when next needed. */
  reset(): void {
    this.users.clear();
  }

  private dayOf(ms: number): number {
    return Math.floor(ms / DAY_MS);
  }

  private async tally(userId: bigint): Promise<Tally> {
    const today = this.dayOf(this.now());
    if (today !== this.day) {
      this.day = today;
      this.users.clear();
    }
    const known = this.users.get(userId);
    if (known !== undefined) return known;
    const rows = await this.sql<{ req_id: string; asset: string; amount: bigint }[]>`
      SELECT req_id, asset, amount FROM transfers_tb
       WHERE user_id = ${userId} AND created_at >= ${new Date(today * DAY_MS)} AND state <> ${STATE_IDS.FAILED} AND state <> ${STATE_IDS.ROLLED_BACK}`;
    const tally: Tally = { held: new Map(), count: 0, amounts: new Map() };
    for (const r of rows) {
      tally.held.set(r.req_id, { asset: r.asset, amount: r.amount });
      tally.count += 1;
      tally.amounts.set(r.asset, (tally.amounts.get(r.asset) ?? 0n) + r.amount);
    }
    // A tally loaded while another load of the same user was awaited: keep the first.
    const raced = this.users.get(userId);
    if (raced !== undefined) return raced;
    if (this.day === today) this.users.set(userId, tally);
    return tally;
  }
}
