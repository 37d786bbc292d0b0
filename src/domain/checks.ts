// Input checks every layer re-runs on its own (spec 001 §1.5: defense in depth). Each returns
// the first failing code, or null; none throws for a bad request.

import { isValidAmountUnits, AMOUNT_UNITS_MAX } from './money.js';
import { ACCOUNT_KINDS, type AccountKind, type ValidationCode } from './types.js';

export const USER_ID_MAX = 2n ** 63n - 1n;
/**
 * The patterns of the edge's identifiers, defined here once: the checks below, the request and
 * answer schemas, the console's search and the OpenAPI document all use these.
 */
export const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
export const ASSET_LENGTH_MAX = 16;
export const ASSET_SYMBOL = new RegExp(`^[A-Z0-9]{1,${ASSET_LENGTH_MAX}}$`);
/** A client_order_id, an external ref, or any key of an idempotent operation. */
export const KEY_LENGTH_MAX = 64;
export const KEY = new RegExp(`^[A-Za-z0-9_-]{1,${KEY_LENGTH_MAX}}$`);
/** A positive 64-bit id as text (a user id, a transfer id): decimal, no sign, no leading zero, at most 19 digits. */
export const ID_TEXT = /^[1-9][0-9]{0,18}$/;

export function isUserId(value: unknown): value is bigint {
  return typeof value === 'bigint' && value > 0n && value <= USER_ID_MAX;
}

/** A user id as text at the edge. */
export const USER_ID_TEXT = ID_TEXT;

/** The user id a decimal text names (1 to 2^63−1), or null when it names none. */
export function parseUserId(text: string): bigint | null {
  if (!USER_ID_TEXT.test(text)) return null;
  const id = BigInt(text);
  return isUserId(id) ? id : null;
}

export function isReqId(value: unknown): value is string {
  return typeof value === 'string' && ULID.test(value);
}

export function isAssetSymbol(value: unknown): value is string {
  return typeof value === 'string' && ASSET_SYMBOL.test(value);
}

export function isClientOrderId(value: unknown): value is string {
  return typeof value === 'string' && KEY.test(value);
}

/** The key of an idempotent operation: a req_id or an external ref. */
export function isOpKey(value: unknown): value is string {
  return typeof value === 'string' && KEY.test(value);
}

function isAccountKind(value: unknown): value is AccountKind {
  return typeof value === 'string' && (ACCOUNT_KINDS as readonly string[]).includes(value);
}

function amountCode(amount: unknown): ValidationCode | null {
  if (typeof amount === 'bigint' && amount > AMOUNT_UNITS_MAX) return 'OVERFLOW';
  return isValidAmountUnits(amount) ? null : 'INVALID_AMOUNT';
}

/** What an adapter checks before touching its store. */
export function checkOpRequest(req: { reqId: unknown; userId: unknown; asset: unknown; amount: unknown }): ValidationCode | null {
  if (!isReqId(req.reqId)) return 'INVALID_REQUEST';
  if (!isUserId(req.userId)) return 'INVALID_USER';
  if (!isAssetSymbol(req.asset)) return 'INVALID_ASSET';
  return amountCode(req.amount);
}

/** What the coordinator checks before it creates a transfer, in spec 001 §1.5.8 order. */
export function checkNewTransfer(t: {
  reqId: unknown;
  userId: unknown;
  from: unknown;
  to: unknown;
  asset: unknown;
  amount: unknown;
  clientOrderId: unknown;
}): ValidationCode | null {
  if (!isReqId(t.reqId)) return 'INVALID_REQUEST';
  if (!isUserId(t.userId)) return 'INVALID_USER';
  if (t.clientOrderId !== null && !isClientOrderId(t.clientOrderId)) return 'INVALID_REQUEST';
  if (t.from === t.to) return 'SAME_ACCOUNT';
  if (!isAccountKind(t.from) || !isAccountKind(t.to)) return 'INVALID_ACCOUNT_TYPE';
  if (!isAssetSymbol(t.asset)) return 'INVALID_ASSET';
  return amountCode(t.amount);
}
