// Amounts are bigint counts of an asset's smallest unit. Decimal strings exist only at the
// HTTP edge; this module is the one place that converts between the two. Pure.

import type { ValidationCode } from './types.js';

/** Spec 001 §1.5.3: amount <= u64::MAX / safety_factor. */
const AMOUNT_SAFETY_FACTOR = 10n;
export const U64_MAX = 2n ** 64n - 1n;
/** The largest amount one request may carry, in smallest units. */
export const AMOUNT_UNITS_MAX = U64_MAX / AMOUNT_SAFETY_FACTOR;
/** The largest balance any account may hold: PostgreSQL BIGINT. */
export const BALANCE_UNITS_MAX = 2n ** 63n - 1n;
export const PRECISION_MAX = 18;

const PLAIN_DECIMAL = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** Long enough for AMOUNT_UNITS_MAX at any precision; longer strings are refused unparsed. */
const AMOUNT_TEXT_LENGTH_MAX = 64;

type ParsedAmount = { readonly ok: true; readonly units: bigint } | { readonly ok: false; readonly code: ValidationCode };

/**
 * Parses a plain decimal string ("12.5", "0.00000001") into smallest units at `precision`.
 * Anything else (sign, exponent, hex, whitespace, empty, NaN, a non-string) is INVALID_AMOUNT.
 */
export function parseAmount(text: unknown, precision: number): ParsedAmount {
  if (!Number.isInteger(precision) || precision < 0 || precision > PRECISION_MAX) {
    throw new Error(`precision out of range: ${precision}`);
  }
  if (typeof text !== 'string') return { ok: false, code: 'INVALID_AMOUNT' };
  if (text.length === 0 || text.length > AMOUNT_TEXT_LENGTH_MAX) return refuseLong(text);
  const match = PLAIN_DECIMAL.exec(text);
  if (match === null) return { ok: false, code: 'INVALID_AMOUNT' };
  const whole = match[1] as string;
  const fraction = (match[2] ?? '.').slice(1);
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > precision) return { ok: false, code: 'PRECISION_OVERFLOW' };
  const units = BigInt(whole) * 10n ** BigInt(precision) + BigInt(significant.padEnd(precision, '0') || '0');
  if (units <= 0n) return { ok: false, code: 'INVALID_AMOUNT' };
  if (units > AMOUNT_UNITS_MAX) return { ok: false, code: 'OVERFLOW' };
  return { ok: true, units };
}

function refuseLong(text: string): ParsedAmount {
  // A long run of digits is a number too big to hold, not a malformed one.
  return text.length > 0 && /^[0-9]+(\.[0-9]+)?$/.test(text) ? { ok: false, code: 'OVERFLOW' } : { ok: false, code: 'INVALID_AMOUNT' };
}

/** Formats smallest units as a plain decimal string with exactly `precision` decimals. */
export function formatAmount(units: bigint, precision: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(precision + 1, '0');
  const whole = digits.slice(0, digits.length - precision);
  const fraction = digits.slice(digits.length - precision);
  const body = precision === 0 ? whole : `${whole}.${fraction}`;
  return negative ? `-${body}` : body;
}

/** True for a positive amount within the per-request bound: every layer re-checks this. */
export function isValidAmountUnits(units: unknown): units is bigint {
  return typeof units === 'bigint' && units > 0n && units <= AMOUNT_UNITS_MAX;
}
