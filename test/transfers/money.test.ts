// Proves amounts parse from plain decimal strings to exact bigint smallest units, and everything else is refused with the spec's code.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AMOUNT_UNITS_MAX, formatAmount, parseAmount } from '../../src/domain/money.js';

const ROWS: ReadonlyArray<readonly [unknown, number, bigint | string]> = [
  ['1', 8, 100000000n],
  ['0.00000001', 8, 1n],
  ['100.00', 8, 10000000000n],
  ['12.5', 2, 1250n],
  ['7', 0, 7n],
  ['1.10000000000', 8, 110000000n],
  ['0', 8, 'INVALID_AMOUNT'],
  ['0.00000000', 8, 'INVALID_AMOUNT'],
  ['-100', 8, 'INVALID_AMOUNT'],
  ['', 8, 'INVALID_AMOUNT'],
  [' 1', 8, 'INVALID_AMOUNT'],
  ['1 ', 8, 'INVALID_AMOUNT'],
  ['1e5', 8, 'INVALID_AMOUNT'],
  ['0x10', 8, 'INVALID_AMOUNT'],
  ['NaN', 8, 'INVALID_AMOUNT'],
  ['Infinity', 8, 'INVALID_AMOUNT'],
  ['01', 8, 'INVALID_AMOUNT'],
  ['1.', 8, 'INVALID_AMOUNT'],
  ['.5', 8, 'INVALID_AMOUNT'],
  ['+1', 8, 'INVALID_AMOUNT'],
  ['1,5', 8, 'INVALID_AMOUNT'],
  [100, 8, 'INVALID_AMOUNT'],
  [null, 8, 'INVALID_AMOUNT'],
  [['1'], 8, 'INVALID_AMOUNT'],
  ['0.000000001', 8, 'PRECISION_OVERFLOW'],
  ['18446744073709551616', 0, 'OVERFLOW'],
  ['184467440737.09551616', 8, 'OVERFLOW'],
  ['9'.repeat(80), 8, 'OVERFLOW'],
];

test('table: text and precision → units or code', () => {
  for (const [text, precision, expected] of ROWS) {
    const result = parseAmount(text, precision);
    if (typeof expected === 'bigint') assert.equal(result, { ok: true, units: expected }, JSON.stringify(text));
    else assert.equal(result, { ok: false, code: expected }, JSON.stringify(text));
  }
});

test('the largest accepted amount is u64::MAX / 10, and it fits PostgreSQL BIGINT', () => {
  assert.equal(parseAmount(AMOUNT_UNITS_MAX.toString(), 0), { ok: true, units: AMOUNT_UNITS_MAX });
  assert.equal(parseAmount((AMOUNT_UNITS_MAX + 1n).toString(), 0), { ok: false, code: 'OVERFLOW' });
  assert.ok(AMOUNT_UNITS_MAX < 2n ** 63n);
});

test('format is the exact inverse of parse', () => {
  for (const units of [1n, 10n, 100000000n, 123456789012345n, AMOUNT_UNITS_MAX]) {
    const text = formatAmount(units, 8);
    assert.equal(parseAmount(text, 8), { ok: true, units });
  }
  assert.is(formatAmount(1n, 8), '0.00000001');
  assert.is(formatAmount(150n, 2), '1.50');
  assert.is(formatAmount(7n, 0), '7');
});

test.run();
