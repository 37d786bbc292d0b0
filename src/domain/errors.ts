// Every code an answer can carry: the request checks' codes, the business rejections, and the
// codes of the API itself. One union from the domain to the HTTP answer, and the guards that
// check a code read back from PostgreSQL or from another thread once, where it enters.

import {
  BUSINESS_CODES,
  isBusinessCode,
  type OpRefusalCode,
  REFUND_WITHOUT_WITHDRAW,
  VALIDATION_CODES,
  type BusinessCode,
  type ValidationCode,
} from './types.js';

/** Codes of the API itself: authentication, limits, availability, operator actions. */
export const API_CODES = [
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'DUPLICATE_REQUEST',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMIT_EXCEEDED',
  'DAILY_LIMIT_EXCEEDED',
  'DAILY_AMOUNT_EXCEEDED',
  'SERVICE_UNAVAILABLE',
  'SERVICE_HALTED',
  'OWNER_LEASE_UNPROVEN',
  'BACKUP_TARGET_NOT_EMPTY',
  'BACKUP_IN_PROGRESS',
  'BACKUP_FAILED',
  'SYSTEM_ERROR',
] as const;
type ApiCode = (typeof API_CODES)[number];

export type ErrorCode = ValidationCode | BusinessCode | ApiCode;

/** Every code an answer can carry, for the status and message tables, the OpenAPI document and docs/api.md. */
export const ERROR_CODES: readonly ErrorCode[] = [...VALIDATION_CODES, ...BUSINESS_CODES, ...API_CODES];

const ERROR_CODE_SET: ReadonlySet<string> = new Set(ERROR_CODES);
const FAILURE_CODE_SET: ReadonlySet<string> = new Set([...VALIDATION_CODES, ...BUSINESS_CODES]);

/**
 * Every code that is a refusal for the user's own reasons or a limit's, never a failure of the
 * service: a request out of bounds or not allowed (the validation codes, authentication, a body
 * too large, a client_order_id used for another request), the user's own state (a balance too
 * low, an account frozen, disabled or missing), the asset's settings an operator chose, and the
 * limits (the request rate and the daily count and amount, which also end a transfer parked in
 * INIT that the limits refuse at its first step). Every other code is the service's own:
 * CONSTRAINT_VIOLATION is the ledger refusing a row the service's own checks let through, and the
 * halt, unavailability, the backups and SYSTEM_ERROR are the service's state. HIGH_FAILURE_RATE's
 * refusal set is this list; test/api/error-codes.test.ts classifies every code against it.
 */
export const REFUSAL_CODES = [
  ...VALIDATION_CODES,
  'INSUFFICIENT_BALANCE',
  'ACCOUNT_FROZEN',
  'ACCOUNT_DISABLED',
  'ASSET_SUSPENDED',
  'TRANSFER_NOT_ALLOWED',
  'SOURCE_ACCOUNT_NOT_FOUND',
  'TARGET_ACCOUNT_NOT_FOUND',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'NOT_FOUND',
  'DUPLICATE_REQUEST',
  'PAYLOAD_TOO_LARGE',
  'RATE_LIMIT_EXCEEDED',
  'DAILY_LIMIT_EXCEEDED',
  'DAILY_AMOUNT_EXCEEDED',
] as const satisfies readonly ErrorCode[];

const REFUSAL_CODE_SET: ReadonlySet<string> = new Set(REFUSAL_CODES);

/** Whether a transfer that ended FAILED or ROLLED_BACK with `code` was refused for the user's own reasons or a limit's. */
export function isRefusal(code: ErrorCode | null): boolean {
  return code !== null && REFUSAL_CODE_SET.has(code);
}

export function isErrorCode(code: string): code is ErrorCode {
  return ERROR_CODE_SET.has(code);
}

/**
 * A code read back where it enters (a row, a thread's message). Only this code writes codes
 * there, so an unknown one is a programmer error: it stops here instead of travelling on as text.
 */
export function mustErrorCode(code: string, where: string): ErrorCode {
  if (!isErrorCode(code)) throw new Error(`unknown error code ${JSON.stringify(code)} in ${where}`);
  return code;
}

/** A business refusal's code read back (e.g. from funding_refusal), checked where it is read. */
export function mustBusinessCode(code: string, where: string): BusinessCode {
  if (!isBusinessCode(code)) throw new Error(`unknown business code ${JSON.stringify(code)} in ${where}`);
  return code;
}

/** A refused operation's recorded code (funding_operations.code), checked where it is read. */
export function mustOpRefusalCode(code: string, where: string): OpRefusalCode {
  if (code === REFUND_WITHOUT_WITHDRAW || FAILURE_CODE_SET.has(code)) return code as OpRefusalCode;
  throw new Error(`unknown refusal code ${JSON.stringify(code)} in ${where}`);
}
