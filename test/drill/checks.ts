// The drill's verdict, from the stores themselves: every transfer terminal; each side's balance
// equal to what the external movements and the committed transfers say it must be; every
// (req_id, op) applied once at the Funding adapter; every COMMITTED a client saw still COMMITTED.

import type { Sql } from '../../src/db/sql.js';
import { isTerminal, STATE_IDS, stateName, TERMINAL_STATE_IDS } from '../../src/domain/fsm.js';

export type Violation = { readonly check: string; readonly detail: string };

export type DrillState = {
  readonly sql: Sql;
  readonly base: string;
  readonly token: (userId: bigint) => string;
  readonly adminToken: string;
  readonly users: readonly bigint[];
  readonly assets: readonly string[];
  readonly committed: ReadonlySet<string>;
};

export async function verifyDrill(s: DrillState): Promise<Violation[]> {
  const violations: Violation[] = [];
  const open = await s.sql<
    { n: number }[]
  >`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN ${s.sql([...TERMINAL_STATE_IDS])}`;
  if (open[0]?.n !== 0) violations.push({ check: 'terminal', detail: `${open[0]?.n} transfers unfinished` });
  violations.push(...(await checkActiveList(s.sql)));
  violations.push(...(await checkOperations(s.sql)));
  for (const userId of s.users) {
    for (const asset of s.assets) violations.push(...(await checkBalances(s, userId, asset)));
  }
  violations.push(...(await checkCommittedSeen(s)));
  violations.push(...(await checkServiceInvariant(s)));
  return violations;
}

/**
 * transfers_active, the list the recovery scan walks, holds exactly the unfinished transfers:
 * a transfer missing from it would never be recovered.
 */
async function checkActiveList(sql: Sql): Promise<Violation[]> {
  const rows = await sql<{ req_id: string; state: number | null }[]>`
    SELECT coalesce(t.req_id, a.req_id) AS req_id, t.state FROM transfers_tb AS t
      FULL JOIN transfers_active AS a ON a.req_id = t.req_id
     WHERE (a.req_id IS NULL) <> (t.state IN ${sql([...TERMINAL_STATE_IDS])}) LIMIT 10`;
  return rows.map((r) => {
    const state = r.state === null ? null : stateName(r.state);
    const finished = state !== null && isTerminal(state);
    return {
      check: 'active-list',
      detail: `transfer ${r.req_id} in state ${state ?? 'none'} is ${finished ? 'listed as unfinished' : 'missing from the unfinished list'}`,
    };
  });
}

/** Each side's balance against its own equation, so a double credit cannot hide behind a double debit. */
async function checkBalances(s: DrillState, userId: bigint, asset: string): Promise<Violation[]> {
  const external = await s.sql<{ account: string; net: bigint }[]>`
    SELECT account, sum(CASE WHEN kind = 'DEPOSIT' THEN amount ELSE -amount END)::bigint AS net
      FROM external_movements
     WHERE user_id = ${userId} AND asset = ${asset} AND state = 'DONE' AND correction_reason IS NULL GROUP BY account`;
  const moved = await s.sql<{ source_type: number; total: bigint }[]>`
    SELECT source_type, sum(amount)::bigint AS total FROM transfers_tb
     WHERE user_id = ${userId} AND asset = ${asset} AND state = ${STATE_IDS.COMMITTED} GROUP BY source_type`;
  const net = (account: string) => external.find((r) => r.account === account)?.net ?? 0n;
  const fromFunding = moved.find((r) => r.source_type === 1)?.total ?? 0n;
  const fromSpot = moved.find((r) => r.source_type === 2)?.total ?? 0n;
  const expected = { funding: net('FUNDING') - fromFunding + fromSpot, spot: net('SPOT') + fromFunding - fromSpot };
  const actual = await readBalances(s, userId, asset);
  const out: Violation[] = [];
  if (actual === null) return [{ check: 'balances', detail: `user ${userId}: balances unreadable` }];
  if (actual.funding !== expected.funding)
    out.push({ check: 'funding-balance', detail: `user ${userId} ${asset}: ${actual.funding} != expected ${expected.funding}` });
  if (actual.spot !== expected.spot)
    out.push({ check: 'spot-balance', detail: `user ${userId} ${asset}: ${actual.spot} != expected ${expected.spot}` });
  return out;
}

