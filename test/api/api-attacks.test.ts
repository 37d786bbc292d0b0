// Proves every external attack of spec 000 §10.2 (ATK-001..013) is refused with the spec's code and moves no funds.

import { CHECK_ORDER, stepOf } from '../../src/domain/check-order.js';
import type { ErrorCode } from '../../src/domain/errors.js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signJwt } from '../../src/http/auth/jwt.js';
import { deposit, totalOf, transfer } from '../support/funds.js';
import { startTestService, TEST_JWT_SECRET, type TestService } from '../support/service.js';

let svc: TestService;
const A = 101n;
const B = 102n;
const valid = { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' };

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0' });
  await deposit(svc, A, 'FUNDING', 'USDT', '100', 'atk-a');
  await deposit(svc, B, 'FUNDING', 'USDT', '100', 'atk-b');
});

test.after(async () => {
  // Every attack above must have left both users' funds exactly where they were, less what
  // the one legitimate ATK-010 transfer moved between A's own accounts.
  assert.is(await totalOf(svc, A, 'USDT'), 100n * 10n ** 8n);
  assert.is(await totalOf(svc, B, 'USDT'), 100n * 10n ** 8n);
  await svc.stop();
});

async function refused(body: unknown, code: string, status: number, token = svc.userToken(A)): Promise<void> {
  const r = await svc.call('POST', '/api/v1/internal_transfer', { token, body });
  assert.is(r.status, status, `${JSON.stringify(body)} → ${JSON.stringify(r.body)}`);
  assert.is(r.body.code, code);
  assert.type(r.body.message, 'string');
}

test('ATK-001: a transfer of user B funds with user A token is refused with FORBIDDEN, and B transfers stay hidden', async () => {
  await refused({ ...valid, user_id: B.toString() }, 'FORBIDDEN', 403);
  const own = await transfer(svc, B, valid);
  assert.is(own.status, 200);
  const peek = await svc.call('GET', `/api/v1/internal_transfer/${String(own.body.req_id)}`, { token: svc.userToken(A) });
  assert.is(peek.status, 404);
  assert.is(peek.body.code, 'NOT_FOUND');
  const back = await transfer(svc, B, { ...valid, from: 'SPOT', to: 'FUNDING' });
  assert.is(back.status, 200);
});

test('ATK-002: a tampered user_id in the body is refused with FORBIDDEN', async () => {
  await refused({ ...valid, user_id: 999 }, 'FORBIDDEN', 403);
  await refused({ ...valid, user_id: '101 ' }, 'FORBIDDEN', 403);
  const same = await transfer(svc, A, { ...valid, user_id: '101', from: 'FUNDING', to: 'SPOT' });
  assert.is(same.status, 200);
  const back = await transfer(svc, A, { ...valid, from: 'SPOT', to: 'FUNDING' });
  assert.is(back.status, 200);
});

test('ATK-003: a negative amount is refused with INVALID_AMOUNT', async () => {
  await refused({ ...valid, amount: '-100' }, 'INVALID_AMOUNT', 400);
});

test('ATK-004: a zero amount is refused with INVALID_AMOUNT', async () => {
  await refused({ ...valid, amount: '0' }, 'INVALID_AMOUNT', 400);
  await refused({ ...valid, amount: '0.00000000' }, 'INVALID_AMOUNT', 400);
});

test('ATK-005: 0.000000001 (9 decimals for an 8-decimal asset) is refused with PRECISION_OVERFLOW', async () => {
  await refused({ ...valid, amount: '0.000000001' }, 'PRECISION_OVERFLOW', 400);
});

test('ATK-006: u64::MAX + 1 is refused with OVERFLOW', async () => {
  await refused({ ...valid, amount: '18446744073709551616' }, 'OVERFLOW', 400);
  await refused({ ...valid, amount: `1${'0'.repeat(100)}` }, 'OVERFLOW', 400);
});

test('ATK-007: from = to = SPOT is refused with SAME_ACCOUNT', async () => {
  await refused({ ...valid, from: 'SPOT', to: 'SPOT' }, 'SAME_ACCOUNT', 400);
  await refused({ ...valid, from: 'FUNDING', to: 'FUNDING' }, 'SAME_ACCOUNT', 400);
});

test('ATK-008: an invalid account type is refused with INVALID_ACCOUNT_TYPE; FUTURE with UNSUPPORTED_ACCOUNT_TYPE', async () => {
  await refused({ ...valid, from: 'INVALID' }, 'INVALID_ACCOUNT_TYPE', 400);
  await refused({ ...valid, to: 'spot' }, 'INVALID_ACCOUNT_TYPE', 400);
  await refused({ ...valid, from: 7 }, 'INVALID_ACCOUNT_TYPE', 400);
  await refused({ ...valid, to: 'FUTURE' }, 'UNSUPPORTED_ACCOUNT_TYPE', 400);
});

test('ATK-009: a non-existent asset (999999) is refused with INVALID_ASSET', async () => {
  await refused({ ...valid, asset: '999999' }, 'INVALID_ASSET', 400);
  await refused({ ...valid, asset: 999999 }, 'INVALID_ASSET', 400);
  await refused({ ...valid, asset: 'usdt' }, 'INVALID_ASSET', 400);
});

