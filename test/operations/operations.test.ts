// Proves backpressure (a full mailbox still records the transfer and answers 202, and the scan finishes it), the operator routes (stuck list with history, retry, alerts), and the alert webhook.

import http from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AlertSink } from '../../src/alerts/alerts.js';
import { migrate } from '../../src/db/schema.js';
import { openSql } from '../../src/db/sql.js';
import { createLogger } from '../../src/log.js';
import { createTestDatabase } from '../support/database.js';
import { deposit, totalOf, transfer } from '../support/funds.js';
import { startTestService } from '../support/service.js';

const COIN = 10n ** 8n;

test('backpressure: with a full mailbox every transfer is still recorded, answered 202, and finished by the scan', async () => {
  const svc = await startTestService({
    COORDINATORS: '1',
    COORDINATOR_MAILBOX_MAX: '1',
    COORDINATOR_CONCURRENCY_MAX: '1',
    SCAN_INTERVAL_MS: '200',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
  });
  try {
    await deposit(svc, 901n, 'FUNDING', 'USDT', '100', 'bp-seed');
    const replies = await Promise.all(
      Array.from({ length: 30 }, () => transfer(svc, 901n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })),
    );
    assert.ok(
      replies.every((r) => r.status === 200 || r.status === 202),
      JSON.stringify(replies.map((r) => r.status)),
    );
    const parked = replies.filter((r) => r.status === 202 && r.body.state === 'PENDING' && r.body.internal_state === 'INIT');
    assert.ok(parked.length > 0, 'some requests found the mailbox full');
    const deadline = Date.now() + 15_000;
    for (;;) {
      const open = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = 901 AND state <> 40`;
      if (open[0]?.n === 0) break;
      assert.ok(Date.now() < deadline, `${open[0]?.n} transfers unfinished`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const done = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = 901 AND state = 40`;
    assert.is(done[0]?.n, 30);
    assert.is(await totalOf(svc, 901n, 'USDT'), 100n * COIN);
  } finally {
    await svc.stop();
  }
});

test('operators: stuck transfers are listed with their history, retry drives one, alerts are listed', async () => {
  const svc = await startTestService({
    COORDINATORS: '1',
    COORDINATOR_MAILBOX_MAX: '1',
    COORDINATOR_CONCURRENCY_MAX: '1',
    SCAN_INTERVAL_MS: '600000',
    STUCK_AGE_MS: '0',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
  });
  try {
    const admin = svc.adminToken();
    await deposit(svc, 902n, 'FUNDING', 'USDT', '100', 'op-seed');
    const replies = await Promise.all(
      Array.from({ length: 12 }, () => transfer(svc, 902n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })),
    );
    const parked = replies.filter((r) => r.body.internal_state === 'INIT').map((r) => String(r.body.req_id));
    assert.ok(parked.length > 0);
    const stuck = await svc.call('GET', '/admin/v1/transfers?stuck=true', { token: admin });
    assert.is(stuck.status, 200);
    const listed = (stuck.body.transfers as { req_id: string; state: string; history: { state: string }[] }[]).map((t) => t.req_id);
    for (const id of parked) assert.ok(listed.includes(id), id);
    const first = (stuck.body.transfers as { history: { state: string }[] }[])[0];
    assert.equal(
      first?.history.map((h) => h.state),
      ['INIT'],
    );
    for (const id of parked) {
      const r = await svc.call('POST', `/admin/v1/transfers/${id}/retry`, { token: admin });
      assert.is(r.status, 200, JSON.stringify(r.body));
      assert.is(r.body.state, 'COMMITTED');
    }
    assert.equal((await svc.call('GET', '/admin/v1/transfers?stuck=true', { token: admin })).body.transfers, []);
    const again = await svc.call('POST', `/admin/v1/transfers/${parked[0]}/retry`, { token: admin });
    assert.is(again.body.state, 'COMMITTED', 'a retry of a finished transfer changes nothing');
    assert.is((await svc.call('POST', '/admin/v1/transfers/01ARZ3NDEKTSV4RRFFQ69G5FAV/retry', { token: admin })).status, 404);
    assert.is((await svc.call('POST', `/admin/v1/transfers/${parked[0]}/retry`, { token: svc.userToken(902) })).status, 403);
    await svc.sql`INSERT INTO alerts (kind, severity, req_id, message, dedupe_key) VALUES ('TRANSFER_STUCK', 'CRITICAL', ${parked[0] ?? null}, 'test alert', ${parked[0] ?? 'x'})`;
    const alerts = await svc.call('GET', '/admin/v1/alerts', { token: admin });
    assert.is((alerts.body.alerts as { kind: string }[])[0]?.kind, 'TRANSFER_STUCK');
    assert.is(await totalOf(svc, 902n, 'USDT'), 100n * COIN);
  } finally {
    await svc.stop();
  }
});

test('MON-004: an abnormal transfer frequency for one user raises one WARNING alert; other users do not', async () => {
  const svc = await startTestService({ ABNORMAL_TRANSFERS_PER_MINUTE: '5', RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
  try {
    await deposit(svc, 1301n, 'FUNDING', 'USDT', '100', 'm4-a');
    await deposit(svc, 1302n, 'FUNDING', 'USDT', '100', 'm4-b');
    for (let i = 0; i < 8; i++) await transfer(svc, 1301n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    for (let i = 0; i < 3; i++) await transfer(svc, 1302n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
    const deadline = Date.now() + 3_000;
    let rows: { user_id: bigint; severity: string }[] = [];
    while (rows.length === 0 && Date.now() < deadline) {
      rows = await svc.sql<{ user_id: bigint; severity: string }[]>`SELECT user_id, severity FROM alerts WHERE kind = 'ABNORMAL_FREQUENCY'`;
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(
      rows.map((r) => [r.user_id, r.severity]),
      [[1301n, 'WARNING']],
    );
  } finally {
    await svc.stop();
  }
});

test('alerts: raised once per kind and transfer, logged, and POSTed as JSON to the webhook', async () => {
  const received: unknown[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push(JSON.parse(body));
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 2, application: 'test' });
  try {
    await migrate(sql);
    const lines: string[] = [];
    const sink = new AlertSink({
      sql,
      log: createLogger({ level: 'info', name: 't', write: (l) => lines.push(l) }),
      webhookUrl: `http://127.0.0.1:${port}/hook`,
    });
    const alert = {
      kind: 'REFUND_FAILING' as const,
      reqId: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
      userId: 5n,
      message: 'refund failed 3 times',
      details: { attempts: 3 },
    };
    assert.is(await sink.raise(alert), true);
    assert.is(await sink.raise(alert), false);
    const deadline = Date.now() + 3_000;
    while (received.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    assert.is(received.length, 1);
    assert.equal(received[0], {
      kind: 'REFUND_FAILING',
      reqId: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
      userId: '5',
      message: 'refund failed 3 times',
      details: { attempts: 3 },
      severity: 'CRITICAL',
    });
    assert.is(lines.length, 1);
    assert.match(lines[0] ?? '', /"level":"critical".*"alert":"REFUND_FAILING"/);
    assert.is((await sink.list(10)).length, 1);
  } finally {
    server.close();
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test.run();
