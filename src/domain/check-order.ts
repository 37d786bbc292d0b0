// The order in which a new transfer is checked (spec 001 §1.5.8), written once: every layer that
// checks a transfer runs the steps it can see in this order, and the first failing step answers.
// The HTTP edge (src/http/routes/transfer-routes.ts with src/http/routes/schemas.ts) runs them all, asking
// admission's halt check (src/services/admission.ts) before the body is read; the coordinator's
// shard (src/coordinator/shard.ts) runs them again from the format on, with src/domain/checks.ts
// and src/domain/asset.ts; the accounts' own refusals come last, from the adapters. The
// README's "Check order" and the tests of the order cite this list.

import type { ErrorCode } from './errors.js';

export type CheckStep = { readonly check: string; readonly codes: readonly ErrorCode[] };

export const CHECK_ORDER: readonly CheckStep[] = [
  { check: 'the bearer token', codes: ['UNAUTHORIZED'] },
  { check: 'requests per second', codes: ['RATE_LIMIT_EXCEEDED'] },
  { check: 'the service is not halted (MON-003)', codes: ['SERVICE_HALTED'] },
  { check: 'user_id, when given, is the token’s user', codes: ['FORBIDDEN'] },
  {
    check: 'the format of every field (from and to strings, amount a string, client_order_id, no unknown field)',
    codes: ['INVALID_REQUEST', 'INVALID_AMOUNT', 'PAYLOAD_TOO_LARGE'],
  },
  { check: 'the account types', codes: ['SAME_ACCOUNT', 'INVALID_ACCOUNT_TYPE', 'UNSUPPORTED_ACCOUNT_TYPE'] },
  { check: 'the asset: known, active, open to transfers', codes: ['INVALID_ASSET', 'ASSET_SUSPENDED', 'TRANSFER_NOT_ALLOWED'] },
  {
    check: 'the amount: format, precision, range',
    codes: ['INVALID_AMOUNT', 'PRECISION_OVERFLOW', 'AMOUNT_TOO_SMALL', 'AMOUNT_TOO_LARGE'],
  },
  { check: 'a client_order_id already used: the original answer, or DUPLICATE_REQUEST', codes: ['DUPLICATE_REQUEST'] },
  { check: 'the daily limits', codes: ['DAILY_LIMIT_EXCEEDED', 'DAILY_AMOUNT_EXCEEDED'] },
  {
    check: 'the accounts (the transfer exists: FAILED with its req_id)',
    codes: [
      'TARGET_ACCOUNT_NOT_FOUND',
      'SOURCE_ACCOUNT_NOT_FOUND',
      'INSUFFICIENT_BALANCE',
      'ACCOUNT_FROZEN',
      'ACCOUNT_DISABLED',
      'OVERFLOW',
      'CONSTRAINT_VIOLATION',
    ],
  },
];

/** The first step whose codes hold `code` (0-based), or -1. */
export function stepOf(code: ErrorCode): number {
  return CHECK_ORDER.findIndex((s) => s.codes.includes(code));
}
