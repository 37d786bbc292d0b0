// Proves, with thousands of random and malformed requests (fast-check), that the API never answers 5xx, always answers JSON with a code on error, and never changes the total of any balance.

import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signJwt } from '../../src/http/auth/jwt.js';
import { deposit, totalOf } from '../support/funds.js';
import { startTestService, TEST_JWT_SECRET, type TestService } from '../support/service.js';

let svc: TestService;
const USERS = [601n, 602n, 603n];
const ASSETS = ['USDT', 'BTC'];
const RUNS = 2_500;
const before = new Map<string, bigint>();

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0', HAPPY_PATH_DEADLINE_MS: '2000' });
  for (const user of USERS) {
    for (const asset of ASSETS) {
      await deposit(svc, user, 'FUNDING', asset, '50', `fuzz-${user}-${asset}-f`);
      await deposit(svc, user, 'SPOT', asset, '50', `fuzz-${user}-${asset}-s`);
      before.set(`${user}/${asset}`, await totalOf(svc, user, asset));
    }
  }
});

test.after(async () => {
  await svc.stop();
});

const exp = () => Math.floor(Date.now() / 1000) + 600;
const token = fc.oneof(
  fc.constantFrom(...USERS).map((u) => `Bearer ${svc.userToken(u)}`),
  fc.constant(`Bearer ${signJwt({ sub: '601', exp: 1 }, TEST_JWT_SECRET)}`),
  fc.constant(`Bearer ${signJwt({ sub: '601', exp: exp() }, 'wrong-secret-wrong-secret-wrong-secret')}`),
  fc.string().map((t) => `Bearer ${t}`),
  fc.string(),
  fc.constant(undefined),
);
const field = fc.oneof(
  fc.constantFrom(
    'FUNDING',
    'SPOT',
    'FUTURE',
    'USDT',
    'BTC',
    'NOPE',
    '',
    '1',
    '0',
    '-1',
    '0.000000001',
    '1e3',
    '0x10',
    'NaN',
    ' 1',
    '1.5',
    '18446744073709551616',
  ),
  fc.string({ maxLength: 30 }),
  fc.integer(),
  fc.double(),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.string(), { maxLength: 3 }),
  fc.object({ maxDepth: 1 }),
);
const transferish = fc.record(
  { from: field, to: field, asset: field, amount: field, client_order_id: field, user_id: field, extra: field },
  { requiredKeys: [] },
);
const body = fc.oneof(
  transferish.map((b) => JSON.stringify(b)),
  fc.anything().map((x) => JSON.stringify(x) ?? 'null'),
  fc.string({ maxLength: 200 }),
  fc.constant(''),
);
const urlPath = fc.oneof(
  fc.constantFrom(
    '/api/v1/internal_transfer',
    '/api/v1/balances',
    '/admin/v1/deposit',
    '/admin/v1/account_status',
    '/admin/v1/assets/USDT',
    '/healthz',
    '/openapi.json',
  ),
  fc
    .constantFrom('/api/v1/internal_transfer/', '/api/v1/internal_transfer?limit=', '/api/v1/internal_transfer?cursor=')
    .chain((p) => fc.string({ maxLength: 40 }).map((t) => p + encodeURIComponent(t))),
  fc.webPath(),
);
const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH');

test('random methods, paths, tokens and bodies: never a 5xx, always JSON with a code on error, funds unchanged', async () => {
  let requests = 0;
  await fc.assert(
    fc.asyncProperty(method, urlPath, token, body, async (m, p, auth, b) => {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (auth !== undefined) headers.authorization = auth;
      const init: RequestInit = { method: m, headers };
      if (m !== 'GET') init.body = b;
      let response: Response;
      try {
        response = await fetch(svc.base + (p.startsWith('/') ? p : `/${p}`), init);
      } catch {
        return; // the client refused to send it (an invalid header value): nothing reached the service
      }
      requests += 1;
      const text = await response.text();
      assert.ok(response.status < 500, `${m} ${p} → ${response.status} ${text}`);
      if (/^\/?docs(\/|$)/.test(p) && response.status === 200) return; // the documentation page is HTML by design
      assert.ok((response.headers.get('content-type') ?? '').startsWith('application/json'), `${m} ${p} not JSON`);
      const json = JSON.parse(text) as { code?: unknown };
      if (response.status >= 400) assert.type(json.code, 'string', `${m} ${p} → ${text}`);
    }),
    { numRuns: RUNS },
  );
  assert.ok(requests > RUNS * 0.9, `only ${requests} requests were sent`);
  for (const user of USERS) {
    for (const asset of ASSETS) assert.is(await totalOf(svc, user, asset), before.get(`${user}/${asset}`), `${user} ${asset}`);
  }
});

test('the OpenAPI document lists every endpoint and error code; /docs serves its page and assets', async () => {
  const doc = await svc.call('GET', '/openapi.json');
  assert.is(doc.body.openapi, '3.1.0');
  const paths = Object.keys(doc.body.paths as object);
  const expected = [
    '/api/v1/internal_transfer',
    '/api/v1/internal_transfer/{req_id}',
    '/api/v1/balances',
    '/admin/v1/deposit',
    '/admin/v1/withdraw',
    '/admin/v1/assets/{symbol}',
    '/admin/v1/account_status',
    '/admin/v1/alerts',
    '/admin/v1/transfers',
    '/admin/v1/transfers/{req_id}/retry',
    '/admin/v1/transfers/search',
    '/admin/v1/overview',
    '/admin/v1/ownership',
    '/console',
    '/admin/v1/invariant',
    '/admin/v1/halt',
    '/admin/v1/backup',
    '/admin/v1/resume',
    '/admin/v1/audit',
    '/healthz',
    '/readyz',
    '/metrics',
    '/openapi.json',
    '/docs',
  ];
  assert.equal([...paths].sort(), [...expected].sort(), 'every endpoint, and only those');
  const codes = (doc.body['x-error-codes'] as { code: string }[]).map((c) => c.code);
  for (const c of [
    'INSUFFICIENT_BALANCE',
    'SAME_ACCOUNT',
    'DUPLICATE_REQUEST',
    'RATE_LIMIT_EXCEEDED',
    'OVERFLOW',
    'SERVICE_HALTED',
    'PAYLOAD_TOO_LARGE',
  ])
    assert.ok(codes.includes(c), c);
  const page = await fetch(`${svc.base}/docs`);
  assert.match(await page.text(), /swagger-ui-bundle\.js/);
  const bundle = await fetch(`${svc.base}/docs/swagger-ui-bundle.js`);
  assert.is(bundle.status, 200);
  assert.ok((await bundle.arrayBuffer()).byteLength > 100_000);
});

test.run();