async function readBalances(s: DrillState, userId: bigint, asset: string): Promise<{ funding: bigint; spot: bigint } | null> {
  const funding = await s.sql<
    { available: bigint }[]
  >`SELECT available FROM funding_balances WHERE user_id = ${userId} AND asset = ${asset}`;
  const r = await fetch(`${s.base}/api/v1/balances`, { headers: { authorization: `Bearer ${s.token(userId)}` } });
  if (!r.ok) return null;
  const body = (await r.json()) as { spot: { asset: string; available: string }[] };
  const line = body.spot.find((b) => b.asset === asset);
  return { funding: funding[0]?.available ?? 0n, spot: line === undefined ? 0n : toUnits(line.available) };
}

function toUnits(text: string): bigint {
  const [whole = '0', fraction = ''] = text.split('.');
  return BigInt(whole) * 10n ** 8n + BigInt(fraction.padEnd(8, '0').slice(0, 8) || '0');
}

/** What the Funding adapter applied for each transfer must match the transfer's final state. */
async function checkOperations(sql: Sql): Promise<Violation[]> {
  const rows = await sql<{ req_id: string; state: number; source_type: number; ops: string | null }[]>`
    SELECT t.req_id, t.state, t.source_type, string_agg(o.name, ',' ORDER BY o.name) AS ops
      FROM transfers_tb t LEFT JOIN (funding_operations f JOIN funding_ops o ON o.code = f.op) ON f.transfer_id = t.transfer_id AND f.code IS NULL
     GROUP BY t.req_id, t.state, t.source_type`;
  const expected = (state: number, fromFunding: boolean): string => {
    if (state === STATE_IDS.COMMITTED) return fromFunding ? 'WITHDRAW' : 'DEPOSIT';
    if (state === STATE_IDS.ROLLED_BACK) return fromFunding ? 'REFUND,WITHDRAW' : '';
    return '';
  };
  const out: Violation[] = [];
  for (const r of rows) {
    const want = expected(r.state, r.source_type === 1);
    if ((r.ops ?? '') !== want)
      out.push({ check: 'funding-operations', detail: `${r.req_id} state ${r.state}: applied [${r.ops ?? ''}], expected [${want}]` });
  }
  return out;
}

/** The service's own conservation check (MON-003) must agree. */
async function checkServiceInvariant(s: DrillState): Promise<Violation[]> {
  const r = await fetch(`${s.base}/admin/v1/invariant`, { headers: { authorization: `Bearer ${s.adminToken}` } });
  const body = (await r.json()) as { ok?: boolean; differences?: unknown[] };
  return r.ok && body.ok === true ? [] : [{ check: 'service-invariant', detail: JSON.stringify(body).slice(0, 2_000) }];
}

async function checkCommittedSeen(s: DrillState): Promise<Violation[]> {
  const ids = [...s.committed];
  const out: Violation[] = [];
  for (let i = 0; i < ids.length; i += 1_000) {
    const chunk = ids.slice(i, i + 1_000);
    const rows = await s.sql<{ req_id: string; state: number }[]>`SELECT req_id, state FROM transfers_tb WHERE req_id IN ${s.sql(chunk)}`;
    const byId = new Map(rows.map((r) => [r.req_id, r.state]));
    for (const id of chunk)
      if (byId.get(id) !== 40)
        out.push({ check: 'committed-seen', detail: `${id} was answered COMMITTED, now ${byId.get(id) ?? 'missing'}` });
  }
  return out;
}