test('spec 001 §1.5.8: each answer is the first failing step of CHECK_ORDER (format, then account types, then asset, then amount)', async () => {
  const cases: readonly [Record<string, unknown>, ErrorCode, string][] = [
    // Format of a later field comes first: amount is not a string.
    [{ from: 'SPOT', to: 'SPOT', asset: 'USDT', amount: 5 }, 'INVALID_AMOUNT', 'the format'],
    [{ from: 'SPOT', to: 'SPOT', asset: 'USDT', amount: '1', client_order_id: 'bad id!' }, 'INVALID_REQUEST', 'the format'],
    [{ from: 'SPOT', to: 'SPOT', asset: 'USDT', amount: '1', surprise: 1 }, 'INVALID_REQUEST', 'the format'],
    // Account types before the asset and the amount's value.
    [{ from: 'SPOT', to: 'SPOT', asset: 'bad asset!', amount: '-1' }, 'SAME_ACCOUNT', 'the account types'],
    [{ from: 'INVALID', to: 'SPOT', asset: 'NOPE', amount: '0' }, 'INVALID_ACCOUNT_TYPE', 'the account types'],
    [{ from: 'FUNDING', to: 'FUTURE', asset: 'bad asset!', amount: '0' }, 'UNSUPPORTED_ACCOUNT_TYPE', 'the account types'],
    // The asset before the amount's value.
    [{ from: 'FUNDING', to: 'SPOT', asset: 'bad asset!', amount: '-1' }, 'INVALID_ASSET', 'the asset'],
    [{ from: 'FUNDING', to: 'SPOT', asset: 'NOPE', amount: '0.000000001' }, 'INVALID_ASSET', 'the asset'],
    [{ from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '0.000000001' }, 'PRECISION_OVERFLOW', 'the amount'],
  ];
  for (const [body, code, step] of cases) {
    await refused(body, code, 400);
    assert.ok(CHECK_ORDER[stepOf(code)]?.check.startsWith(step), `${code} is a code of the step "${step}" in CHECK_ORDER`);
  }
});

test('ATK-010: the same client_order_id twice returns the first result; with another body DUPLICATE_REQUEST', async () => {
  const body = { ...valid, client_order_id: 'atk-010' };
  const first = await transfer(svc, A, body);
  const second = await transfer(svc, A, body);
  assert.is(first.status, 200);
  assert.is(second.status, 200);
  assert.is(second.body.req_id, first.body.req_id);
  const other = await transfer(svc, A, { ...body, amount: '2' });
  assert.is(other.status, 409);
  assert.is(other.body.code, 'DUPLICATE_REQUEST');
  // The same id is free for another user: unique per user, not globally.
  const b = await transfer(svc, B, body);
  assert.is(b.status, 200);
  assert.is.not(b.body.req_id, first.body.req_id);
  for (const user of [A, B]) assert.is((await transfer(svc, user, { ...valid, from: 'SPOT', to: 'FUNDING' })).status, 200);
});

test('ATK-011: a missing Authorization header is refused with UNAUTHORIZED', async () => {
  const r = await svc.call('POST', '/api/v1/internal_transfer', { body: valid });
  assert.is(r.status, 401);
  assert.is(r.body.code, 'UNAUTHORIZED');
});

test('ATK-012: an expired token is refused with UNAUTHORIZED, and so is one without exp', async () => {
  const past = Math.floor(Date.now() / 1000) - 10;
  await refused(valid, 'UNAUTHORIZED', 401, signJwt({ sub: '101', exp: past }, TEST_JWT_SECRET));
  const noExp = signJwt({ sub: '101' } as { sub: string; exp: number }, TEST_JWT_SECRET);
  await refused(valid, 'UNAUTHORIZED', 401, noExp);
});

test('ATK-013: forged, alg:none, malformed and non-numeric-sub tokens are refused with UNAUTHORIZED', async () => {
  const exp = Math.floor(Date.now() / 1000) + 600;
  const forged = signJwt({ sub: '101', exp }, 'another-secret-another-secret-another-secret');
  await refused(valid, 'UNAUTHORIZED', 401, forged);
  const none = [
    Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url'),
    Buffer.from(JSON.stringify({ sub: '101', exp })).toString('base64url'),
    '',
  ].join('.');
  await refused(valid, 'UNAUTHORIZED', 401, none);
  await refused(valid, 'UNAUTHORIZED', 401, 'not.a.token');
  await refused(valid, 'UNAUTHORIZED', 401, signJwt({ sub: 'alice', exp }, TEST_JWT_SECRET));
  const tampered = signJwt({ sub: '101', exp }, TEST_JWT_SECRET).replace(
    /\.[^.]+\./,
    `.${Buffer.from(JSON.stringify({ sub: '102', exp })).toString('base64url')}.`,
  );
  await refused(valid, 'UNAUTHORIZED', 401, tampered);
  const user = await svc.call('POST', '/admin/v1/deposit', { token: svc.userToken(A), body: {} });
  assert.is(user.status, 403, 'a user token on an admin route');
});

test.run();
