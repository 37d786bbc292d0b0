// Proves every operator route, /metrics and the console answer each of their cases as the table in
// test/contract/route-rows-admin.ts says, through the real service's admin app (`app.request`, no
// socket; ADMIN_PORT is set, so that app is the admin one), and that no operation of the OpenAPI
// document under /admin, /metrics or /console is left without a row.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../support/ports.js';
import { ADMIN_ROWS, prepareAdminAssets } from './route-rows-admin.js';
import { isAdminPath, operationsWithoutRow, registerRows } from './route-table.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;

test.before(async () => {
  svc = await startTestService({ ADMIN_PORT: String(await freePort()) });
  await prepareAdminAssets(svc);
});

test.after(async () => {
  await svc.stop();
});

registerRows(ADMIN_ROWS, () => svc, 8_000_001n);

test('with ADMIN_PORT the public app answers NOT_FOUND for the admin routes, /metrics and the console', async () => {
  for (const urlPath of ['/admin/v1/overview', '/metrics', '/console']) {
    const r = await svc.request('GET', urlPath, { token: svc.adminToken() });
    assert.is(r.status, 404, urlPath);
    assert.is(r.body.code, 'NOT_FOUND', urlPath);
  }
});

test('every operation of the OpenAPI document under /admin, /metrics and /console has a row', async () => {
  const doc = (await svc.request('GET', '/openapi.json')).body;
  const missing = operationsWithoutRow(doc, ADMIN_ROWS).filter((op) => isAdminPath(op.split(' ')[1] ?? ''));
  assert.equal(missing, []);
});

test.run();
