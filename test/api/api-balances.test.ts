// Proves the balance and status checks (BAL-001..005) and the other business rejections: each is recorded FAILED with its req_id, answered 422, and moves nothing.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deposit, finalOf, fundsOf, totalOf, transfer } from '../support/funds.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
const COIN = 10n ** 8n;

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0' });
});

test.after(async () => {
  await svc.stop();
});

async function failedWith(userId: bigint, body: Record<string, unknown>, code: string): Promise<void> {
  const r = await transfer(svc, userId, body);
  assert.is(r.status, 422, JSON.stringify(r.body));
  assert.is(r.body.code, code);
  assert.is(r.body.state, 'FAILED');
  const read = await svc.call('GET', `/api/v1/internal_transfer/${String(r.body.req_id)}`, { token: svc.userToken(userId) });
  assert.is(read.body.state, 'FAILED');
  assert.is(read.body.error_code, code);
}

test('BAL-001: amount > available is INSUFFICIENT_BALANCE and nothing changes, from either side', async () => {
  await deposit(svc, 201n, 'FUNDING', 'USDT', '10', 'bal1-f');
  await deposit(svc, 201n, 'SPOT', 'USDT', '5', 'bal1-s');
  await failedWith(201n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '10.00000001' }, 'INSUFFICIENT_BALANCE');
  await failedWith(201n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '5.00000001' }, 'INSUFFICIENT_BALANCE');
  assert.equal(await fundsOf(svc, 201n, 'USDT'), { funding: 10n * COIN, spot: 5n * COIN });
});

test('BAL-002: amount = available succeeds and the source becomes 0', async () => {
  await deposit(svc, 202n, 'FUNDING', 'BTC', '1.5', 'bal2');
  const r = await transfer(svc, 202n, { from: 'FUNDING', to: 'SPOT', asset: 'BTC', amount: '1.5' });
  assert.is(r.body.state, 'COMMITTED');
  assert.equal(await fundsOf(svc, 202n, 'BTC'), { funding: 0n, spot: 150_000_000n });
  const back = await transfer(svc, 202n, { from: 'SPOT', to: 'FUNDING', asset: 'BTC', amount: '1.5' });
  assert.is(back.body.state, 'COMMITTED');
  assert.equal(await fundsOf(svc, 202n, 'BTC'), { funding: 150_000_000n, spot: 0n });
});

test('BAL-003: concurrent transfers totalling more than the balance: exactly the ones that fit succeed', async () => {
  await deposit(svc, 203n, 'FUNDING', 'ETH', '10', 'bal3-f');
  await deposit(svc, 203n, 'SPOT', 'ETH', '10', 'bal3-s');
  for (const [from, to] of [
    ['FUNDING', 'SPOT'],
    ['SPOT', 'FUNDING'],
  ] as const) {
    const before = await fundsOf(svc, 203n, 'ETH');
    const replies = await Promise.all(Array.from({ length: 8 }, () => transfer(svc, 203n, { from, to, asset: 'ETH', amount: '3' })));
    // A 202 is followed to its end: under load a call may outlive its timeout and finish on a retry.
    const ends = await Promise.all(replies.map((r) => finalOf(svc, 203n, r)));
    const ok = ends.filter((e) => e.state === 'COMMITTED').length;
    const short = ends.filter((e) => e.code === 'INSUFFICIENT_BALANCE').length;
    assert.is(ok + short, 8, JSON.stringify(ends.map((e) => e.code ?? e.state)));
    const sourceBefore = from === 'FUNDING' ? before.funding : before.spot;
    assert.is(ok, Number(sourceBefore / (3n * COIN)), `${from}: ${ok} succeeded`);
    assert.is(await totalOf(svc, 203n, 'ETH'), 20n * COIN);
  }
});

