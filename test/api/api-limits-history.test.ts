// Proves client idempotency under a race and at the daily limits (a repeat answers the original before any limit is
// charged; a different request under its id is 409 naming the original), history paging that stays correct while
// transfers arrive, the state filter (PENDING as clients are shown it), the three rate limits, and the body size limit.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { STATE_IDS, type TransferStateName } from '../../src/domain/fsm.js';
import { newReqId } from '../../src/http/req-ids.js';
import { deposit, fundsOf, transfer } from '../support/funds.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
const COIN = 10n ** 8n;
/** ETH with a daily amount limit of 5 per user. */
const ETH_DAILY_5 = {
  precision: 8,
  min_transfer_amount: '0.00000001',
  max_transfer_amount: '1000',
  status: 'ACTIVE',
  internal_transfer_enabled: true,
  daily_amount_limit: '5',
};

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
});

test.after(async () => {
  await svc.stop();
});

test('ATK-010: twelve racing requests with one client_order_id create one transfer and move funds once', async () => {
  await deposit(svc, 401n, 'FUNDING', 'USDT', '100', 'race-seed');
  const body = { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '7', client_order_id: 'race-1' };
  const replies = await Promise.all(Array.from({ length: 12 }, () => transfer(svc, 401n, body)));
  const ids = new Set(replies.map((r) => r.body.req_id));
  assert.is(ids.size, 1, JSON.stringify(replies.map((r) => [r.status, r.body.code])));
  for (const r of replies) assert.ok(r.status === 200 || r.status === 202, String(r.status));
  const rows = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = 401`;
  assert.is(rows[0]?.n, 1);
  for (let i = 0; i < 50 && (await fundsOf(svc, 401n, 'USDT')).spot === 0n; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(await fundsOf(svc, 401n, 'USDT'), { funding: 93n * COIN, spot: 7n * COIN });
});

test('history: newest first, paged by cursor, stable while new transfers arrive, filtered', async () => {
  await deposit(svc, 402n, 'FUNDING', 'USDT', '1000', 'hist-seed');
  await deposit(svc, 402n, 'FUNDING', 'BTC', '1', 'hist-seed-btc');
  const first: string[] = [];
  for (let i = 0; i < 25; i++)
    first.push(String((await transfer(svc, 402n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })).body.req_id));
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const q: string = cursor === null ? '?limit=10' : `?limit=10&cursor=${cursor}`;
    const page = await svc.call('GET', `/api/v1/internal_transfer${q}`, { token: svc.userToken(402) });
    assert.is(page.status, 200, JSON.stringify(page.body));
    seen.push(...(page.body.items as { req_id: string }[]).map((t) => t.req_id));
    cursor = page.body.next_cursor as string | null;
    // New transfers keep arriving between pages; they are newer than any cursor.
    await transfer(svc, 402n, { from: 'FUNDING', to: 'SPOT', asset: 'BTC', amount: '0.01' });
    pages += 1;
  } while (cursor !== null);
  assert.is(pages, 3);
  assert.equal(seen, [...first].reverse());
  const btc = await svc.call('GET', '/api/v1/internal_transfer?asset=BTC&state=COMMITTED&limit=100', { token: svc.userToken(402) });
  assert.is((btc.body.items as unknown[]).length, 3);
  const future = await svc.call('GET', `/api/v1/internal_transfer?from_time=${Date.now() + 60_000}`, { token: svc.userToken(402) });
  assert.equal(future.body.items, []);
  const old = await svc.call('GET', '/api/v1/internal_transfer?to_time=2000-01-01T00:00:00Z', { token: svc.userToken(402) });
  assert.equal(old.body.items, []);
  const other = await svc.call('GET', '/api/v1/internal_transfer', { token: svc.userToken(403) });
  assert.equal(other.body, { items: [], next_cursor: null });
  for (const bad of ['limit=0', 'limit=101', 'limit=abc', 'state=DONE', 'cursor=zzz', 'from_time=yesterday', 'asset=usdt', 'extra=1']) {
    const r = await svc.call('GET', `/api/v1/internal_transfer?${bad}`, { token: svc.userToken(402) });
    assert.is(r.status, 400, bad);
  }
});

/**
 * An unfinished FUNDING→SPOT transfer written behind the service: not in transfers_active, so no
 * scan drives it, and with no FUNDING operation applied, so the conservation check sees nothing
 * in flight (INIT and SOURCE_PENDING are not funds in flight).
 */
async function parked(userId: bigint, state: TransferStateName): Promise<string> {
  const reqId = newReqId();
  await svc.sql`INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state)
                VALUES (${reqId}, ${userId}, 'USDT', 100000000, 1, 1, 2, ${STATE_IDS[state]})`;
  return reqId;
}

test('history: state=PENDING lists every unfinished transfer, as clients are shown them; a state of the machine lists itself', async () => {
  await deposit(svc, 404n, 'FUNDING', 'USDT', '10', 'pending-seed');
  const committed = String((await transfer(svc, 404n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })).body.req_id);
  const init = await parked(404n, 'INIT');
  const sourcePending = await parked(404n, 'SOURCE_PENDING');
  const list = async (query: string) => {
    const r = await svc.call('GET', `/api/v1/internal_transfer?${query}`, { token: svc.userToken(404) });
    assert.is(r.status, 200, `${query}: ${JSON.stringify(r.body)}`);
    return r.body.items as { req_id: string; state: string; internal_state: string }[];
  };
  const pending = await list('state=PENDING');
  assert.equal(
    pending.map((t) => [t.req_id, t.state, t.internal_state]),
    [
      [sourcePending, 'PENDING', 'SOURCE_PENDING'],
      [init, 'PENDING', 'INIT'],
    ],
  );
  assert.equal(
    (await list('state=COMMITTED')).map((t) => t.req_id),
    [committed],
  );
  assert.equal(
    (await list('state=SOURCE_PENDING')).map((t) => t.req_id),
    [sourcePending],
  );
  assert.equal(
    (await list('state=PENDING&limit=1')).map((t) => t.req_id),
    [sourcePending],
  );
  const lower = await svc.call('GET', '/api/v1/internal_transfer?state=pending', { token: svc.userToken(404) });
  assert.is(lower.status, 400, 'state names are upper case, as the answers show them');
});

test('an oversized body is 413 PAYLOAD_TOO_LARGE; a non-JSON body is 400 INVALID_REQUEST', async () => {
  const big = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(1),
    body: JSON.stringify({ pad: 'x'.repeat(40_000) }),
  });
  assert.is(big.status, 413);
  assert.is(big.body.code, 'PAYLOAD_TOO_LARGE');
  const junk = await svc.call('POST', '/api/v1/internal_transfer', { token: svc.userToken(1), body: '{"from": ' });
  assert.is(junk.status, 400);
  assert.is(junk.body.code, 'INVALID_REQUEST');
});

test('limits: requests per second, transfers per day, amount per asset per day, each refused with 429 and its code', async () => {
  const limited = await startTestService({ RATE_LIMIT_PER_SECOND: '3', DAILY_TRANSFER_LIMIT: '2' });
  try {
    const burst = await Promise.all(
      Array.from({ length: 6 }, () => limited.call('GET', '/api/v1/balances', { token: limited.userToken(501) })),
    );
    const codes = burst.map((r) => r.body.code ?? r.status);
    assert.ok(codes.filter((c) => c === 'RATE_LIMIT_EXCEEDED').length >= 3, JSON.stringify(codes));
    await new Promise((r) => setTimeout(r, 1_100));
    await deposit(limited, 502n, 'FUNDING', 'USDT', '100', 'lim-seed');
    const ok1 = await transfer(limited, 502n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    const ok2 = await transfer(limited, 502n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    const third = await transfer(limited, 502n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    assert.equal([ok1.status, ok2.status, third.status, third.body.code], [200, 200, 429, 'DAILY_LIMIT_EXCEEDED']);
    assert.is((await limited.call('PUT', '/admin/v1/assets/ETH', { token: limited.adminToken(), body: ETH_DAILY_5 })).status, 200);
    await deposit(limited, 503n, 'FUNDING', 'ETH', '100', 'lim-eth');
    await new Promise((r) => setTimeout(r, 1_100));
    const eth1 = await transfer(limited, 503n, { from: 'FUNDING', to: 'SPOT', asset: 'ETH', amount: '3' });
    const eth2 = await transfer(limited, 503n, { from: 'FUNDING', to: 'SPOT', asset: 'ETH', amount: '3' });
    assert.equal([eth1.status, eth2.status, eth2.body.code], [200, 429, 'DAILY_AMOUNT_EXCEEDED']);
    assert.equal(await fundsOf(limited, 503n, 'ETH'), { funding: 97n * COIN, spot: 3n * COIN });
  } finally {
    await limited.stop();
  }
});

test("spec 001 §1.5.7: a client_order_id repeated once the day's count or amount is used up answers 200 with the original transfer; another request under it is 409 naming the original req_id", async () => {
  const limited = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '2' });
  try {
    await deposit(limited, 511n, 'FUNDING', 'USDT', '100', 'rep-seed');
    const body = (coid: string, amount = '1') => ({ from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount, client_order_id: coid });
    const first = await transfer(limited, 511n, body('day-1'));
    const second = await transfer(limited, 511n, body('day-2'));
    const third = await transfer(limited, 511n, body('day-3'));
    assert.equal([first.status, second.status, third.status, third.body.code], [200, 200, 429, 'DAILY_LIMIT_EXCEEDED']);
    const repeat = await transfer(limited, 511n, body('day-2'));
    assert.equal(
      [repeat.status, repeat.body.req_id, repeat.body.state],
      [200, second.body.req_id, 'COMMITTED'],
      JSON.stringify(repeat.body),
    );
    const other = await transfer(limited, 511n, body('day-1', '2'));
    assert.equal([other.status, other.body.code, other.body.original_req_id], [409, 'DUPLICATE_REQUEST', first.body.req_id]);
    // Every answer after a req_id was minted names it, refusals included (nothing is recorded under it).
    for (const r of [third, other]) assert.match(String(r.body.req_id), /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.ok(other.body.req_id !== first.body.req_id);
    assert.is((await limited.call('GET', `/api/v1/internal_transfer/${third.body.req_id}`, { token: limited.userToken(511) })).status, 404);

    assert.is((await limited.call('PUT', '/admin/v1/assets/ETH', { token: limited.adminToken(), body: ETH_DAILY_5 })).status, 200);
    await deposit(limited, 512n, 'FUNDING', 'ETH', '100', 'rep-eth');
    const eth = (coid: string) => ({ from: 'FUNDING', to: 'SPOT', asset: 'ETH', amount: '4', client_order_id: coid });
    const eth1 = await transfer(limited, 512n, eth('eth-1'));
    const eth2 = await transfer(limited, 512n, eth('eth-2'));
    assert.equal([eth1.status, eth2.status, eth2.body.code], [200, 429, 'DAILY_AMOUNT_EXCEEDED']);
    const ethRepeat = await transfer(limited, 512n, eth('eth-1'));
    assert.equal([ethRepeat.status, ethRepeat.body.req_id], [200, eth1.body.req_id], JSON.stringify(ethRepeat.body));
    assert.equal(await fundsOf(limited, 512n, 'ETH'), { funding: 96n * COIN, spot: 4n * COIN }, 'moved once');
  } finally {
    await limited.stop();
  }
});

test.run();
