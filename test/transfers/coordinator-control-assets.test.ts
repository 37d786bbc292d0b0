// Proves the control port carries an operator's asset change to every coordinator shard at once
// (a daily amount limit set a moment after each shard read the asset applies at the next
// transfer, on both shards, well within the asset cache's own lifetime), and that the service
// then stops cleanly: every shard answers its stop, with no fall-through to terminate.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { COORDINATOR_STOP_MS_MAX } from '../../src/limits.js';
import { deposit, transfer } from '../support/funds.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
/** One user per shard of two (shard = user_id mod 2). */
const USERS = [600n, 601n];
const ASSET = 'XAU';
const SPEC = {
  precision: 8,
  min_transfer_amount: '0.00000001',
  max_transfer_amount: '1000',
  status: 'ACTIVE',
  internal_transfer_enabled: true,
};

test.before(async () => {
  svc = await startTestService({ COORDINATORS: '2', RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
});

test('a daily amount limit set by an operator applies on every shard at the next transfer', async () => {
  const admin = svc.adminToken();
  const created = await svc.call('PUT', `/admin/v1/assets/${ASSET}`, { token: admin, body: SPEC });
  assert.is(created.status, 201, JSON.stringify(created.body));
  for (const user of USERS) await deposit(svc, user, 'FUNDING', ASSET, '100', `control-assets-${user}`);
  // Each shard reads the asset, with no limit yet, just before the change.
  const before = await Promise.all(USERS.map((user) => transfer(svc, user, { from: 'FUNDING', to: 'SPOT', asset: ASSET, amount: '3' })));
  assert.equal(
    before.map((r) => r.status),
    [200, 200],
    JSON.stringify(before.map((r) => r.body)),
  );
  const limited = await svc.call('PUT', `/admin/v1/assets/${ASSET}`, { token: admin, body: { ...SPEC, daily_amount_limit: '5' } });
  assert.is(limited.status, 200, JSON.stringify(limited.body));
  const after = await Promise.all(USERS.map((user) => transfer(svc, user, { from: 'FUNDING', to: 'SPOT', asset: ASSET, amount: '3' })));
  assert.equal(
    after.map((r) => [r.status, r.body.code]),
    [
      [429, 'DAILY_AMOUNT_EXCEEDED'],
      [429, 'DAILY_AMOUNT_EXCEEDED'],
    ],
    'each shard refuses what the new limit refuses',
  );
});

test('the service stops with every shard answering its stop, not terminated after the bound', async () => {
  const started = Date.now();
  await svc.stop();
  const took = Date.now() - started;
  assert.ok(took < COORDINATOR_STOP_MS_MAX, `the stop took ${took} ms`);
});

test.run();
