// Proves the whole-service halt (MON-003): while halted every new movement of money is refused with SERVICE_HALTED and leaves no row (an HTTP transfer, an admin deposit and withdrawal, a transfer entering through the mailbox-full path or straight at a coordinator shard), transfers already in flight still finish, every thread knows it (/readyz 503, transfer_service_halted and transfer_coordinator_halted gauges), a shard reads a stored halt on its own, and resume lifts it everywhere.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { newReqId } from '../src/http/req-ids.js';
import { createLogger } from '../src/log.js';
import { recordForScan } from '../src/services/overflow.js';
import { deposit, transfer } from './support/funds.js';
import { startLayers } from './support/layers.js';
import { parseMetrics } from './support/prometheus.js';
import { startTestService, type TestService } from './support/service.js';

const HALTED = { reason: 'test', since: new Date(0).toISOString() };
const quiet = createLogger({ level: 'error', name: 'test', write: () => undefined });

async function metric(svc: TestService, series: string): Promise<number | undefined> {
  const text = await (await fetch(`${svc.base}/metrics`)).text();
  return parseMetrics(text).get(series);
}

async function until(what: string, check: () => Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function count(svc: TestService, table: 'transfers_tb' | 'external_movements'): Promise<number> {
  const rows = await svc.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${svc.sql(table)}`;
  return rows[0]?.n ?? -1;
}

test('MON-003: a halt refuses a new HTTP transfer, admin deposits and withdrawals with no row; in-flight transfers finish; /readyz 503 and the gauges say 1; resume lifts it', async () => {
  const svc = await startTestService({
    COORDINATORS: '1',
    COORDINATOR_MAILBOX_MAX: '1',
    COORDINATOR_CONCURRENCY_MAX: '1',
    SCAN_INTERVAL_MS: '300',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
  });
  try {
    const admin = svc.adminToken();
    await deposit(svc, 951n, 'FUNDING', 'USDT', '100', 'halt-seed');
    await deposit(svc, 951n, 'SPOT', 'USDT', '10', 'halt-seed-spot');
    // A burst finds the mailbox full: some transfers are parked in INIT, in flight when the halt comes.
    const replies = await Promise.all(
      Array.from({ length: 12 }, () => transfer(svc, 951n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })),
    );
    const parked = replies.filter((r) => r.body.internal_state === 'INIT').map((r) => String(r.body.req_id));
    assert.ok(parked.length > 0, 'some transfers were parked for the scan');
    const halt = await svc.call('POST', '/admin/v1/halt', { token: admin, body: { reason: 'drill' } });
    assert.equal([halt.status, halt.body.halted, halt.body.was_halted], [200, true, false]);
    const stored = await svc.sql<
      { t: string; reason: string }[]
    >`SELECT jsonb_typeof(value) AS t, value->>'reason' AS reason FROM service_state WHERE key = 'halt'`;
    assert.equal([stored[0]?.t, stored[0]?.reason], ['object', 'operator: drill'], 'stored as an object, so a restart reads its reason');

    const transfers = await count(svc, 'transfers_tb');
    const movements = await count(svc, 'external_movements');
    const refused = await transfer(svc, 951n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    assert.equal([refused.status, refused.body.code], [503, 'SERVICE_HALTED']);
    for (const [route, account, ref] of [
      ['deposit', 'FUNDING', 'h-d-f'],
      ['deposit', 'SPOT', 'h-d-s'],
      ['withdraw', 'FUNDING', 'h-w-f'],
      ['withdraw', 'SPOT', 'h-w-s'],
    ] as const) {
      const r = await svc.call('POST', `/admin/v1/${route}`, {
        token: admin,
        body: { user_id: '951', account, asset: 'USDT', amount: '1', ref },
      });
      assert.equal([r.status, r.body.code], [503, 'SERVICE_HALTED'], `${route} ${account}`);
    }
    assert.is(await count(svc, 'transfers_tb'), transfers, 'no transfer row while halted');
    assert.is(await count(svc, 'external_movements'), movements, 'no movement row while halted');

    const ready = await svc.call('GET', '/readyz');
    assert.equal([ready.status, ready.body.halted, ready.body.halt_reason], [503, true, 'operator: drill']);
    assert.is(await metric(svc, 'transfer_service_halted'), 1);
    assert.is(await metric(svc, 'transfer_coordinator_halted{shard="0"}'), 1);
    // In flight: the scan drives every parked transfer to its final state while halted.
    await until('the parked transfers to commit', async () => {
      const open = await svc.sql<
        { n: number }[]
      >`SELECT count(*)::int AS n FROM transfers_tb WHERE req_id = ANY(${parked}) AND state <> 40`;
      return open[0]?.n === 0;
    });
    assert.is((await svc.call('GET', '/readyz')).status, 503, 'still halted after they finished');

    const resumed = await svc.call('POST', '/admin/v1/resume', { token: admin });
    assert.equal([resumed.status, resumed.body.was_halted, resumed.body.previous_reason], [200, true, 'operator: drill']);
    assert.is((await svc.call('GET', '/readyz')).status, 200);
    assert.is(await metric(svc, 'transfer_service_halted'), 0);
    assert.is(await metric(svc, 'transfer_coordinator_halted{shard="0"}'), 0);
    const after = await transfer(svc, 951n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    assert.ok(after.status === 200 || after.status === 202, JSON.stringify(after.body));
    await deposit(svc, 951n, 'FUNDING', 'USDT', '1', 'h-d-f');
  } finally {
    await svc.stop();
  }
});

test('MON-003: a coordinator shard reads a halt stored behind it (a restart, a missed message) and refuses new transfers', async () => {
  const svc = await startTestService({ COORDINATORS: '1', SCAN_INTERVAL_MS: '200', RATE_LIMIT_PER_SECOND: '0' });
  try {
    await svc.sql`INSERT INTO service_state (key, value) VALUES ('halt', ${JSON.stringify(HALTED)}::text::jsonb)`;
    await until('the shard to read the stored halt', async () => (await metric(svc, 'transfer_coordinator_halted{shard="0"}')) === 1);
    await svc.sql`DELETE FROM service_state WHERE key = 'halt'`;
    await until('the shard to read the resume', async () => (await metric(svc, 'transfer_coordinator_halted{shard="0"}')) === 0);
  } finally {
    await svc.stop();
  }
});

test('MON-003: the mailbox-full path and a shard refuse a new transfer while halted, with no transfer row', async () => {
  const layers = await startLayers();
  try {
    await layers.sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (952, 'USDT', 1000)`;
    const t = () => ({
      reqId: newReqId(),
      userId: 952n,
      from: 'FUNDING' as const,
      to: 'SPOT' as const,
      asset: 'USDT',
      amount: 10n,
      clientOrderId: null,
    });
    const parkedWhileHalted = t();
    assert.equal(await recordForScan(parkedWhileHalted, layers.store, quiet, { current: HALTED }), {
      kind: 'refused',
      code: 'SERVICE_HALTED',
    });
    layers.halt.set(HALTED);
    const submittedWhileHalted = t();
    assert.equal(await layers.shard.submit(submittedWhileHalted), { kind: 'refused', code: 'SERVICE_HALTED' });
    const rows = await layers.sql`SELECT 1 FROM transfers_tb WHERE req_id IN (${parkedWhileHalted.reqId}, ${submittedWhileHalted.reqId})`;
    assert.is(rows.length, 0, 'no transfer row');
    layers.halt.set(null);
    assert.is((await recordForScan(t(), layers.store, quiet, { current: null })).kind, 'transfer');
    assert.is((await layers.shard.submit(t())).kind, 'transfer');
  } finally {
    await layers.stop();
  }
});

test.run();
