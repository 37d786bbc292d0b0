// Proves spec 002's alert table: each rule (backlog, retrying, dead letters, failure rate, mean retries) fires strictly above its default threshold and not at it, the failure rate counting failures of the service and never the users' own refusals, and in the running service each is evaluated periodically, raised once per episode (stored in /admin/v1/alerts, gauges in /metrics, POSTed to the webhook), cleared when its value drops, and raised anew when it fires again.

import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judge, type ConditionKind, type Measures } from '../../src/alerts/rules.js';
import { loadConfig } from '../../src/config/config.js';
import { metSystemFailure } from '../../src/coordinator/transfer-metrics.js';
import type { ErrorCode } from '../../src/domain/errors.js';
import type { TransferStateName } from '../../src/domain/fsm.js';
import { newReqId } from '../../src/http/req-ids.js';
import { deposit, transfer } from '../support/funds.js';
import { parseMetrics } from '../support/prometheus.js';
import { startTestService, type TestService } from '../support/service.js';

const CALM: Measures = { backlog: 0, sampled: 0, retrying: 0, escalated: 0, retriesSum: 0, finished: 0, systemFailed: 0 };

function firing(m: Partial<Measures>): ConditionKind[] {
  return judge({ ...CALM, ...m }, loadConfig({}).alertRules)
    .filter((j) => j.firing)
    .map((j) => j.kind);
}

test('spec 002 thresholds by default: each alert fires one above its threshold and not at it', () => {
  assert.equal(firing({}), []);
  assert.equal(firing({ backlog: 100, sampled: 100 }), []);
  assert.equal(firing({ backlog: 101, sampled: 101 }), ['TRANSFER_BACKLOG']);
  assert.equal(firing({ backlog: 50, sampled: 50, retrying: 10, retriesSum: 10 }), []);
  assert.equal(firing({ backlog: 50, sampled: 50, retrying: 11, retriesSum: 11 }), ['TRANSFERS_RETRYING']);
  assert.equal(firing({ backlog: 50, sampled: 50, escalated: 1 }), ['DEAD_LETTERS']);
  assert.equal(firing({ finished: 100, systemFailed: 10 }), []);
  assert.equal(firing({ finished: 100, systemFailed: 11 }), ['HIGH_FAILURE_RATE']);
  assert.equal(firing({ finished: 10, systemFailed: 1 }), []);
  assert.equal(firing({ backlog: 3, sampled: 3, retrying: 3, retriesSum: 6 }), []);
  assert.equal(firing({ backlog: 3, sampled: 3, retrying: 3, retriesSum: 7 }), ['HIGH_AVG_RETRIES']);
});

test("HIGH_FAILURE_RATE counts a finished transfer a failure of the service met, never the user's own refusal nor a limit's", () => {
  // [final state, unknown outcomes retried on the way, code recorded, counted as a failure of the service]
  const rows: Array<[TransferStateName, number, ErrorCode | null, boolean]> = [
    ['COMMITTED', 0, null, false],
    ['FAILED', 0, 'INSUFFICIENT_BALANCE', false],
    ['FAILED', 0, 'ACCOUNT_FROZEN', false],
    ['FAILED', 0, 'ACCOUNT_DISABLED', false],
    ['FAILED', 0, 'SOURCE_ACCOUNT_NOT_FOUND', false],
    ['FAILED', 0, 'ASSET_SUSPENDED', false],
    ['FAILED', 0, 'AMOUNT_TOO_LARGE', false],
    ['ROLLED_BACK', 0, 'ACCOUNT_FROZEN', false],
    ['ROLLED_BACK', 0, 'TARGET_ACCOUNT_NOT_FOUND', false],
    // A transfer parked in INIT that the daily limits refuse at its first step: the limit's refusal, not a failure.
    ['FAILED', 0, 'DAILY_LIMIT_EXCEEDED', false],
    ['FAILED', 0, 'DAILY_AMOUNT_EXCEEDED', false],
    ['FAILED', 0, 'CONSTRAINT_VIOLATION', true],
    ['ROLLED_BACK', 0, 'CONSTRAINT_VIOLATION', true],
    ['FAILED', 0, null, true],
    ['COMMITTED', 1, null, true],
    ['FAILED', 2, 'INSUFFICIENT_BALANCE', true],
  ];
  for (const [to, retryCount, code, counted] of rows)
    assert.is(metSystemFailure({ retryCount }, to, code), counted, `${to} after ${retryCount} retries with ${String(code)}`);
});

