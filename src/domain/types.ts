// Domain vocabulary shared by every layer: account kinds, result codes and outcomes.
// Pure types and constants only; nothing here performs I/O.

export const ACCOUNT_KINDS = ['FUNDING', 'SPOT'] as const;
export type AccountKind = (typeof ACCOUNT_KINDS)[number];

/** Account kinds named by spec 001 §8.1 that exist but are not launched. */
export const FUTURE_ACCOUNT_KINDS = ['FUTURE', 'MARGIN'] as const;

export const ACCOUNT_STATUSES = ['ACTIVE', 'FROZEN', 'DISABLED'] as const;
export type AccountStatus = (typeof ACCOUNT_STATUSES)[number];

/** The operations an adapter offers, each idempotent per (req_id, op). */
export const TRANSFER_OPS = ['WITHDRAW', 'DEPOSIT', 'REFUND'] as const;
export type TransferOp = (typeof TRANSFER_OPS)[number];

/**
 * Business rejections: the only outcomes that may move a transfer to FAILED or COMPENSATING.
 * Names are the spec's error codes (001 §1.5).
 */
export const BUSINESS_CODES = [
  'INSUFFICIENT_BALANCE',
  'ACCOUNT_FROZEN',
  'ACCOUNT_DISABLED',
  'ASSET_SUSPENDED',
  'TRANSFER_NOT_ALLOWED',
  'SOURCE_ACCOUNT_NOT_FOUND',
  'TARGET_ACCOUNT_NOT_FOUND',
  /**
   * PostgreSQL refused the Funding operation's own row with a constraint (spec 001 §4.1, "DB
   * constraint" is an explicit failure): its transaction rolled back, so nothing was applied.
   */
  'CONSTRAINT_VIOLATION',
] as const;
export type BusinessCode = (typeof BUSINESS_CODES)[number];

/** Request and validation codes: refused before any state exists. */
export const VALIDATION_CODES = [
  'INVALID_REQUEST',
  'INVALID_ACCOUNT_TYPE',
  'UNSUPPORTED_ACCOUNT_TYPE',
  'SAME_ACCOUNT',
  'INVALID_AMOUNT',
  'PRECISION_OVERFLOW',
  'AMOUNT_TOO_SMALL',
  'AMOUNT_TOO_LARGE',
  'OVERFLOW',
  'INVALID_ASSET',
  'INVALID_USER',
] as const;
export type ValidationCode = (typeof VALIDATION_CODES)[number];

export function isBusinessCode(code: string): code is BusinessCode {
  return (BUSINESS_CODES as readonly string[]).includes(code);
}

/**
 * The outcome of one adapter operation (spec 003 §5.3). FAILED is a definitive business
 * rejection; PENDING is every unknown (timeout, lost connection, exception, lost reply).
 */
export type OpOutcome =
  | { readonly kind: 'SUCCESS' }
  | { readonly kind: 'FAILED'; readonly code: BusinessCode | ValidationCode }
  | { readonly kind: 'PENDING'; readonly reason: string };

export const SUCCESS: OpOutcome = Object.freeze({ kind: 'SUCCESS' });

export function failed(code: BusinessCode | ValidationCode): OpOutcome {
  return { kind: 'FAILED', code };
}

export function pending(reason: string): OpOutcome {
  return { kind: 'PENDING', reason };
}
