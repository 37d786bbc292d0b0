// Drives POST /api/v1/internal_transfer with autocannon: each request a random seeded user's
// token, a random direction, asset and amount. Committed transfers are counted in PostgreSQL,
// not from the answers, since a 202 answer still commits a moment later.

import type autocannon from 'autocannon';
import type { Sql } from '../src/db/sql.js';
import { round1, runLoad, type LoadFigures } from './load.js';
import { BENCH_ASSETS, type BenchUser } from './seed.js';
import type { BenchService } from './service-child.js';

/** After the load stops, how long to wait for transfers answered 202 to become final. */
const SETTLE_MS_MAX = 30_000;
const SETTLE_POLL_MS = 100;
/** Amounts in hundredths of a coin: 0.01 to 9.99, tiny against the seeded balances. */
const AMOUNT_CENTS_MAX = 999;

export type TransferLevel = LoadFigures & {
  readonly committed: number;
  readonly committedPerSecond: number;
  readonly failed: number;
  readonly rolledBack: number;
  /** Transfers still not final when the settle wait ended (0 expected). */
  readonly unfinished: number;
  /** PostgreSQL write transactions (transaction ids assigned) per committed transfer. */
  readonly pgWriteTxnsPerCommitted: number | null;
  /** UBSCore commands per WAL batch during the run (one sync per batch), from /metrics. */
  readonly ubsCommandsPerBatch: number | null;
};

type Counts = { committed: number; failed: number; rolledBack: number; open: number };

export function transferRequests(users: readonly BenchUser[]): autocannon.RequestSpec[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)] as T;
  return [
    {
      method: 'POST',
      path: '/api/v1/internal_transfer',
      headers: { 'content-type': 'application/json' },
      setupRequest: (request) => {
        const user = pick(users);
        const from = Math.random() < 0.5 ? 'FUNDING' : 'SPOT';
        const cents = 1 + Math.floor(Math.random() * AMOUNT_CENTS_MAX);
        const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
        request.headers = { ...request.headers, authorization: `Bearer ${user.token}` };
        request.body = JSON.stringify({ from, to: from === 'FUNDING' ? 'SPOT' : 'FUNDING', asset: pick(BENCH_ASSETS), amount });
        return request;
      },
    },
  ];
}

/** One measured run at `connections` for `durationS`, counted from the stores. */
export async function driveTransfers(svc: BenchService, users: readonly BenchUser[], connections: number, durationS: number): Promise<TransferLevel> {
  const before = await counts(svc.sql);
  const xidBefore = await currentXid(svc.sql);
  const ubsBefore = await ubsCounters(svc.base);
  const load = await runLoad({ url: svc.base, connections, durationS, requests: transferRequests(users) });
  const ubsAfter = await ubsCounters(svc.base);
  const after = await settle(svc.sql);
  const xidAfter = await currentXid(svc.sql);
  const committed = after.committed - before.committed;
  const batches = ubsAfter !== null && ubsBefore !== null ? ubsAfter.batches - ubsBefore.batches : 0;
  return {
    ...load,
    committed,
    committedPerSecond: round1(committed / Math.max(load.durationS, 0.001)),
    failed: after.failed - before.failed,
    rolledBack: after.rolledBack - before.rolledBack,
    unfinished: after.open,
    pgWriteTxnsPerCommitted: committed > 0 ? Math.round(((xidAfter - xidBefore) / committed) * 100) / 100 : null,
    ubsCommandsPerBatch: batches > 0 && ubsAfter !== null && ubsBefore !== null ? round1((ubsAfter.commands - ubsBefore.commands) / batches) : null,
  };
}

async function counts(sql: Sql): Promise<Counts> {
  const rows = await sql<{ committed: number; failed: number; rolled_back: number; open: number }[]>`
    SELECT count(*) FILTER (WHERE state = 40)::int AS committed, count(*) FILTER (WHERE state = -10)::int AS failed,
           count(*) FILTER (WHERE state = -30)::int AS rolled_back, count(*) FILTER (WHERE state NOT IN (40, -10, -30))::int AS open
      FROM transfers_tb`;
  const r = rows[0];
  return { committed: r?.committed ?? 0, failed: r?.failed ?? 0, rolledBack: r?.rolled_back ?? 0, open: r?.open ?? 0 };
}

/** Waits (bounded) until every transfer accepted during the run is final, and counts them. */
async function settle(sql: Sql): Promise<Counts> {
  const deadline = Date.now() + SETTLE_MS_MAX;
  for (;;) {
    const c = await counts(sql);
    if (c.open === 0 || Date.now() > deadline) return c;
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  }
}

/** Each call assigns one transaction id itself; against thousands per run that is noise. */
async function currentXid(sql: Sql): Promise<number> {
  const rows = await sql<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
  return Number(rows[0]?.xid ?? 0);
}

/** UBSCore's command and WAL batch counters from the service's /metrics, or null if absent. */
export async function ubsCounters(base: string): Promise<{ commands: number; batches: number } | null> {
  const text = await fetch(`${base}/metrics`).then((r) => (r.ok ? r.text() : ''), () => '');
  const read = (name: string): number | null => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+([0-9.eE+]+)\\s*$`, 'm').exec(text);
    return m?.[1] === undefined ? null : Number(m[1]);
  };
  const commands = read('ubscore_commands_total');
  const batches = read('ubscore_batches_total');
  return commands === null || batches === null ? null : { commands, batches };
}