type Hook = { received: { kind: string; details: Record<string, unknown> }[]; url: string; close: () => void };

async function webhook(): Promise<Hook> {
  const received: Hook['received'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(body) as Hook['received'][number]);
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { received, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`, close: () => server.close() };
}

/** Waits for an evaluation that measured `value` for the alert, and answers whether it was firing. */
async function evaluated(svc: TestService, kind: ConditionKind, value: number): Promise<boolean> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const m = parseMetrics(await (await fetch(`${svc.base}/metrics`)).text());
    const measured = m.get(`transfer_alert_value{alert="${kind}"}`);
    if (measured !== undefined && Math.abs(measured - value) < 1e-9) return m.get(`transfer_alert_firing{alert="${kind}"}`) === 1;
    assert.ok(Date.now() < deadline, `${kind} never measured ${value} (last ${measured})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function stored(svc: TestService, kind: ConditionKind): Promise<{ alerts: number; firing: boolean }> {
  const r = await svc.call('GET', '/admin/v1/alerts?limit=500', { token: svc.adminToken() });
  const listed = (r.body.alerts as { kind: string; details: { threshold?: unknown } }[]).filter((a) => a.kind === kind);
  for (const a of listed) assert.is(typeof a.details.threshold, 'number', `${kind} details are an object`);
  const alerts = listed.length;
  const condition = (r.body.conditions as { kind: string; firing: boolean }[]).find((c) => c.kind === kind);
  return { alerts, firing: condition?.firing ?? false };
}

/** Unfinished transfers written behind the service, which no scan drives during the test. */
async function park(svc: TestService, n: number, retryCount = 0): Promise<string[]> {
  const ids = Array.from({ length: n }, () => newReqId());
  for (const id of ids) {
    await svc.sql`INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state, retry_count)
                  VALUES (${id}, 971, 'USDT', 1, 1, 1, 2, 0, ${retryCount})`;
    await svc.sql`INSERT INTO transfers_active (req_id, user_id) VALUES (${id}, 971)`;
  }
  return ids;
}

async function unpark(svc: TestService, ids: readonly string[]): Promise<void> {
  await svc.sql`DELETE FROM transfers_active WHERE req_id = ANY(${ids as string[]})`;
  await svc.sql`DELETE FROM transfers_tb WHERE req_id = ANY(${ids as string[]})`;
}

/**
 * HIGH_FAILURE_RATE: 9 committed and 1 ended by a constraint the service's checks let through is
 * 10 %, not above; 9 refusals for a balance too low add nothing but finished transfers (1 of 19);
 * a second constraint is 2 of 20, not above; a third is 3 of 21. Each value measured is one only
 * the counts before it can give, so no earlier evaluation can answer for it.
 */
async function highFailureRate(svc: TestService): Promise<void> {
  await deposit(svc, 972n, 'FUNDING', 'USDT', '100', 'ar-seed');
  await deposit(svc, 973n, 'FUNDING', 'USDT', '1', 'ar-poor');
  await deposit(svc, 973n, 'SPOT', 'USDT', '1', 'ar-poor-spot');
  await deposit(svc, 974n, 'FUNDING', 'USDT', '100', 'ar-capped');
  const move = (user: bigint, amount: string, from = 'FUNDING', to = 'SPOT') => transfer(svc, user, { from, to, asset: 'USDT', amount });
  // A CHECK the service knows nothing of, as a DBA might add: 974's debits below 99.5 USDT end
  // CONSTRAINT_VIOLATION.
  await svc.sql`ALTER TABLE funding_balances ADD CONSTRAINT ar_cap CHECK (user_id <> 974 OR available >= 9950000000) NOT VALID`;
  const capped = async () => assert.equal((await move(974n, '2')).body.code, 'CONSTRAINT_VIOLATION');
  try {
    for (let i = 0; i < 9; i += 1) assert.is((await move(972n, '1')).status, 200);
    await capped();
    assert.is(await evaluated(svc, 'HIGH_FAILURE_RATE', 10), false);
    // Refused by the FUNDING ledger in the creating transaction, and by UBSCore after the call.
    for (let i = 0; i < 5; i += 1) assert.equal((await move(973n, '5')).body.code, 'INSUFFICIENT_BALANCE');
    for (let i = 0; i < 4; i += 1) assert.equal((await move(973n, '5', 'SPOT', 'FUNDING')).body.code, 'INSUFFICIENT_BALANCE');
    assert.is(await evaluated(svc, 'HIGH_FAILURE_RATE', 100 / 19), false, "the users' own refusals are not failures");
    await capped();
    assert.is(await evaluated(svc, 'HIGH_FAILURE_RATE', 10), false);
    await capped();
    assert.is(await evaluated(svc, 'HIGH_FAILURE_RATE', 300 / 21), true);
  } finally {
    await svc.sql`ALTER TABLE funding_balances DROP CONSTRAINT ar_cap`;
  }
}

test('in the service: each alert fires at its threshold + 1, not at it; shows in /admin/v1/alerts, /metrics and the webhook; clears and is raised again', async () => {
  const hook = await webhook();
  const svc = await startTestService({
    ALERT_EVAL_INTERVAL_MS: '100',
    ALERT_WEBHOOK_URL: hook.url,
    SCAN_INTERVAL_MS: '3600000',
    STALE_THRESHOLD_MS: '86400000',
    INVARIANT_INTERVAL_MS: '0',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
  });
  try {
    await highFailureRate(svc);

    // TRANSFER_BACKLOG: 100 unfinished is not above; 101 is. Then it clears and fires again.
    const hundred = await park(svc, 100);
    assert.is(await evaluated(svc, 'TRANSFER_BACKLOG', 100), false);
    const [extra] = await park(svc, 1);
    assert.is(await evaluated(svc, 'TRANSFER_BACKLOG', 101), true);
    assert.equal(await stored(svc, 'TRANSFER_BACKLOG'), { alerts: 1, firing: true });
    await unpark(svc, [extra as string]);
    assert.is(await evaluated(svc, 'TRANSFER_BACKLOG', 100), false);
    assert.equal(await stored(svc, 'TRANSFER_BACKLOG'), { alerts: 1, firing: false });
    const again = await park(svc, 1);
    assert.is(await evaluated(svc, 'TRANSFER_BACKLOG', 101), true);
    assert.equal(await stored(svc, 'TRANSFER_BACKLOG'), { alerts: 2, firing: true }, 'a new episode is a new alert');
    await unpark(svc, [...hundred, ...again]);

    // TRANSFERS_RETRYING: 10 retrying is not above; 11 is. DEAD_LETTERS: 0 escalated, then 1
    // (STUCK_RETRIES is 10). HIGH_AVG_RETRIES: a mean of 2 is not above; 23 / 11 is.
    const retrying = await park(svc, 10, 2);
    assert.is(await evaluated(svc, 'TRANSFERS_RETRYING', 10), false);
    assert.is(await evaluated(svc, 'HIGH_AVG_RETRIES', 2), false);
    assert.is(await evaluated(svc, 'DEAD_LETTERS', 0), false);
    await park(svc, 1, 3);
    assert.is(await evaluated(svc, 'TRANSFERS_RETRYING', 11), true);
    assert.is(await evaluated(svc, 'HIGH_AVG_RETRIES', 23 / 11), true);
    await svc.sql`UPDATE transfers_tb SET retry_count = 10 WHERE req_id = ${retrying[0] as string}`;
    assert.is(await evaluated(svc, 'DEAD_LETTERS', 1), true);

    const kinds: ConditionKind[] = ['HIGH_FAILURE_RATE', 'TRANSFER_BACKLOG', 'TRANSFERS_RETRYING', 'HIGH_AVG_RETRIES', 'DEAD_LETTERS'];
    for (const kind of kinds) assert.is((await stored(svc, kind)).firing || kind === 'TRANSFER_BACKLOG', true, kind);
    const deadline = Date.now() + 5_000;
    while (kinds.some((k) => !hook.received.some((a) => a.kind === k)) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
    for (const kind of kinds)
      assert.ok(
        hook.received.some((a) => a.kind === kind),
        `${kind} posted to the webhook`,
      );
    assert.is(hook.received.filter((a) => a.kind === 'TRANSFER_BACKLOG').length, 2, 'posted once per episode');
    const dead = hook.received.find((a) => a.kind === 'DEAD_LETTERS');
    assert.equal([dead?.details.value, dead?.details.threshold], [1, 0]);
  } finally {
    await svc.stop();
    hook.close();
  }
});

test.run();
