// Proves the route tables (test/contract/route-rows-*.ts) leave no operation of the OpenAPI
// document and no error code without a row, except the codes listed below that no request alone
// can produce. Each row asserts its code in routes-api and routes-admin, so a row here is a code seen.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ERROR_CODES } from '../../src/domain/errors.js';
import { openApiDocument } from '../../src/http/openapi/document.js';
import { ADMIN_ROWS } from './route-rows-admin.js';
import { API_ROWS } from './route-rows-api.js';
import { operationsWithoutRow, type Unreachable } from './route-table.js';

/** The codes no request can be answered with on a sound service, and where a test reaches each. */
const UNREACHABLE: readonly Unreachable[] = [
  {
    code: 'SYSTEM_ERROR',
    why: 'needs a fault: a route that throws, or a shard that cannot record the transfer (test/transfers/transfer-flow.test.ts drops transfer_apply)',
  },
  {
    code: 'CONSTRAINT_VIOLATION',
    why: "needs a database constraint the service's own checks do not know (test/transfers/limits-and-constraints.test.ts adds one)",
  },
  {
    code: 'OWNER_LEASE_UNPROVEN',
    why: 'needs an owner lease not proven, or another process that claimed the epoch (test/ownership/owner-gate.test.ts, test/ownership/owner-fence.test.ts)',
  },
];

const ROWS = [...API_ROWS, ...ADMIN_ROWS];

test('every operation of the OpenAPI document has a row', () => {
  assert.equal(operationsWithoutRow(openApiDocument(), ROWS), []);
});

test('every error code has a row, or is listed as unreachable with the reason', () => {
  const covered = new Set(ROWS.flatMap((r) => (r.code === undefined ? [] : [r.code])));
  const unreachable = new Set(UNREACHABLE.map((u) => u.code));
  assert.equal(
    ERROR_CODES.filter((code) => !covered.has(code) && !unreachable.has(code)),
    [],
    'codes without a row',
  );
});

test('the unreachable list is honest: none of its codes has a row, each is a real code with a reason', () => {
  const covered = new Set(ROWS.map((r) => r.code));
  for (const u of UNREACHABLE) {
    assert.ok(ERROR_CODES.includes(u.code), `${u.code} is no error code`);
    assert.not.ok(covered.has(u.code), `${u.code} has a row: take it off the list`);
    assert.ok(u.why.length > 0);
  }
});

test('every row code is an error code, and every row name is unique', () => {
  for (const r of ROWS) if (r.code !== undefined) assert.ok(ERROR_CODES.includes(r.code), `${r.name}: ${r.code}`);
  assert.is(new Set(ROWS.map((r) => r.name)).size, ROWS.length);
});

test.run();
