// The service the console's browser test looks at: a child process with real transfers in both
// directions, a few failures, an abnormal-frequency alert, and one SPOT → FUNDING transfer left
// unfinished by a real fault: its FUNDING balance row held locked by another session, so the
// credit transaction is cut short by lock_timeout after UBSCore's debit (an unknown outcome:
// retried, never refunded; it stays SOURCE_PENDING, as the two-commit path records it). Automatic
// retries and the scan are pushed out of the test's way, so only an operator's retry moves it.

import * as assert from 'uvu/assert';
import type { Sql } from '../../src/db/sql.js';
import { holdFundingRow, type HeldRow } from '../support/locks.js';
import { pollUntil, type ChildService, type Harness } from '../support/process.js';

export const SERVICE_ENV: Readonly<Record<string, string>> = {
  PG_LOCK_TIMEOUT_MS: '300',
  RETRY_BASE_MS: '600000',
  RETRY_CAP_MS: '600000',
  SCAN_INTERVAL_MS: '3600000',
  STALE_THRESHOLD_MS: '86400000',
  STUCK_RETRIES: '1',
  INVARIANT_INTERVAL_MS: '0',
  ABNORMAL_TRANSFERS_PER_MINUTE: '6',
  COORDINATORS: '1',
};

export const STUCK_USER = 7100;
const USERS = [7001, 7002, 7003];

export async function call(h: Harness, svc: ChildService, method: string, path: string, body?: unknown, token = h.adminToken()) {
  return svc.call(method, path, body === undefined ? { token } : { token, body });
}

async function deposit(
  h: Harness,
  svc: ChildService,
  user: number,
  account: 'FUNDING' | 'SPOT',
  asset: string,
  amount: string,
): Promise<void> {
  const r = await call(h, svc, 'POST', '/admin/v1/deposit', {
    user_id: String(user),
    account,
    asset,
    amount,
    ref: `seed-${user}-${account}-${asset}`,
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
}

async function send(h: Harness, svc: ChildService, user: number, body: Record<string, string>): Promise<string> {
  const r = await svc.call('POST', '/api/v1/internal_transfer', { token: h.userToken(user), body });
  return `${r.status} ${String(r.body.internal_state ?? r.body.code)}`;
}

/** Transfers that end COMMITTED, FAILED (insufficient balance) and one user sending often. */
export async function seed(h: Harness, svc: ChildService): Promise<void> {
  for (const user of USERS) {
    await deposit(h, svc, user, 'FUNDING', 'USDT', '2500.75');
    await deposit(h, svc, user, 'SPOT', 'BTC', '0.35');
    await deposit(h, svc, user, 'FUNDING', 'BTC', '0.05');
  }
  let n = 0;
  for (const user of USERS) {
    for (const amount of ['12.5', '100', '0.01'])
      assert.is(
        await send(h, svc, user, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount, client_order_id: `ord-${user}-${n++}` }),
        '200 COMMITTED',
      );
    assert.is(
      await send(h, svc, user, { from: 'SPOT', to: 'FUNDING', asset: 'BTC', amount: '0.0125', client_order_id: `ord-${user}-${n++}` }),
      '200 COMMITTED',
    );
    assert.is(await send(h, svc, user, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '99999' }), '422 INSUFFICIENT_BALANCE');
  }
  // MON-004: more than ABNORMAL_TRANSFERS_PER_MINUTE requests from one user in a minute.
  for (let i = 0; i < 7; i++)
    assert.is(await send(h, svc, 7001, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '1' }), '200 COMMITTED');
}

/** Leaves one SPOT → FUNDING transfer unfinished and listed as stuck; answers it and the held row. */
export async function makeStuck(h: Harness, svc: ChildService): Promise<{ reqId: string; state: string; row: HeldRow }> {
  await deposit(h, svc, STUCK_USER, 'FUNDING', 'USDT', '10');
  await deposit(h, svc, STUCK_USER, 'SPOT', 'USDT', '500');
  const row = await holdFundingRow(h.sql, STUCK_USER, 'USDT');
  const r = await svc.call('POST', '/api/v1/internal_transfer', {
    token: h.userToken(STUCK_USER),
    body: { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '250.5', client_order_id: 'stuck-order-1' },
  });
  assert.is(r.status, 202, JSON.stringify(r.body));
  const reqId = String(r.body.req_id);
  let seen: unknown = null;
  const state = await pollUntil(
    async () => {
      const stuck = await call(h, svc, 'GET', '/admin/v1/transfers?stuck=true');
      seen = (await call(h, svc, 'GET', '/admin/v1/transfers')).body;
      const found = (stuck.body.transfers as { req_id: string; state: string; retry_count: number }[]).find((t) => t.req_id === reqId);
      return found !== undefined && found.retry_count >= 1 ? found.state : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 100, describe: () => `${reqId} not listed stuck: ${JSON.stringify(seen)}` },
  );
  return { reqId, state, row };
}

/** Moves one FUNDING balance behind the service's back, as a bad manual edit would (MON-003). */
export async function nudgeBalance(sql: Sql, user: number, units: number): Promise<void> {
  await sql`UPDATE funding_balances SET available = available + ${units} WHERE user_id = ${user} AND asset = 'USDT'`;
}
