// The rows of the client routes, the probes and the docs (test/contract/routes-api.test.ts): every
// operation, and every code a client's request can be answered with. The assets they use are
// created by `prepareApiAssets`; the service runs with the limits named below.

import type { ErrorCode } from '../../src/domain/errors.js';
import * as assert from 'uvu/assert';
import { signJwt } from '../../src/http/auth/jwt.js';
import type { Row, RowContext } from './route-table.js';
import { TEST_JWT_SECRET, type TestService } from '../support/service.js';

/** Transfers per user per day the service of these rows allows. */
export const API_DAILY_TRANSFER_LIMIT = 3;
/** Requests per user per second on the client routes; every other row sends fewer than this for its user. */
export const API_RATE_LIMIT_PER_SECOND = 10;

const ASSET = 'RTA';
/** RTA: 8 decimals, transfers of 0.01 to 100. RTS is suspended, RTN closed to transfers, RTD capped at 5 a day. */
const ASSETS: Readonly<Record<string, Record<string, unknown>>> = {
  RTA: { status: 'ACTIVE', internal_transfer_enabled: true },
  RTS: { status: 'SUSPENDED', internal_transfer_enabled: true },
  RTN: { status: 'ACTIVE', internal_transfer_enabled: false },
  RTD: { status: 'ACTIVE', internal_transfer_enabled: true, daily_amount_limit: '5' },
};

export async function prepareApiAssets(svc: TestService): Promise<void> {
  for (const [symbol, more] of Object.entries(ASSETS)) {
    const body = { precision: 8, min_transfer_amount: '0.01', max_transfer_amount: '100', ...more };
    const r = await svc.adminRequest('PUT', `/admin/v1/assets/${symbol}`, { token: svc.adminToken(), body });
    assert.is(r.status, 201, r.text);
  }
}

const valid = { from: 'FUNDING', to: 'SPOT', asset: ASSET, amount: '1' };
const TRANSFER = '/api/v1/internal_transfer';

/** Funds the row's user: `amount` of `asset` into `account`, through the admin route. */
function funded(amount = '10', account: 'FUNDING' | 'SPOT' = 'FUNDING', asset = ASSET) {
  return async (ctx: RowContext): Promise<void> => {
    const r = await ctx.send('POST', '/admin/v1/deposit', {
      token: ctx.svc.adminToken(),
      body: { user_id: String(ctx.user), account, asset, amount, ref: `rt-${ctx.user}-${account}-${asset}` },
    });
    assert.is(r.status, 200, r.text);
  };
}

async function transferOnce(ctx: RowContext, body: Record<string, unknown>, status = 200): Promise<string> {
  const r = await ctx.send('POST', TRANSFER, { token: ctx.svc.userToken(ctx.user), body });
  assert.is(r.status, status, r.text);
  return String(r.body.req_id);
}

async function setStatus(ctx: RowContext, account: string, status: string): Promise<void> {
  const body = { user_id: String(ctx.user), account, asset: ASSET, status };
  const r = await ctx.send('POST', '/admin/v1/account_status', { token: ctx.svc.adminToken(), body });
  assert.is(r.status, 200, r.text);
}

async function halt(ctx: RowContext): Promise<void> {
  const r = await ctx.send('POST', '/admin/v1/halt', { token: ctx.svc.adminToken(), body: { reason: 'route table' } });
  assert.is(r.status, 200, r.text);
}

async function resume(ctx: RowContext): Promise<void> {
  const r = await ctx.send('POST', '/admin/v1/resume', { token: ctx.svc.adminToken(), body: {} });
  assert.is(r.status, 200, r.text);
}

async function fundingOf(ctx: RowContext): Promise<string | undefined> {
  const r = await ctx.send('GET', '/api/v1/balances', { token: ctx.svc.userToken(ctx.user) });
  return (r.body.funding as { asset: string; available: string }[]).find((b) => b.asset === ASSET)?.available;
}

const hour = () => Math.floor(Date.now() / 1000) + 3600;

function refused(name: string, body: Record<string, unknown>, status: number, code: ErrorCode, setup?: Row['setup']): Row {
  return { name, method: 'POST', path: TRANSFER, as: 'user', body, status, code, ...(setup === undefined ? {} : { setup }) };
}

