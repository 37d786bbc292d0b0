// One error shape for every answer that is not a success: {"code","message"} plus req_id and
// state where a transfer exists. The status follows from the code alone.

import type { Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { ErrorCode } from '../domain/errors.js';

/** The status of each code; a code missing here does not compile. */
const STATUS_BY_CODE: Readonly<Record<ErrorCode, ContentfulStatusCode>> = {
  INVALID_REQUEST: 400,
  INVALID_ACCOUNT_TYPE: 400,
  UNSUPPORTED_ACCOUNT_TYPE: 400,
  SAME_ACCOUNT: 400,
  INVALID_AMOUNT: 400,
  PRECISION_OVERFLOW: 400,
  AMOUNT_TOO_SMALL: 400,
  AMOUNT_TOO_LARGE: 400,
  OVERFLOW: 400,
  INVALID_ASSET: 400,
  INVALID_USER: 400,
  INSUFFICIENT_BALANCE: 422,
  ACCOUNT_FROZEN: 422,
  ACCOUNT_DISABLED: 422,
  ASSET_SUSPENDED: 422,
  TRANSFER_NOT_ALLOWED: 422,
  SOURCE_ACCOUNT_NOT_FOUND: 422,
  TARGET_ACCOUNT_NOT_FOUND: 422,
  CONSTRAINT_VIOLATION: 422,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  DUPLICATE_REQUEST: 409,
  PAYLOAD_TOO_LARGE: 413,
  RATE_LIMIT_EXCEEDED: 429,
  DAILY_LIMIT_EXCEEDED: 429,
  DAILY_AMOUNT_EXCEEDED: 429,
  SERVICE_UNAVAILABLE: 503,
  SERVICE_HALTED: 503,
  OWNER_LEASE_UNPROVEN: 503,
  BACKUP_TARGET_NOT_EMPTY: 409,
  BACKUP_IN_PROGRESS: 409,
  BACKUP_FAILED: 500,
  SYSTEM_ERROR: 500,
};

/** The message of each code; a code missing here does not compile. */
const MESSAGES: Readonly<Record<ErrorCode, string>> = {
  UNAUTHORIZED: 'A valid bearer token is required',
  FORBIDDEN: 'Not allowed for this user',
  NOT_FOUND: 'No such resource',
  DUPLICATE_REQUEST: 'client_order_id was already used with a different request',
  PAYLOAD_TOO_LARGE: 'Request body too large',
  INVALID_REQUEST: 'The request is malformed',
  INVALID_ACCOUNT_TYPE: 'from and to must be FUNDING or SPOT',
  UNSUPPORTED_ACCOUNT_TYPE: 'That account type is not supported yet',
  SAME_ACCOUNT: 'from and to must differ',
  INVALID_AMOUNT: 'amount must be a positive plain decimal string',
  PRECISION_OVERFLOW: 'amount has more decimals than the asset allows',
  AMOUNT_TOO_SMALL: 'amount is below the asset minimum',
  AMOUNT_TOO_LARGE: 'amount is above the asset maximum',
  OVERFLOW: 'amount is too large',
  INVALID_ASSET: 'Unknown asset',
  INVALID_USER: 'Invalid user id',
  INSUFFICIENT_BALANCE: 'Source balance is insufficient',
  ACCOUNT_FROZEN: 'Source account is frozen',
  ACCOUNT_DISABLED: 'Source account is disabled',
  ASSET_SUSPENDED: 'Asset is suspended',
  TRANSFER_NOT_ALLOWED: 'Internal transfers are not allowed for this asset',
  SOURCE_ACCOUNT_NOT_FOUND: 'Source account does not exist',
  TARGET_ACCOUNT_NOT_FOUND: 'Target account does not exist',
  CONSTRAINT_VIOLATION: 'The FUNDING ledger refused the operation (a database constraint); nothing was applied',
  SERVICE_UNAVAILABLE: 'The service is not ready or is overloaded; retry later',
  SERVICE_HALTED:
    'The service is halted (a fund conservation check failed, or an operator halted it): new transfers and external movements are refused until an operator resumes',
  OWNER_LEASE_UNPROVEN:
    'This process cannot prove it still owns the ledger (its owner lease is not renewed, its owner lock is not held, or another process took the ledger over): it answers nothing until it can; retry, or ask the owner',
  RATE_LIMIT_EXCEEDED: 'Too many requests this second',
  DAILY_LIMIT_EXCEEDED: 'Daily transfer count reached',
  DAILY_AMOUNT_EXCEEDED: 'Daily transfer amount for this asset reached',
  SYSTEM_ERROR: 'Internal failure; retry later',
  BACKUP_TARGET_NOT_EMPTY: 'The backup directory exists and is not empty',
  BACKUP_IN_PROGRESS: 'Another backup is running',
  BACKUP_FAILED: 'The backup did not complete; nothing usable was left in the directory',
};

export function statusOf(code: ErrorCode): ContentfulStatusCode {
  return STATUS_BY_CODE[code];
}

export function errorBody(code: ErrorCode, extra: Readonly<Record<string, unknown>> = {}): Record<string, unknown> {
  return { code, message: MESSAGES[code], ...extra };
}

export function fail(c: Context, code: ErrorCode, extra: Readonly<Record<string, unknown>> = {}): Response {
  return c.json(errorBody(code, extra), statusOf(code));
}
