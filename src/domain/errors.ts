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
 * The codes of a user's own refusals: a request out of bounds, the user's own state (a balance too
 * low, an account frozen, disabled or missing) or the asset's settings an operator chose. Every
 * other code ending a transfer is a failure of the service: CONSTRAINT_VIOLATION is the ledger
 * refusing a row the service's own checks let through.
 */
const REFUSAL_CODE_SET: ReadonlySet<string> = new Set(
  [...VALIDATION_CODES, ...BUSINESS_CODES].filter((code) => code !== 'CONSTRAINT_VIOLATION'),
);

/** Whether a transfer that ended FAILED or ROLLED_BACK with `code` was refused for the user's own reasons. */
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