export const API_ROWS: readonly Row[] = [
  {
    name: 'FSM-001: FUNDING→SPOT within the balance answers 200 COMMITTED',
    method: 'POST',
    path: TRANSFER,
    as: 'user',
    body: valid,
    setup: funded(),
    status: 200,
    fields: { state: 'COMMITTED', internal_state: 'COMMITTED', amount: '1.00000000', from: 'FUNDING', to: 'SPOT' },
  },
  {
    name: 'BAL-002: amount = available succeeds and the source becomes 0',
    method: 'POST',
    path: TRANSFER,
    as: 'user',
    body: { ...valid, amount: '10' },
    setup: funded(),
    status: 200,
    fields: { state: 'COMMITTED' },
    check: async (_, ctx) => assert.is(await fundingOf(ctx), '0.00000000'),
  },
  {
    ...refused(
      'BAL-001: amount > available is INSUFFICIENT_BALANCE (422, a FAILED transfer)',
      { ...valid, amount: '11' },
      422,
      'INSUFFICIENT_BALANCE',
      funded(),
    ),
    fields: { state: 'FAILED' },
    check: async (_, ctx) => assert.is(await fundingOf(ctx), '10.00000000'),
  },
  refused('BAL-004: a frozen source is ACCOUNT_FROZEN', valid, 422, 'ACCOUNT_FROZEN', async (ctx) => {
    await funded()(ctx);
    await setStatus(ctx, 'FUNDING', 'FROZEN');
  }),
  refused('BAL-005: a disabled source is ACCOUNT_DISABLED', valid, 422, 'ACCOUNT_DISABLED', async (ctx) => {
    await funded()(ctx);
    await setStatus(ctx, 'FUNDING', 'DISABLED');
  }),
  refused(
    'a SPOT→FUNDING transfer without a FUNDING account is TARGET_ACCOUNT_NOT_FOUND',
    { ...valid, from: 'SPOT', to: 'FUNDING' },
    422,
    'TARGET_ACCOUNT_NOT_FOUND',
    funded('10', 'SPOT'),
  ),
  refused('a FUNDING→SPOT transfer without a FUNDING account is SOURCE_ACCOUNT_NOT_FOUND', valid, 422, 'SOURCE_ACCOUNT_NOT_FOUND'),
  {
    name: 'ATK-001: a transfer of user B funds with user A token is refused with FORBIDDEN',
    method: 'POST',
    path: TRANSFER,
    as: 'user',
    body: (ctx: RowContext) => ({ ...valid, user_id: String(ctx.user + 1_000_000n) }),
    status: 403,
    code: 'FORBIDDEN',
  },
  {
    name: "ATK-001: user A reading user B's transfer is NOT_FOUND, as for an unknown one",
    method: 'GET',
    path: `${TRANSFER}/{req_id}`,
    as: (ctx) => ctx.svc.userToken(ctx.user + 1_000_000n),
    setup: async (ctx) => {
      await funded()(ctx);
      ctx.vars.req_id = await transferOnce(ctx, valid);
    },
    status: 404,
    code: 'NOT_FOUND',
  },
  refused('ATK-002: a tampered user_id in the body is refused with FORBIDDEN', { ...valid, user_id: 999 }, 403, 'FORBIDDEN'),
  refused('ATK-003: a negative amount is refused with INVALID_AMOUNT', { ...valid, amount: '-100' }, 400, 'INVALID_AMOUNT'),
  refused('ATK-004: a zero amount is refused with INVALID_AMOUNT', { ...valid, amount: '0' }, 400, 'INVALID_AMOUNT'),
  refused('ATK-005: 0.000000001 is refused with PRECISION_OVERFLOW', { ...valid, amount: '0.000000001' }, 400, 'PRECISION_OVERFLOW'),
  refused('ATK-006: u64::MAX + 1 is refused with OVERFLOW', { ...valid, amount: '18446744073709551616' }, 400, 'OVERFLOW'),
  refused('ATK-007: from = to = SPOT is refused with SAME_ACCOUNT', { ...valid, from: 'SPOT', to: 'SPOT' }, 400, 'SAME_ACCOUNT'),
  refused('ATK-008: from = INVALID is refused with INVALID_ACCOUNT_TYPE', { ...valid, from: 'INVALID' }, 400, 'INVALID_ACCOUNT_TYPE'),
  refused('ATK-008: to = FUTURE is refused with UNSUPPORTED_ACCOUNT_TYPE', { ...valid, to: 'FUTURE' }, 400, 'UNSUPPORTED_ACCOUNT_TYPE'),
  refused('ATK-009: asset 999999 is refused with INVALID_ASSET', { ...valid, asset: '999999' }, 400, 'INVALID_ASSET'),
  {
    name: 'ATK-010: the same client_order_id twice returns the first result',
    method: 'POST',
    path: TRANSFER,
    as: 'user',
    body: { ...valid, client_order_id: 'rt-same' },
    setup: async (ctx) => {
      await funded()(ctx);
      ctx.vars.req_id = await transferOnce(ctx, { ...valid, client_order_id: 'rt-same' });
    },
    status: 200,
    fields: (ctx) => ({ req_id: ctx.vars.req_id, state: 'COMMITTED' }),
    check: async (_, ctx) => assert.is(await fundingOf(ctx), '9.00000000'),
  },
  refused(
    'ATK-010: the same client_order_id with another body is DUPLICATE_REQUEST',
    { ...valid, amount: '2', client_order_id: 'rt-dup' },
    409,
    'DUPLICATE_REQUEST',
    async (ctx) => {
      await funded()(ctx);
      await transferOnce(ctx, { ...valid, client_order_id: 'rt-dup' });
    },
  ),
  {
    name: 'ATK-011: a missing Authorization header is refused with UNAUTHORIZED',
    method: 'POST',
    path: TRANSFER,
    as: 'none',
    body: valid,
    status: 401,
    code: 'UNAUTHORIZED',
  },
  {
    name: 'ATK-012: an expired token is refused with UNAUTHORIZED',
    method: 'POST',
    path: TRANSFER,
    as: (ctx) => signJwt({ sub: String(ctx.user), exp: Math.floor(Date.now() / 1000) - 60 }, TEST_JWT_SECRET),
    body: valid,
    status: 401,
    code: 'UNAUTHORIZED',
  },
  {
    name: 'ATK-013: a token signed with another key is refused with UNAUTHORIZED',
    method: 'POST',
    path: TRANSFER,
    as: (ctx) => signJwt({ sub: String(ctx.user), exp: hour() }, 'not-the-secret-0123456789-0123456789-abcdef'),
    body: valid,
    status: 401,
    code: 'UNAUTHORIZED',
  },
  refused('an amount below the asset minimum is AMOUNT_TOO_SMALL', { ...valid, amount: '0.001' }, 400, 'AMOUNT_TOO_SMALL'),
  refused('an amount above the asset maximum is AMOUNT_TOO_LARGE', { ...valid, amount: '100.5' }, 400, 'AMOUNT_TOO_LARGE'),
  refused('a suspended asset is ASSET_SUSPENDED', { ...valid, asset: 'RTS' }, 422, 'ASSET_SUSPENDED'),
  refused('an asset closed to internal transfers is TRANSFER_NOT_ALLOWED', { ...valid, asset: 'RTN' }, 422, 'TRANSFER_NOT_ALLOWED'),
  refused(
    `the transfer after ${API_DAILY_TRANSFER_LIMIT} in a day is DAILY_LIMIT_EXCEEDED`,
    valid,
    429,
    'DAILY_LIMIT_EXCEEDED',
    async (ctx) => {
      await funded()(ctx);
      for (let i = 0; i < API_DAILY_TRANSFER_LIMIT; i++) await transferOnce(ctx, valid);
    },
  ),
  refused(
    "a transfer over the asset's daily amount is DAILY_AMOUNT_EXCEEDED",
    { ...valid, asset: 'RTD', amount: '3' },
    429,
    'DAILY_AMOUNT_EXCEEDED',
    async (ctx) => {
      await funded('10', 'FUNDING', 'RTD')(ctx);
      await transferOnce(ctx, { ...valid, asset: 'RTD', amount: '3' });
    },
  ),
  {
    name: `the request after ${API_RATE_LIMIT_PER_SECOND} in a second is RATE_LIMIT_EXCEEDED`,
    method: 'GET',
    path: '/api/v1/balances',
    as: 'user',
    // A user's window opens at its first request, so these and the row's own fall in one second.
    setup: async (ctx) => {
      for (let i = 0; i < API_RATE_LIMIT_PER_SECOND; i++)
        assert.is((await ctx.send('GET', '/api/v1/balances', { token: ctx.svc.userToken(ctx.user) })).status, 200);
    },
    status: 429,
    code: 'RATE_LIMIT_EXCEEDED',
  },
  { ...refused('a body that is not JSON is INVALID_REQUEST', {}, 400, 'INVALID_REQUEST'), body: '{"from":' },
  refused('an unknown field is INVALID_REQUEST', { ...valid, memo: 'x' }, 400, 'INVALID_REQUEST'),
  {
    name: 'a declared Content-Length over BODY_BYTES_MAX is PAYLOAD_TOO_LARGE',
    method: 'POST',
    path: TRANSFER,
    as: 'user',
    body: `{"pad":"${'x'.repeat(20_000)}"}`,
    headers: { 'content-length': '20010' },
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    name: 'a body over BODY_BYTES_MAX without a declared length is PAYLOAD_TOO_LARGE',
    method: 'POST',
    path: TRANSFER,
    as: 'user',
    body: `{"pad":"${'x'.repeat(20_000)}"}`,
    status: 413,
    code: 'PAYLOAD_TOO_LARGE',
  },
  {
    ...refused('MON-003: a halted service refuses a new transfer with SERVICE_HALTED', valid, 503, 'SERVICE_HALTED', async (ctx) => {
      await funded()(ctx);
      await halt(ctx);
    }),
    after: resume,
  },
  {
    name: 'MON-003: /readyz answers 503 SERVICE_UNAVAILABLE while halted',
    method: 'GET',
    path: '/readyz',
    as: 'none',
    setup: halt,
    after: resume,
    status: 503,
    code: 'SERVICE_UNAVAILABLE',
    fields: { halted: true, postgres: true, ubscore: true },
  },
  {
    name: 'GET /api/v1/internal_transfer/{req_id} answers the transfer and its history',
    method: 'GET',
    path: `${TRANSFER}/{req_id}`,
    as: 'user',
    setup: async (ctx) => {
      await funded()(ctx);
      ctx.vars.req_id = await transferOnce(ctx, valid);
    },
    status: 200,
    fields: (ctx) => ({ req_id: ctx.vars.req_id, state: 'COMMITTED', error_code: null }),
    check: (r) => assert.ok((r.body.history as unknown[]).length >= 2),
  },
  {
    name: 'an unknown req_id is NOT_FOUND',
    method: 'GET',
    path: `${TRANSFER}/01ARZ3NDEKTSV4RRFFQ69G5FAV`,
    as: 'user',
    status: 404,
    code: 'NOT_FOUND',
  },
  {
    name: 'a req_id that is no ULID is NOT_FOUND',
    method: 'GET',
    path: `${TRANSFER}/not-a-ulid`,
    as: 'user',
    status: 404,
    code: 'NOT_FOUND',
  },
  {
    name: "GET /api/v1/internal_transfer lists the user's transfers",
    method: 'GET',
    path: `${TRANSFER}?limit=10`,
    as: 'user',
    setup: async (ctx) => {
      await funded()(ctx);
      ctx.vars.req_id = await transferOnce(ctx, valid);
    },
    status: 200,
    fields: { next_cursor: null },
    check: (r, ctx) =>
      assert.equal(
        (r.body.items as { req_id: string }[]).map((t) => t.req_id),
        [ctx.vars.req_id],
      ),
  },
  {
    name: 'a history limit of 0 is INVALID_REQUEST',
    method: 'GET',
    path: `${TRANSFER}?limit=0`,
    as: 'user',
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    name: 'the history of a user without a token is UNAUTHORIZED',
    method: 'GET',
    path: TRANSFER,
    as: 'none',
    status: 401,
    code: 'UNAUTHORIZED',
  },
  {
    name: "GET /api/v1/balances answers the user's balances",
    method: 'GET',
    path: '/api/v1/balances',
    as: 'user',
    setup: funded('2.5'),
    status: 200,
    fields: { funding: [{ asset: ASSET, available: '2.50000000', status: 'ACTIVE' }], spot: [] },
  },
  { name: 'GET /healthz answers ok', method: 'GET', path: '/healthz', as: 'none', status: 200, fields: { status: 'ok' } },
  {
    name: 'GET /readyz answers ready',
    method: 'GET',
    path: '/readyz',
    as: 'none',
    status: 200,
    fields: { status: 'ready', halted: false },
  },
  {
    name: 'GET /openapi.json answers the document',
    method: 'GET',
    path: '/openapi.json',
    as: 'none',
    status: 200,
    fields: { openapi: '3.1.0' },
  },
  {
    name: 'GET /docs answers the Swagger UI page',
    method: 'GET',
    path: '/docs',
    as: 'none',
    status: 200,
    check: (r) => assert.ok(r.text.includes('SwaggerUIBundle')),
  },
  { name: 'an unknown route is NOT_FOUND', method: 'GET', path: '/api/v1/nothing-here', as: 'user', status: 404, code: 'NOT_FOUND' },
];