test('BAL-004: a frozen source is ACCOUNT_FROZEN, FUNDING and SPOT alike; a frozen target still receives', async () => {
  await deposit(svc, 204n, 'FUNDING', 'USDT', '10', 'bal4-f');
  await deposit(svc, 204n, 'SPOT', 'USDT', '10', 'bal4-s');
  for (const account of ['FUNDING', 'SPOT']) {
    const r = await svc.call('POST', '/admin/v1/account_status', {
      token: svc.adminToken(),
      body: { user_id: '204', account, asset: 'USDT', status: 'FROZEN' },
    });
    assert.is(r.status, 200, JSON.stringify(r.body));
  }
  await failedWith(204n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' }, 'ACCOUNT_FROZEN');
  await failedWith(204n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '1' }, 'ACCOUNT_FROZEN');
  await svc.call('POST', '/admin/v1/account_status', {
    token: svc.adminToken(),
    body: { user_id: '204', account: 'FUNDING', asset: 'USDT', status: 'ACTIVE' },
  });
  const r = await transfer(svc, 204n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
  assert.is(r.body.state, 'COMMITTED', 'credit into a frozen SPOT account');
  assert.equal(await fundsOf(svc, 204n, 'USDT'), { funding: 9n * COIN, spot: 11n * COIN });
});

test('BAL-005: a disabled source is ACCOUNT_DISABLED', async () => {
  await deposit(svc, 205n, 'FUNDING', 'USDT', '10', 'bal5-f');
  await deposit(svc, 205n, 'SPOT', 'USDT', '10', 'bal5-s');
  for (const account of ['FUNDING', 'SPOT']) {
    await svc.call('POST', '/admin/v1/account_status', {
      token: svc.adminToken(),
      body: { user_id: '205', account, asset: 'USDT', status: 'DISABLED' },
    });
  }
  await failedWith(205n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' }, 'ACCOUNT_DISABLED');
  await failedWith(205n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '1' }, 'ACCOUNT_DISABLED');
  assert.equal(await fundsOf(svc, 205n, 'USDT'), { funding: 10n * COIN, spot: 10n * COIN });
});

test('missing accounts: no FUNDING source or target, no SPOT source, each FAILED with its code', async () => {
  await failedWith(206n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' }, 'SOURCE_ACCOUNT_NOT_FOUND');
  await failedWith(206n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '1' }, 'TARGET_ACCOUNT_NOT_FOUND');
  await deposit(svc, 206n, 'FUNDING', 'USDT', '1', 'missing-f');
  await failedWith(206n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '1' }, 'SOURCE_ACCOUNT_NOT_FOUND');
  const status = await svc.call('POST', '/admin/v1/account_status', {
    token: svc.adminToken(),
    body: { user_id: '999', account: 'FUNDING', asset: 'USDT', status: 'FROZEN' },
  });
  assert.is(status.status, 404);
});

test('a suspended asset is ASSET_SUSPENDED, a non-transferable one TRANSFER_NOT_ALLOWED, both refused before any transfer exists', async () => {
  const admin = svc.adminToken();
  const spec = {
    precision: 6,
    min_transfer_amount: '0.01',
    max_transfer_amount: '1000',
    status: 'ACTIVE',
    internal_transfer_enabled: true,
  };
  const created = await svc.call('PUT', '/admin/v1/assets/SOL', { token: admin, body: spec });
  assert.is(created.status, 201, JSON.stringify(created.body));
  await deposit(svc, 207n, 'FUNDING', 'SOL', '5', 'sol-1');
  const small = await transfer(svc, 207n, { from: 'FUNDING', to: 'SPOT', asset: 'SOL', amount: '0.001' });
  assert.is(small.body.code, 'AMOUNT_TOO_SMALL');
  const large = await transfer(svc, 207n, { from: 'FUNDING', to: 'SPOT', asset: 'SOL', amount: '1000.000001' });
  assert.is(large.body.code, 'AMOUNT_TOO_LARGE');
  assert.is((await svc.call('PUT', '/admin/v1/assets/SOL', { token: admin, body: { ...spec, status: 'SUSPENDED' } })).status, 200);
  const rowsBefore = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = 207`;
  const suspended = await transfer(svc, 207n, { from: 'FUNDING', to: 'SPOT', asset: 'SOL', amount: '1' });
  assert.equal([suspended.status, suspended.body.code, suspended.body.req_id], [422, 'ASSET_SUSPENDED', undefined]);
  await svc.call('PUT', '/admin/v1/assets/SOL', { token: admin, body: { ...spec, internal_transfer_enabled: false } });
  const closed = await transfer(svc, 207n, { from: 'FUNDING', to: 'SPOT', asset: 'SOL', amount: '1' });
  assert.equal([closed.status, closed.body.code, closed.body.req_id], [422, 'TRANSFER_NOT_ALLOWED', undefined]);
  // Spec 001 §1.5.8: the asset (step 5) comes before the amount (step 6).
  assert.is(
    (await transfer(svc, 207n, { from: 'FUNDING', to: 'SPOT', asset: 'SOL', amount: '0.0000001' })).body.code,
    'TRANSFER_NOT_ALLOWED',
  );
  const rowsAfter = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = 207`;
  assert.is(rowsAfter[0]?.n, rowsBefore[0]?.n, 'no transfer row for a closed asset');
  const precision = await svc.call('PUT', '/admin/v1/assets/SOL', { token: admin, body: { ...spec, precision: 8 } });
  assert.is(precision.status, 400, 'the precision of an existing asset never changes');
  // The helper reads decimal strings at 8 places: "5.000000" is 5 whole SOL.
  assert.equal(await fundsOf(svc, 207n, 'SOL'), { funding: 5n * COIN, spot: 0n });
});

test.run();
