// The rows of the operator routes that move money or change an asset or an account (deposit,
// withdraw, assets, account status), and what the other rows share: the asset RTA they use,
// created by `prepareAdminAssets`, and a deposit to start from. The whole list, with the
// operator's views and controls, is ADMIN_ROWS (route-rows-admin.ts).

import * as assert from 'uvu/assert';
import type { TestService } from '../support/service.js';
import type { Row, RowContext } from './route-table.js';

export const ASSET = 'RTA';
const ASSET_BODY = {
  precision: 8,
  min_transfer_amount: '0.01',
  max_transfer_amount: '100',
  status: 'ACTIVE',
  internal_transfer_enabled: true,
};

export async function prepareAdminAssets(svc: TestService): Promise<void> {
  const r = await svc.adminRequest('PUT', `/admin/v1/assets/${ASSET}`, { token: svc.adminToken(), body: ASSET_BODY });
  assert.is(r.status, 201, r.text);
}

export async function deposit(ctx: RowContext, amount = '10', account: 'FUNDING' | 'SPOT' = 'FUNDING'): Promise<void> {
  const body = { user_id: String(ctx.user), account, asset: ASSET, amount, ref: `ra-${ctx.user}-${account}` };
  const r = await ctx.send('POST', '/admin/v1/deposit', { token: ctx.svc.adminToken(), body });
  assert.is(r.status, 200, r.text);
}

export const deposit1 = (ctx: RowContext, more: Record<string, unknown> = {}) => ({
  user_id: String(ctx.user),
  account: 'FUNDING',
  asset: ASSET,
  amount: '1',
  ref: `ra-row-${ctx.user}`,
  ...more,
});

