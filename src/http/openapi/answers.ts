// What the routes answer, described with valibot like the requests so the OpenAPI document has
// one source. Nothing validates answers at run time: test/contract/openapi-answers.test.ts checks real
// answers against the document built from these.

import * as v from 'valibot';
import { ASSET_SYMBOL, ID_TEXT, KEY, ULID, USER_ID_TEXT } from '../../domain/checks.js';
import { STATE_NAMES, type TransferStateName } from '../../domain/fsm.js';
import { ACCOUNT_KINDS, ACCOUNT_STATUSES } from '../../domain/types.js';
import { ERROR_CODES } from '../../domain/errors.js';

const decimalText = v.pipe(v.string(), v.regex(/^(0|[1-9][0-9]*)(\.[0-9]+)?$/), v.description("Decimal string in the asset's units"));
const time = v.pipe(v.string(), v.isoTimestamp());
const reqId = v.pipe(v.string(), v.regex(ULID), v.description('Server-generated ULID'));
const userIdText = v.pipe(v.string(), v.regex(USER_ID_TEXT), v.description('User id in decimal, 1 to 2^63−1'));
const assetSymbol = v.pipe(v.string(), v.regex(ASSET_SYMBOL));
const stateName = v.picklist(STATE_NAMES as TransferStateName[]);
const accountKind = v.picklist(ACCOUNT_KINDS);
const leaseState = v.picklist(['proven', 'standing-by', 'lapsed']);
/** What a client is told (spec 001 §8.1): a final state, or PENDING while the transfer moves. */
const clientState = v.pipe(
  v.picklist(['COMMITTED', 'FAILED', 'ROLLED_BACK', 'PENDING']),
  v.description('A final state, or PENDING while the transfer is still moving; internal_state says where'),
);

export const TransferAnswer = v.object({
  transfer_id: v.pipe(v.string(), v.regex(ID_TEXT)),
  req_id: reqId,
  from: accountKind,
  to: accountKind,
  asset: assetSymbol,
  amount: decimalText,
  state: clientState,
  internal_state: v.pipe(stateName, v.description('The state of the transfer machine (spec 001 §2)')),
  message: v.string(),
  created_at: time,
  updated_at: time,
});

export const StateChange = v.object({
  from: v.nullable(stateName),
  state: stateName,
  event: v.string(),
  detail: v.nullable(v.string()),
  at: time,
});
export const TransferDetail = v.object({
  ...TransferAnswer.entries,
  error_code: v.nullable(v.picklist(ERROR_CODES)),
  history: v.array(StateChange),
});
export const HistoryPage = v.object({
  items: v.array(TransferAnswer),
  next_cursor: v.pipe(v.nullable(v.string()), v.description('The cursor of the next page; null on the last')),
});

export const BalanceLine = v.object({ asset: assetSymbol, available: decimalText, status: v.picklist(ACCOUNT_STATUSES) });
export const Balances = v.object({ funding: v.array(BalanceLine), spot: v.array(BalanceLine) });

export const MovementDone = v.object({
  ref: v.pipe(v.string(), v.regex(KEY)),
  state: v.literal('DONE'),
  duplicate: v.boolean(),
  account: accountKind,
  asset: assetSymbol,
  amount: v.string(),
});
export const MovementPending = v.object({ ref: v.pipe(v.string(), v.regex(KEY)), state: v.literal('PENDING'), message: v.string() });

export const Asset = v.object({
  symbol: assetSymbol,
  precision: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(18)),
  min_transfer_amount: v.string(),
  max_transfer_amount: v.string(),
  status: v.picklist(['ACTIVE', 'SUSPENDED']),
  internal_transfer_enabled: v.boolean(),
  daily_amount_limit: v.nullable(v.string()),
});
export const AccountStatus = v.object({
  user_id: userIdText,
  account: accountKind,
  asset: assetSymbol,
  status: v.picklist(ACCOUNT_STATUSES),
});

export const ErrorAnswer = v.object({
  code: v.pipe(v.picklist(ERROR_CODES), v.description('The error code; the status follows from it (see x-error-codes)')),
  message: v.string(),
  req_id: v.optional(
    v.pipe(
      reqId,
      v.description(
        "The transfer's req_id, on every answer after it was given one, 500 included: GET /api/v1/internal_transfer/{req_id} tells what became of it",
      ),
    ),
  ),
  original_req_id: v.optional(
    v.pipe(
      reqId,
      v.description('DUPLICATE_REQUEST: the transfer that already holds this client_order_id (nothing was recorded under req_id)'),
    ),
  ),
  state: v.optional(v.pipe(stateName, v.description('FAILED when a recorded transfer was refused by the accounts'))),
  transfer_id: v.optional(v.string()),
  ref: v.optional(v.string()),
  field: v.optional(v.pipe(v.string(), v.description('The request field at fault (admin routes)'))),
  detail: v.optional(v.string()),
  draining: v.optional(v.pipe(v.literal(true), v.description('The service is stopping'))),
  owner: v.optional(
    v.pipe(v.literal(false), v.description('OWNER_LEASE_UNPROVEN: this process cannot prove it owns the ledger now (see /readyz)')),
  ),
  lease: v.optional(v.pipe(leaseState, v.description("OWNER_LEASE_UNPROVEN: the owner lease's state"))),
});

export const Health = v.object({ status: v.literal('ok') });
const readiness = {
  postgres: v.boolean(),
  owner: v.pipe(
    v.boolean(),
    v.description('Whether this process holds the owner lock and its lease is proven; while not, it answers nothing else'),
  ),
  lease: leaseState,
  owner_reason: v.pipe(v.nullable(v.string()), v.description('Why owner is false (null while it is true)')),
  ubscore: v.boolean(),
  halted: v.boolean(),
  halt_reason: v.nullable(v.string()),
};
export const Ready = v.object({ status: v.literal('ready'), ...readiness });
export const NotReady = v.object({ code: v.literal('SERVICE_UNAVAILABLE'), message: v.string(), ...readiness });
