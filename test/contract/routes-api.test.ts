// Proves every client route, probe and docs page answers each of its cases as the table in
// test/contract/route-rows-api.ts says, through the real service's app (`app.request`, no socket),
// and that no operation of the OpenAPI document outside /admin is left without a row.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { API_DAILY_TRANSFER_LIMIT, API_RATE_LIMIT_PER_SECOND, API_ROWS, prepareApiAssets } from './route-rows-api.js';
import { isAdminPath, operationsWithoutRow, registerRows } from './route-table.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

test.before(async () => {
  svc = await startTestService({
    DAILY_TRANSFER_LIMIT: String(API_DAILY_TRANSFER_LIMIT),
    RATE_LIMIT_PER_SECOND: String(API_RATE_LIMIT_PER_SECOND),
  });
  await prepareApiAssets(svc);
});

test.after(async () => {
  await svc.stop();
});

registerRows(API_ROWS, () => svc, 7_000_001n);

test('every operation of the OpenAPI document outside /admin has a row', async () => {
  const doc = (await svc.request('GET', '/openapi.json')).body;
  const missing = operationsWithoutRow(doc, API_ROWS).filter((op) => !isAdminPath(op.split(' ')[1] ?? ''));
  assert.equal(missing, []);
});

test.run();