export const ADMIN_MONEY_ROWS: readonly Row[] = [
  {
    name: 'POST /admin/v1/deposit credits the account and answers DONE',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: deposit1,
    status: 200,
    fields: { state: 'DONE', duplicate: false, amount: '1' },
  },
  {
    name: 'a deposit with a ref already applied answers DONE, duplicate, and credits nothing more',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: deposit1,
    setup: async (ctx) => {
      const r = await ctx.send('POST', '/admin/v1/deposit', { token: ctx.svc.adminToken(), body: deposit1(ctx) });
      assert.is(r.status, 200, r.text);
    },
    status: 200,
    fields: { state: 'DONE', duplicate: true },
  },
  {
    name: 'a deposit without a token is UNAUTHORIZED',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'none',
    body: deposit1,
    status: 401,
    code: 'UNAUTHORIZED',
  },
  {
    name: "a deposit with a user's token is FORBIDDEN",
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'user',
    body: deposit1,
    status: 403,
    code: 'FORBIDDEN',
  },
  {
    name: 'a deposit for user 0 is INVALID_USER',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { user_id: '0' }),
    status: 400,
    code: 'INVALID_USER',
  },
  {
    name: 'a deposit into FUTURE is INVALID_ACCOUNT_TYPE',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { account: 'FUTURE' }),
    status: 400,
    code: 'INVALID_ACCOUNT_TYPE',
  },
  {
    name: 'a deposit of an unknown asset is INVALID_ASSET',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { asset: 'NOPE' }),
    status: 400,
    code: 'INVALID_ASSET',
  },
  {
    name: 'a deposit of -1 is INVALID_AMOUNT',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { amount: '-1' }),
    status: 400,
    code: 'INVALID_AMOUNT',
  },
  {
    name: 'a deposit with a ref of spaces is INVALID_REQUEST',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { ref: 'a b' }),
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    name: 'POST /admin/v1/withdraw debits the account and answers DONE',
    method: 'POST',
    path: '/admin/v1/withdraw',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { ref: `ra-out-${ctx.user}`, amount: '4' }),
    setup: (ctx) => deposit(ctx),
    status: 200,
    fields: { state: 'DONE', duplicate: false, amount: '4' },
  },
  {
    name: 'CON-003: a withdrawal over the balance is INSUFFICIENT_BALANCE',
    method: 'POST',
    path: '/admin/v1/withdraw',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { ref: `ra-out-${ctx.user}`, amount: '11' }),
    setup: (ctx) => deposit(ctx),
    status: 422,
    code: 'INSUFFICIENT_BALANCE',
    fields: (ctx) => ({ ref: `ra-out-${ctx.user}` }),
  },
  {
    name: 'a withdrawal from an account that does not exist is SOURCE_ACCOUNT_NOT_FOUND',
    method: 'POST',
    path: '/admin/v1/withdraw',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { ref: `ra-out-${ctx.user}` }),
    status: 422,
    code: 'SOURCE_ACCOUNT_NOT_FOUND',
  },
  {
    name: 'a withdrawal from a frozen account is ACCOUNT_FROZEN',
    method: 'POST',
    path: '/admin/v1/withdraw',
    as: 'admin',
    body: (ctx) => deposit1(ctx, { ref: `ra-out-${ctx.user}`, account: 'SPOT' }),
    setup: async (ctx) => {
      await deposit(ctx, '10', 'SPOT');
      const body = { user_id: String(ctx.user), account: 'SPOT', asset: ASSET, status: 'FROZEN' };
      assert.is((await ctx.send('POST', '/admin/v1/account_status', { token: ctx.svc.adminToken(), body })).status, 200);
    },
    status: 422,
    code: 'ACCOUNT_FROZEN',
  },
  {
    name: 'PUT /admin/v1/assets/{symbol} creates an asset (201)',
    method: 'PUT',
    path: '/admin/v1/assets/RAB',
    as: 'admin',
    body: ASSET_BODY,
    status: 201,
    fields: { symbol: 'RAB', precision: 8, daily_amount_limit: null },
  },
  {
    name: 'PUT /admin/v1/assets/{symbol} changes an asset (200)',
    method: 'PUT',
    path: `/admin/v1/assets/${ASSET}`,
    as: 'admin',
    body: { ...ASSET_BODY, daily_amount_limit: '1000' },
    after: async (ctx) => {
      const r = await ctx.send('PUT', `/admin/v1/assets/${ASSET}`, { token: ctx.svc.adminToken(), body: ASSET_BODY });
      assert.is(r.status, 200, r.text);
    },
    status: 200,
    fields: { symbol: ASSET, daily_amount_limit: '1000' },
  },
  {
    name: 'a lower-case asset symbol is INVALID_ASSET',
    method: 'PUT',
    path: '/admin/v1/assets/rab',
    as: 'admin',
    body: ASSET_BODY,
    status: 400,
    code: 'INVALID_ASSET',
  },
  {
    name: 'an asset whose maximum is below its minimum is INVALID_REQUEST',
    method: 'PUT',
    path: '/admin/v1/assets/RAC',
    as: 'admin',
    body: { ...ASSET_BODY, max_transfer_amount: '0.001' },
    status: 400,
    code: 'INVALID_REQUEST',
    fields: { field: 'max_transfer_amount' },
  },
  {
    name: 'an asset minimum with more decimals than its precision is PRECISION_OVERFLOW',
    method: 'PUT',
    path: '/admin/v1/assets/RAC',
    as: 'admin',
    body: { ...ASSET_BODY, precision: 2, min_transfer_amount: '0.001' },
    status: 400,
    code: 'PRECISION_OVERFLOW',
    fields: { field: 'min_transfer_amount' },
  },
  {
    name: 'POST /admin/v1/account_status sets a status',
    method: 'POST',
    path: '/admin/v1/account_status',
    as: 'admin',
    body: (ctx) => ({ user_id: String(ctx.user), account: 'FUNDING', asset: ASSET, status: 'FROZEN' }),
    setup: (ctx) => deposit(ctx),
    status: 200,
    fields: { status: 'FROZEN', account: 'FUNDING' },
  },
  {
    name: 'an account status for user abc is INVALID_USER',
    method: 'POST',
    path: '/admin/v1/account_status',
    as: 'admin',
    body: { user_id: 'abc', account: 'FUNDING', asset: ASSET, status: 'FROZEN' },
    status: 400,
    code: 'INVALID_USER',
  },
  {
    name: 'an account status for an unknown asset is INVALID_ASSET',
    method: 'POST',
    path: '/admin/v1/account_status',
    as: 'admin',
    body: (ctx) => ({ user_id: String(ctx.user), account: 'FUNDING', asset: 'NOPE', status: 'FROZEN' }),
    status: 400,
    code: 'INVALID_ASSET',
  },
];
