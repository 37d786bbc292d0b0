// Examples of the operator routes' answers, copied from a running service like examples.ts.

import { transferDetail } from './examples.js';

const REQ_ID = transferDetail.req_id;
const AT = '2026-11-24T03:29:37.952Z';

export const alerts = {
  alerts: [],
  conditions: [
    { kind: 'TRANSFER_BACKLOG', severity: 'WARNING', firing: false, value: 0, threshold: 100, since: null },
    { kind: 'HIGH_FAILURE_RATE', severity: 'ERROR', firing: false, value: 0, threshold: 10, since: null },
  ],
};

export const adminTransfers = {
  transfers: [
    {
      req_id: REQ_ID,
      transfer_id: '1',
      user_id: '42',
      client_order_id: 'order-1001',
      from: 'FUNDING',
      to: 'SPOT',
      asset: 'USDT',
      amount: '25.500000',
      amount_units: '25500000',
      state: 'COMMITTED',
      retry_count: 0,
      error_code: null,
      last_error: null,
      advice: null,
      created_at: transferDetail.created_at,
      updated_at: transferDetail.updated_at,
      history: transferDetail.history,
    },
  ],
};

export const retry = { req_id: REQ_ID, state: 'COMMITTED', retry_count: 0, error_code: null, history: transferDetail.history };

export const invariant = {
  ok: true,
  checked_at: AT,
  wal_seq: 5,
  accounts_checked: 1,
  transfers_examined: 0,
  in_flight_units: {},
  differences: [],
  halted: false,
  halt_reason: null,
};

export const haltRequest = { reason: 'ledger reconciliation' };
export const halt = {
  halted: true,
  was_halted: false,
  reason: 'operator: ledger reconciliation',
  since: '2026-11-24T03:29:37.981Z',
  shards_not_holding: [],
};
export const resume = { halted: false, was_halted: true, previous_reason: 'operator: ledger reconciliation', shards_not_holding: [] };

export const auditPage = {
  items: [
    {
      id: '10',
      at: AT,
      operator: 'ops-alice',
      action: 'transfer.retry',
      target: { req_id: REQ_ID },
      parameters: {},
      status: 200,
      outcome: 'ok',
      req_id: REQ_ID,
    },
    {
      id: '9',
      at: AT,
      operator: 'ops-alice',
      action: 'account.status',
      target: { asset: 'USDT', account: 'FUNDING', user_id: '999999' },
      parameters: { asset: 'USDT', status: 'FROZEN', account: 'FUNDING', user_id: '999999' },
      status: 404,
      outcome: 'NOT_FOUND',
      req_id: null,
    },
  ],
  next_cursor: 'YTE6OQ',
};

export const overview = {
  now: { window_s: 60, requests: 5, accepted: 2, transfers_per_s: '0.0', p99_ms: 25, p99_above_max: false },
  unfinished_by_state: { INIT: 0, SOURCE_PENDING: 0, SOURCE_DONE: 0, TARGET_PENDING: 0, COMPENSATING: 0 },
  in_flight: [],
  wal_seq: 5,
  halt: { halted: false, reason: null, since: null },
  last_check: { checked_at: AT, ok: true, wal_seq: 5, differences: [] },
};

export const ownership = {
  role: 'primary',
  promoted: true,
  epoch: 4,
  lease: { state: 'proven', left_ms: 1712 },
  ledger_owner: { epoch: 4, owner: 'transfer-4121-a1b2c3@node-b', promoted_at: AT, lease_until: '2026-11-24T03:30:02.118Z' },
  spot_log: { last_seq: 5, archived_through_seq: 0, bytes: { spot_log: 49152, spot_snapshots: 24576, spot_processed: 16384 } },
};

export const backupRequest = { dir: '/var/backups/transfer/2026-11-24T03-30' };
export const backup = {
  dir: '/var/backups/transfer/2026-11-24T03-30',
  ledger_id: '5b0f3c1e-2d4a-4f6b-9a7e-1c2d3e4f5a6b',
  wal_seq: 5,
  pg_snapshot: '00000003-0000001A-1',
  pause_ms: 37,
  ubscore_bytes: 126976,
  tables: {
    assets: 3,
    funding_balances: 1,
    transfers_tb: 2,
    transfers_active: 0,
    transfer_state_history: 7,
    funding_operations: 2,
    external_movements: 2,
    alerts: 0,
    admin_audit: 3,
  },
};
