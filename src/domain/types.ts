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

/** What a FAILED outcome carries, and what a transfer records as its error_code. */
export type FailureCode = BusinessCode | ValidationCode;

/**
 * Why a refund was refused: the withdrawal it would give back is not recorded. Never an answer
 * (a refund that cannot be applied waits for an operator), but the Funding side records it with
 * the refused operation, and UBSCore answers it.
 */
export const REFUND_WITHOUT_WITHDRAW = 'REFUND_WITHOUT_WITHDRAW';
/** What the Funding side records with a refused operation (funding_operations.code). */
export type OpRefusalCode = FailureCode | typeof REFUND_WITHOUT_WITHDRAW;

/**
 * Why an operation's outcome is unknown. Every kind is retried alike (spec 003 §5.4); the kind
 * decides only what is raised besides it (an idempotency conflict alerts an operator). `detail`
 * is for the log and the transfer's last error, never for a decision.
 */
export type PendingCause =
  /** No answer within the deadline: the operation may have been applied. */
  | { readonly kind: 'timeout'; readonly detail: string }
  /** The connection to the store broke before its answer came. */
  | { readonly kind: 'connection_lost'; readonly detail: string }
  /** The database answered an error that says nothing of the outcome (a deadlock, a unique violation). */
  | { readonly kind: 'database_error'; readonly detail: string }
  /** The same (req_id, op) is recorded with other parameters: a programmer error, never applied, never final. */
  | { readonly kind: 'idempotency_conflict'; readonly detail: string }
  /** UBSCore could not make the command's batch durable. */
  | { readonly kind: 'ubscore_unavailable'; readonly detail: string }
  /** UBSCore's WAL takes no writes (a full disk): every command is refused until it does. */
  | { readonly kind: 'wal_unwritable'; readonly detail: string }
  /** A refund was refused (`code`, when one was given): the transfer waits in COMPENSATING for an operator. */
  | { readonly kind: 'refund_refused'; readonly code: OpRefusalCode | null; readonly detail: string }
  /** An answer that does not fit the operation asked. */
  | { readonly kind: 'unexpected_answer'; readonly detail: string }
  /** The call threw. */
  | { readonly kind: 'exception'; readonly detail: string };

/** The text recorded as a transfer's last error and logged: the kind, then the detail. */
export function causeText(cause: PendingCause): string {
  return `${cause.kind.toUpperCase()}: ${cause.detail}`;
}

/**
 * The outcome of one adapter operation (spec 003 §5.3). FAILED is a definitive business
 * rejection; PENDING is every unknown (timeout, lost connection, exception, lost reply).
 */
export type OpOutcome =
  | { readonly kind: 'SUCCESS' }
  | { readonly kind: 'FAILED'; readonly code: FailureCode }
  | { readonly kind: 'PENDING'; readonly cause: PendingCause };

export const SUCCESS: OpOutcome = Object.freeze({ kind: 'SUCCESS' });

export function failed(code: FailureCode): OpOutcome {
  return { kind: 'FAILED', code };
}

export function pending(cause: PendingCause): OpOutcome {
  return { kind: 'PENDING', cause };
}
