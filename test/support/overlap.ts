// Two transactions of the batch writer made to overlap for certain, for tests: the real
// `transfer_apply` statement of each side runs inside a transaction of the test's own, which
// waits after its first statement until the other side's transaction is open too, and holds its
// commit after the call until the other side's call has either returned or waits on a lock. So
// the second side always decides while the first side's effects are written and uncommitted.
//
// It cannot deadlock: a side holding its commit waits only for the other side to be blocked or
// done, and every wait has a deadline that rolls the transaction back with an error.

import type { Sql } from '../../src/db/sql.js';

type Side = { readonly name: string; pid: number | null; called: boolean };

const POLL_MS = 2;

export class Overlap {
  private readonly sides: Side[] = [];
  private bothOpen: () => void = () => undefined;
  private readonly opened: Promise<void> = new Promise((resolve) => {
    this.bothOpen = resolve;
  });
  /** What each side saw of the other while it held its commit: "A saw B waiting on Lock/advisory", "B saw A done". */
  readonly seen: string[] = [];

  /** `observer` reads pg_stat_activity outside both transactions; `deadlineMs` bounds every wait. */
  constructor(
    private readonly observer: Sql,
    private readonly deadlineMs = 5_000,
  ) {}

  /**
   * `sql` as it is, except that its first `transfer_apply` statement (either form) runs as one
   * side of the overlap; later statements go straight through.
   */
  wrap(sql: Sql, name: string): Sql {
    const side: Side = { name, pid: null, called: false };
    this.sides.push(side);
    let armed = true;
    return new Proxy(sql, {
      apply: (target, thisArg, args: unknown[]) => {
        const strings = args[0] as TemplateStringsArray | undefined;
        if (!armed || !Array.isArray(strings) || !strings.join('').includes('transfer_apply')) return Reflect.apply(target, thisArg, args);
        armed = false;
        return this.inOverlap(target, side, strings, args.slice(1));
      },
    });
  }

  private async inOverlap(sql: Sql, side: Side, strings: TemplateStringsArray, values: unknown[]): Promise<unknown> {
    const out = await sql.begin(async (tx) => {
      const me = await tx<{ pid: number }[]>`SELECT pg_backend_pid() AS pid, txid_current()`;
      side.pid = me[0]?.pid ?? null;
      await this.arrive();
      // The real statement, unchanged, in this transaction.
      const rows = await tx(strings, ...(values as never[]));
      side.called = true;
      await this.holdCommit(side);
      return { rows };
    });
    return out.rows;
  }

  /** Resolves once both sides' transactions are open (each has run its first statement). */
  private async arrive(): Promise<void> {
    if (this.sides.every((s) => s.pid !== null)) this.bothOpen();
    await this.within(this.opened, 'both transactions open');
  }

  /** Waits, commit held, until the other side's call has returned or is waiting on a lock. */
  private async holdCommit(side: Side): Promise<void> {
    const other = this.sides.find((s) => s !== side);
    if (other === undefined) throw new Error('an overlap needs two sides');
    const deadline = Date.now() + this.deadlineMs;
    for (;;) {
      if (other.called) {
        this.seen.push(`${side.name} saw ${other.name} done`);
        return;
      }
      const rows = await this.observer<{ wait_event_type: string | null; wait_event: string | null }[]>`
        SELECT wait_event_type, wait_event FROM pg_stat_activity WHERE pid = ${other.pid}`;
      const row = rows[0];
      if (row?.wait_event_type === 'Lock') {
        this.seen.push(`${side.name} saw ${other.name} waiting on Lock/${row.wait_event}`);
        return;
      }
      if (Date.now() > deadline)
        throw new Error(`overlap: ${other.name} neither returned nor waited on a lock within ${this.deadlineMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }

  private async within(p: Promise<void>, what: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`overlap: not ${what} within ${this.deadlineMs} ms`)), this.deadlineMs);
    });
    try {
      await Promise.race([p, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
