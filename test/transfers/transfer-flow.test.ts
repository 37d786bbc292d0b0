// Proves a transfer crosses PostgreSQL and UBSCore end to end over HTTP in both directions (FSM-001, FSM-002), with its path in the state history and funds conserved exactly.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadRepeatables } from '../../src/db/migrations.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
const USER = 7n;

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0' });
  const deposit = await svc.call('POST', '/admin/v1/deposit', {
    token: svc.adminToken(),
    body: { user_id: USER.toString(), account: 'FUNDING', asset: 'USDT', amount: '1000', ref: 'flow-seed-1' },
  });
  assert.is(deposit.status, 200, JSON.stringify(deposit.body));
});

test.after(async () => {
  await svc.stop();
});

async function balances(): Promise<{ funding: string | undefined; spot: string | undefined }> {
  const r = await svc.call('GET', '/api/v1/balances', { token: svc.userToken(USER) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const find = (list: unknown) => (list as { asset: string; available: string }[]).find((b) => b.asset === 'USDT')?.available;
  return { funding: find(r.body.funding), spot: find(r.body.spot) };
}

// Spec 001 §2.2's happy path, less the one pending state a call does not need when it shares
// its transaction with the state change (spec 003 §4.3): the FUNDING debit commits with
// INIT → SOURCE_DONE, the FUNDING credit with SOURCE_DONE → COMMITTED. Every state a transfer
// passes through is still one history row.
const FUNDING_TO_SPOT = ['INIT', 'SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED'];
const SPOT_TO_FUNDING = ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'COMMITTED'];

async function historyOf(reqId: string): Promise<string[]> {
  const r = await svc.call('GET', `/api/v1/internal_transfer/${reqId}`, { token: svc.userToken(USER) });
  assert.is(r.status, 200);
  assert.is(r.body.state, 'COMMITTED');
  return (r.body.history as { state: string }[]).map((h) => h.state);
}

test('FSM-001: FUNDING→SPOT passes INIT → SOURCE_DONE (debit in the creating transaction) → TARGET_PENDING → COMMITTED', async () => {
  const r = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(USER),
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '100' },
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(r.body.state, 'COMMITTED');
  assert.is(r.body.amount, '100.00000000');
  assert.match(String(r.body.req_id), /^[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(await historyOf(String(r.body.req_id)), FUNDING_TO_SPOT);
  assert.equal(await balances(), { funding: '900.00000000', spot: '100.00000000' });
});

test('FSM-002: SPOT→FUNDING passes INIT → SOURCE_PENDING → SOURCE_DONE → COMMITTED (credit and both moves in one transaction), both balances exact', async () => {
  const r = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(USER),
    body: { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '40.5' },
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
  assert.is(r.body.state, 'COMMITTED');
  assert.equal(await historyOf(String(r.body.req_id)), SPOT_TO_FUNDING);
  assert.equal(await balances(), { funding: '940.50000000', spot: '59.50000000' });
});

test('INV-001: after both transfers the total across FUNDING and SPOT equals the deposit', async () => {
  const b = await balances();
  const units = (s: string | undefined) => BigInt((s ?? '0').replace('.', ''));
  assert.is(units(b.funding) + units(b.spot), 1000n * 10n ** 8n);
  const ops = await svc.sql`SELECT count(*)::int AS n FROM funding_operation_records WHERE outcome = 'APPLIED'`;
  assert.is(ops[0]?.n, 2);
});

test('an insufficient FUNDING balance ends FAILED, answered 422 with the code and req_id, nothing moved', async () => {
  const r = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(USER),
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '5000' },
  });
  assert.is(r.status, 422, JSON.stringify(r.body));
  assert.is(r.body.code, 'INSUFFICIENT_BALANCE');
  assert.is(r.body.state, 'FAILED');
  assert.type(r.body.req_id, 'string');
  assert.equal(await balances(), { funding: '940.50000000', spot: '59.50000000' });
});

test('a request without a token is refused with UNAUTHORIZED, one with a bad amount with INVALID_AMOUNT', async () => {
  const noToken = await svc.call('POST', '/api/v1/internal_transfer', {
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
  });
  assert.is(noToken.status, 401);
  assert.is(noToken.body.code, 'UNAUTHORIZED');
  const bad = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(USER),
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: 1 },
  });
  assert.is(bad.status, 400);
  assert.is(bad.body.code, 'INVALID_AMOUNT');
});

test('a deposit repeated with the same ref is applied once', async () => {
  const body = { user_id: '8', account: 'SPOT', asset: 'BTC', amount: '2', ref: 'flow-seed-spot' };
  const first = await svc.call('POST', '/admin/v1/deposit', { token: svc.adminToken(), body });
  const second = await svc.call('POST', '/admin/v1/deposit', { token: svc.adminToken(), body });
  assert.is(first.status, 200, JSON.stringify(first.body));
  assert.is(second.body.duplicate, true);
  const r = await svc.call('GET', '/api/v1/balances', { token: svc.userToken(8) });
  assert.equal(r.body.spot, [{ asset: 'BTC', available: '2.00000000', status: 'ACTIVE' }]);
});

test('spec 001 §8.1: a transfer still moving answers "PENDING" with its machine state in internal_state', async () => {
  // The transfer is put back in TARGET_PENDING behind the service, as it is while UBSCore's
  // credit is outstanding, and read through the GET a client would use.
  const r = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(USER),
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
  });
  assert.is(r.status, 200);
  const reqId = String(r.body.req_id);
  await svc.sql`UPDATE transfers_tb SET state = 30 WHERE req_id = ${reqId}`;
  const mid = await svc.call('GET', `/api/v1/internal_transfer/${reqId}`, { token: svc.userToken(USER) });
  assert.equal([mid.body.state, mid.body.internal_state], ['PENDING', 'TARGET_PENDING']);
  await svc.sql`UPDATE transfers_tb SET state = 40 WHERE req_id = ${reqId}`;
  const done = await svc.call('GET', `/api/v1/internal_transfer/${reqId}`, { token: svc.userToken(USER) });
  assert.equal([done.body.state, done.body.internal_state], ['COMMITTED', 'COMMITTED']);
});

test('spec 001 §8.1: a 500 after the request got its req_id names it, and the client can ask what became of it', async () => {
  // A real fault: the statement every transfer write uses is gone, so the shard cannot record it.
  await svc.sql.unsafe('DROP FUNCTION transfer_apply(jsonb, bigint)');
  try {
    const r = await svc.call('POST', '/api/v1/internal_transfer', {
      token: svc.userToken(USER),
      body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
    });
    assert.is(r.status, 500, JSON.stringify(r.body));
    assert.is(r.body.code, 'SYSTEM_ERROR');
    assert.match(String(r.body.req_id), /^[0-9A-HJKMNP-TV-Z]{26}$/);
    const asked = await svc.call('GET', `/api/v1/internal_transfer/${String(r.body.req_id)}`, { token: svc.userToken(USER) });
    assert.is(asked.status, 404, 'nothing was recorded under it');
  } finally {
    // The function's current definition is its repeatable file.
    const current = (await loadRepeatables()).find((f) => f.name === 'transfer_apply.sql');
    assert.ok(current !== undefined);
    await svc.sql.unsafe(current.sql);
  }
  const after = await svc.call('POST', '/api/v1/internal_transfer', {
    token: svc.userToken(USER),
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
  });
  assert.is(after.body.state, 'COMMITTED');
});

test.run();
