// Examples for the OpenAPI document, copied from real answers of a running service (a user's
// USDT, precision 6). test/contract/openapi-document.test.ts checks each against its schema.

import { errorBody } from '../errors.js';

const REQ_ID = '01M85SM5VW0H1XVWTCX66YP1H9';
const CREATED = '2026-11-24T03:29:37.665Z';
const AT = '2026-11-24T03:29:37.671Z';
const DONE = '2026-11-24T03:29:37.683Z';

export const transferRequest = { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '25.5', client_order_id: 'order-1001' };

export const transferAnswer = {
  transfer_id: '1',
  req_id: REQ_ID,
  from: 'FUNDING',
  to: 'SPOT',
  asset: 'USDT',
  amount: '25.500000',
  state: 'COMMITTED',
  internal_state: 'COMMITTED',
  message: 'Transfer successful',
  created_at: CREATED,
  updated_at: '2026-11-24T03:29:37.682Z',
};

export const transferPending = { ...transferAnswer, state: 'PENDING', internal_state: 'TARGET_PENDING', message: 'Transfer is processing' };

export const transferFailed = {
  ...errorBody('INSUFFICIENT_BALANCE'),
  req_id: '01M85SM5XA0K591ZJ2QMYPCNHA',
  state: 'FAILED',
  transfer_id: '3',
};

/** An exception after the transfer was given its req_id: the answer still names it. */
export const transferError = { ...errorBody('SYSTEM_ERROR'), req_id: '01M85SM5XA0K591ZJ2QMYPCNHA' };

export const transferDetail = {
  ...transferAnswer,
  error_code: null,
  history: [
    { from: null, state: 'INIT', event: 'CREATED', detail: null, at: AT },
    { from: 'INIT', state: 'SOURCE_DONE', event: 'SOURCE_OK', detail: null, at: AT },
    { from: 'SOURCE_DONE', state: 'TARGET_PENDING', event: 'TARGET_CALL', detail: null, at: AT },
    { from: 'TARGET_PENDING', state: 'COMMITTED', event: 'TARGET_OK', detail: null, at: DONE },
  ],
};

export const historyPage = { items: [transferAnswer], next_cursor: 'dDE6MQ' };

export const balances = {
  funding: [{ asset: 'USDT', available: '79.500000', status: 'ACTIVE' }],
  spot: [{ asset: 'USDT', available: '20.500000', status: 'ACTIVE' }],
};

export const movementRequest = { user_id: '42', account: 'FUNDING', asset: 'USDT', amount: '100', ref: 'dep-42-0001' };
export const movementDone = { ref: 'dep-42-0001', state: 'DONE', duplicate: false, account: 'FUNDING', asset: 'USDT', amount: '100' };
export const movementPending = { ref: 'dep-42-0002', state: 'PENDING', message: 'UBSCore did not answer; repeat with the same ref' };

export const assetRequest = {
  precision: 6,
  min_transfer_amount: '0.01',
  max_transfer_amount: '1000000',
  status: 'ACTIVE',
  internal_transfer_enabled: true,
  daily_amount_limit: null,
};
export const asset = { symbol: 'USDT', ...assetRequest };

export const accountStatus = { user_id: '42', account: 'SPOT', asset: 'USDT', status: 'FROZEN' };

export const health = { status: 'ok' };
export const ready = {
  status: 'ready',
  postgres: true,
  owner: true,
  lease: 'proven',
  owner_reason: null,
  ubscore: true,
  halted: false,
  halt_reason: null,
};
export const notReady = {
  code: 'SERVICE_UNAVAILABLE',
  message: 'not ready',
  postgres: true,
  owner: true,
  lease: 'proven',
  owner_reason: null,
  ubscore: true,
  halted: true,
  halt_reason: 'operator: ledger reconciliation',
};
