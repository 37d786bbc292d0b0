// Examples of the operator routes' answers, copied from a running service like openapi-examples.ts.

import { transferDetail } from './openapi-examples.js';

const REQ_ID = transferDetail.req_id;
const AT = '2026-11-24T03:41:07.512Z';

export const alerts = {
  alerts: [{ id: '3', kind: 'TRANSFER_STUCK', severity: 'CRITICAL', req_id: REQ_ID, user_id: '42', message: 'transfer needs an operator', details: { state: 'TARGET_PENDING', retry_count: 12 }, created_at: AT }],
  conditions: [{ kind: 'TRANSFER_BACKLOG', severity: 'WARNING', firing: false, value: 0, threshold: 1000, since: null }],
};

export const adminTransfers = {
  transfers: [
    {
      req_id: REQ_ID,
      transfer_id: '17',
      user_id: '42',
      client_order_id: 'order-1001',
      from: 'FUNDING',
      to: 'SPOT',
      asset: 'USDT',
      amount: '25.5',
      amount_units: '25500000',
      state: 'COMMITTED',
      retry_count: 0,
      error_code: null,
      last_error: null,
      created_at: AT,
      updated_at: AT,
      history: transferDetail.history,
    },
  ],
};

export const retry = { req_id: REQ_ID, state: 'COMMITTED', retry_count: 0, error_code: null, history: transferDetail.history };

export const invariant = { ok: true, checked_at: AT, wal_seq: 12, accounts_checked: 4, transfers_examined: 3, in_flight_units: {}, differences: [], halted: false, halt_reason: null };

export const haltRequest = { reason: 'ledger reconciliation' };
export const halt = { halted: true, was_halted: false, reason: 'operator: ledger reconciliation', since: AT };
export const resume = { halted: false, was_halted: true, previous_reason: 'operator: ledger reconciliation' };

export const auditPage = {
  items: [{ id: '5', at: AT, operator: 'ops-alice', action: 'deposit', target: { user_id: '42', account: 'FUNDING', asset: 'USDT', ref: 'dep-42-0001' }, parameters: { user_id: '42', account: 'FUNDING', asset: 'USDT', amount: '100', ref: 'dep-42-0001' }, status: 200, outcome: 'ok', req_id: null }],
  next_cursor: null,
};

export const overview = {
  now: { window_s: 60, requests: 3, accepted: 3, transfers_per_s: '0.1', p99_ms: 25, p99_above_max: false },
  unfinished_by_state: { INIT: 0, SOURCE_PENDING: 0, SOURCE_DONE: 0, TARGET_PENDING: 0, COMPENSATING: 0 },
  in_flight: [],
  wal_seq: 12,
  halt: { halted: false, reason: null, since: null },
  last_check: { checked_at: AT, ok: true, wal_seq: 12, differences: [] },
};
