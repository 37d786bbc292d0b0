// Proves every error code has its status and message, that the answers' OpenAPI document lists exactly ERROR_CODES, and that a code read back from the database or another thread is checked where it enters.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { opAnswer } from '../src/db/transfer-writes.js';
import { API_CODES, ERROR_CODES, mustErrorCode } from '../src/domain/errors.js';
import { BUSINESS_CODES, VALIDATION_CODES } from '../src/domain/types.js';
import { errorBody, statusOf } from '../src/http/errors.js';
import { openApiDocument } from '../src/http/openapi/document.js';

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

test('a code read back that this service never writes stops where it enters', () => {
  assert.is(mustErrorCode('INSUFFICIENT_BALANCE', 'a row'), 'INSUFFICIENT_BALANCE');
  assert.throws(() => mustErrorCode('insufficient balance', 'a row'), /unknown error code/);
  assert.equal(opAnswer('REJECTED', 'REFUND_WITHOUT_WITHDRAW', 'a row'), { outcome: 'REJECTED', code: 'REFUND_WITHOUT_WITHDRAW' });
  assert.throws(() => opAnswer('REJECTED', 'NOT_A_CODE', 'a row'), /unknown refusal code/);
  assert.throws(() => opAnswer('REJECTED', null, 'a row'), /without a code/);
  assert.throws(() => opAnswer('MAYBE', null, 'a row'), /answered outcome MAYBE/);
});

test.run();
