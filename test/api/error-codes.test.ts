// Proves every error code has its status and message, that the answers' OpenAPI document lists exactly ERROR_CODES, that every code is classified a refusal (the user's or a limit's) or the service's own exactly as REFUSAL_CODES says, and that a code read back from the database or another thread is checked where it enters.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { opAnswer } from '../../src/db/transfer-writes.js';
import { metSystemFailure } from '../../src/coordinator/transfer-metrics.js';
import { API_CODES, ERROR_CODES, type ErrorCode, isRefusal, mustErrorCode, REFUSAL_CODES } from '../../src/domain/errors.js';
import { BUSINESS_CODES, VALIDATION_CODES } from '../../src/domain/types.js';
import { errorBody, statusOf } from '../../src/http/errors.js';
import { openApiDocument } from '../../src/http/openapi/document.js';

type Json = Record<string, unknown>;

test('every code has a status of its family and a message of its own', () => {
  const problems: string[] = [];
  for (const code of ERROR_CODES) {
    const status = statusOf(code);
    const body = errorBody(code);
    if (!Number.isInteger(status) || status < 400 || status > 599) problems.push(`${code}: status ${status}`);
    if (typeof body.message !== 'string' || body.message === '' || body.message === code) problems.push(`${code}: message ${body.message}`);
    if (body.code !== code) problems.push(`${code}: body code ${body.code}`);
  }
  assert.equal(problems, []);
  for (const code of VALIDATION_CODES) assert.is(statusOf(code), 400, code);
  for (const code of BUSINESS_CODES) assert.is(statusOf(code), 422, code);
});

test('ERROR_CODES is the validation, business and API codes, each once', () => {
  assert.equal([...ERROR_CODES].sort(), [...VALIDATION_CODES, ...BUSINESS_CODES, ...API_CODES].sort());
  assert.is(new Set(ERROR_CODES).size, ERROR_CODES.length);
});

test("the OpenAPI document's error enum and its code table list exactly ERROR_CODES", () => {
  const doc = openApiDocument();
  const schemas = (doc.components as Json).schemas as Record<string, Json>;
  const code = ((schemas.ErrorAnswer as Json).properties as Record<string, Json>).code as Json;
  assert.equal([...(code.enum as string[])].sort(), [...ERROR_CODES].sort());
  const table = doc['x-error-codes'] as { code: string; status: number }[];
  assert.equal(table.map((row) => row.code).sort(), [...ERROR_CODES].sort());
  for (const row of table) assert.is(row.status, statusOf(row.code as (typeof ERROR_CODES)[number]), row.code);
});

/**
 * Each code's class, written out here rather than derived: a code added to ErrorCode fails to
 * compile until it is classified, and a code moved into or out of REFUSAL_CODES fails below.
 */
const CLASS_OF: Record<ErrorCode, 'refusal' | 'service'> = {
  INVALID_REQUEST: 'refusal',
  INVALID_ACCOUNT_TYPE: 'refusal',
  UNSUPPORTED_ACCOUNT_TYPE: 'refusal',
  SAME_ACCOUNT: 'refusal',
  INVALID_AMOUNT: 'refusal',
  PRECISION_OVERFLOW: 'refusal',
  AMOUNT_TOO_SMALL: 'refusal',
  AMOUNT_TOO_LARGE: 'refusal',
  OVERFLOW: 'refusal',
  INVALID_ASSET: 'refusal',
  INVALID_USER: 'refusal',
  INSUFFICIENT_BALANCE: 'refusal',
  ACCOUNT_FROZEN: 'refusal',
  ACCOUNT_DISABLED: 'refusal',
  ASSET_SUSPENDED: 'refusal',
  TRANSFER_NOT_ALLOWED: 'refusal',
  SOURCE_ACCOUNT_NOT_FOUND: 'refusal',
  TARGET_ACCOUNT_NOT_FOUND: 'refusal',
  CONSTRAINT_VIOLATION: 'service',
  UNAUTHORIZED: 'refusal',
  FORBIDDEN: 'refusal',
  NOT_FOUND: 'refusal',
  DUPLICATE_REQUEST: 'refusal',
  PAYLOAD_TOO_LARGE: 'refusal',
  RATE_LIMIT_EXCEEDED: 'refusal',
  DAILY_LIMIT_EXCEEDED: 'refusal',
  DAILY_AMOUNT_EXCEEDED: 'refusal',
  SERVICE_UNAVAILABLE: 'service',
  SERVICE_HALTED: 'service',
  OWNER_LEASE_UNPROVEN: 'service',
  BACKUP_TARGET_NOT_EMPTY: 'service',
  BACKUP_IN_PROGRESS: 'service',
  BACKUP_FAILED: 'service',
  SYSTEM_ERROR: 'service',
};

test("every code is a user's or a limit's refusal exactly when REFUSAL_CODES lists it, and HIGH_FAILURE_RATE counts a transfer ended with it accordingly", () => {
  const refusals = new Set<string>(REFUSAL_CODES);
  assert.is(refusals.size, REFUSAL_CODES.length, 'each once');
  const wrong: string[] = [];
  for (const code of ERROR_CODES) {
    const refusal = CLASS_OF[code] === 'refusal';
    if (refusals.has(code) !== refusal) wrong.push(`${code}: listed ${refusals.has(code)}, is a refusal ${refusal}`);
    if (isRefusal(code) !== refusal) wrong.push(`${code}: isRefusal ${isRefusal(code)}`);
    // Ended FAILED at its first step with no retry: a failure of the service only when not a refusal.
    if (metSystemFailure({ retryCount: 0 }, 'FAILED', code) === refusal) wrong.push(`${code}: HIGH_FAILURE_RATE counts it wrongly`);
  }
  assert.equal(wrong, []);
  assert.equal(Object.keys(CLASS_OF).sort(), [...ERROR_CODES].sort(), 'the table walks every code');
});

test('a code read back that this service never writes stops where it enters', () => {
  assert.is(mustErrorCode('INSUFFICIENT_BALANCE', 'a row'), 'INSUFFICIENT_BALANCE');
  assert.throws(() => mustErrorCode('insufficient balance', 'a row'), /unknown error code/);
  assert.equal(opAnswer('REJECTED', 'REFUND_WITHOUT_WITHDRAW', 'a row'), { outcome: 'REJECTED', code: 'REFUND_WITHOUT_WITHDRAW' });
  assert.throws(() => opAnswer('REJECTED', 'NOT_A_CODE', 'a row'), /unknown refusal code/);
  assert.throws(() => opAnswer('REJECTED', null, 'a row'), /without a code/);
  assert.throws(() => opAnswer('MAYBE', null, 'a row'), /answered outcome MAYBE/);
});

test.run();
