// Proves the admin audit trail: every admin action (deposit, withdraw, asset change, account status, retry, halt, resume) leaves exactly one row with the operator (the admin token's sub, as a string), the action, its target and parameters and its outcome, a refused action included; reads leave none; GET /admin/v1/audit pages newest first with an opaque cursor and returns every row once; a failed audit write never changes the action's answer and is never silent.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signJwt } from '../../src/http/auth/jwt.js';
import { startTestService, TEST_JWT_SECRET, type TestService } from '../support/service.js';

let svc: TestService;
const ops = () => signJwt({ sub: '77', exp: Math.floor(Date.now() / 1000) + 3600, role: 'admin' }, TEST_JWT_SECRET);

type Item = {
  id: string;
  operator: string;
  action: string;
  target: Record<string, unknown>;
  parameters: Record<string, unknown>;
  status: number;
  outcome: string;
  req_id: string | null;
};

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0' });
});
test.after(async () => {
  await svc.stop();
});

test('each admin action leaves one row with operator, action, target, parameters and outcome, refusals included; reads leave none', async () => {
  const token = ops();
  const asset = {
    precision: 8,
    min_transfer_amount: '0.00000001',
    max_transfer_amount: '1000',
    status: 'ACTIVE',
    internal_transfer_enabled: true,
  };
  const calls: [string, string, unknown, number, string, string][] = [
    ['POST', '/admin/v1/deposit', { user_id: '961', account: 'FUNDING', asset: 'USDT', amount: '5', ref: 'au-1' }, 200, 'deposit', 'ok'],
    [
      'POST',
      '/admin/v1/deposit',
      { user_id: '961', account: 'FUNDING', asset: 'NOPE', amount: '5', ref: 'au-2' },
      400,
      'deposit',
      'INVALID_ASSET',
    ],
    [
      'POST',
      '/admin/v1/withdraw',
      { user_id: '961', account: 'FUNDING', asset: 'USDT', amount: '9', ref: 'au-3' },
      422,
      'withdraw',
      'INSUFFICIENT_BALANCE',
    ],
    ['POST', '/admin/v1/withdraw', { user_id: '961', account: 'FUNDING', asset: 'USDT', amount: '1', ref: 'au-4' }, 200, 'withdraw', 'ok'],
    ['PUT', '/admin/v1/assets/AUD1', asset, 201, 'asset.put', 'ok'],
    [
      'POST',
      '/admin/v1/account_status',
      { user_id: '961', account: 'FUNDING', asset: 'USDT', status: 'FROZEN' },
      200,
      'account.status',
      'ok',
    ],
    [
      'POST',
      '/admin/v1/account_status',
      { user_id: '962', account: 'FUNDING', asset: 'USDT', status: 'FROZEN' },
      404,
      'account.status',
      'NOT_FOUND',
    ],
    ['POST', '/admin/v1/transfers/01ARZ3NDEKTSV4RRFFQ69G5FAV/retry', undefined, 404, 'transfer.retry', 'NOT_FOUND'],
    ['POST', '/admin/v1/halt', { reason: 'audit' }, 200, 'service.halt', 'ok'],
    [
      'POST',
      '/admin/v1/deposit',
      { user_id: '961', account: 'FUNDING', asset: 'USDT', amount: '5', ref: 'au-5' },
      503,
      'deposit',
      'SERVICE_HALTED',
    ],
    ['POST', '/admin/v1/resume', undefined, 200, 'service.resume', 'ok'],
  ];
  for (const [method, url, body, status] of calls) {
    const r = await svc.call(method, url, { token, body });
    assert.is(r.status, status, `${method} ${url}: ${JSON.stringify(r.body)}`);
    await svc.call('GET', '/admin/v1/alerts', { token });
  }
  const rows = await svc.sql<Item[]>`SELECT * FROM admin_audit ORDER BY id`;
  assert.equal(
    rows.map((r) => [r.action, Number(r.status), r.outcome]),
    calls.map((c) => [c[4], c[3], c[5]]),
    'one row per action, in order, reads none',
  );
  assert.ok(
    rows.every((r) => r.operator === '77'),
    'the operator is the token sub as a string',
  );
  assert.equal(rows[2]?.target, { user_id: '961', account: 'FUNDING', asset: 'USDT', ref: 'au-3' });
  assert.equal(rows[2]?.parameters, { user_id: '961', account: 'FUNDING', asset: 'USDT', amount: '9', ref: 'au-3' });
  assert.equal(rows[4]?.target, { symbol: 'AUD1' });
  assert.equal([rows[7]?.req_id, rows[7]?.target], ['01ARZ3NDEKTSV4RRFFQ69G5FAV', { req_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV' }]);
});

test('GET /admin/v1/audit pages newest first with an opaque cursor: every row once; a bad cursor or limit is 400', async () => {
  const token = ops();
  const all = await svc.sql<{ id: bigint }[]>`SELECT id FROM admin_audit ORDER BY id DESC`;
  assert.ok(all.length >= 10);
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let pages = 0; pages < 20; pages += 1) {
    const r = await svc.call('GET', `/admin/v1/audit?limit=3${cursor === null ? '' : `&cursor=${cursor}`}`, { token });
    assert.is(r.status, 200, JSON.stringify(r.body));
    const items = r.body.items as Item[];
    assert.ok(items.length <= 3);
    seen.push(...items.map((i) => i.id));
    cursor = r.body.next_cursor as string | null;
    if (cursor === null) break;
  }
  assert.equal(
    seen,
    all.map((r) => r.id.toString()),
    'every row once, newest first',
  );
  for (const q of ['limit=0', 'limit=101', 'cursor=abc', 'cursor=MTIz', 'other=1']) {
    assert.is((await svc.call('GET', `/admin/v1/audit?${q}`, { token })).status, 400, q);
  }
  assert.is((await svc.call('GET', '/admin/v1/audit', { token: svc.userToken(5) })).status, 403);
});

test('a failed audit write leaves the action and its answer as they are, marked X-Audit: failed and logged', async () => {
  await svc.sql`ALTER TABLE admin_audit ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`;
  try {
    const response = await fetch(`${svc.base}/admin/v1/deposit`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ops()}`, 'content-type': 'application/json' },
      body: JSON.stringify({ user_id: '963', account: 'FUNDING', asset: 'USDT', amount: '2', ref: 'au-fail' }),
    });
    assert.is(response.status, 200);
    assert.is(response.headers.get('x-audit'), 'failed');
    const done = await svc.sql`SELECT 1 FROM external_movements WHERE ref = 'au-fail' AND state = 'DONE'`;
    assert.is(done.length, 1, 'the deposit was made');
  } finally {
    await svc.sql`ALTER TABLE admin_audit DROP CONSTRAINT refuse_all`;
  }
});

test.run();
