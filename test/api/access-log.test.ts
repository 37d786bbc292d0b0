// Proves the request logs: one access line per request with its method, route pattern, status,
// latency, user or operator and transfer req_id; an X-Request-Id taken from a sane client header
// or generated, echoed on the answer and carried by every line the request writes; errors
// written by pino's err serializer; and readable (pino-pretty) lines refused in production.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { createLogger } from '../../src/log.js';
import { stubApps } from '../support/app.js';
import { TEST_JWT_SECRET } from '../support/service.js';

const exp = () => Math.floor(Date.now() / 1000) + 600;
const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });
const user = signJwt({ sub: '42', exp: exp() }, TEST_JWT_SECRET);
const admin = signJwt({ sub: 'ops-alice', exp: exp(), role: 'admin' }, TEST_JWT_SECRET);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

test('a request without X-Request-Id gets one, echoed on the answer and on its one access line', async () => {
  const apps = stubApps(tokens);
  const res = await apps.public.request('/api/v1/internal_transfer/01ARZ3NDEKTSV4RRFFQ69G5FAV', {
    headers: { authorization: `Bearer ${user}` },
  });
  assert.is(res.status, 404);
  const id = res.headers.get('x-request-id') ?? '';
  assert.match(id, UUID);
  const access = apps.lines.filter((l) => l.msg === 'request');
  assert.is(access.length, 1, 'one access line per request');
  const f = access[0]?.fields ?? {};
  assert.equal(
    { request_id: f.request_id, method: f.method, route: f.route, status: f.status, user: f.user, req_id: f.req_id },
    {
      request_id: id,
      method: 'GET',
      route: '/api/v1/internal_transfer/:req_id',
      status: 404,
      user: '42',
      req_id: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    },
  );
  assert.ok(typeof f.latency_ms === 'number' && f.latency_ms >= 0, 'latency in ms');
});

test('a sane client X-Request-Id is kept; one with other characters or too long is replaced', async () => {
  const apps = stubApps(tokens);
  const kept = await apps.public.request('/healthz', { headers: { 'x-request-id': 'client-abc_123=' } });
  assert.is(kept.headers.get('x-request-id'), 'client-abc_123=');
  for (const bad of ['has space', 'x'.repeat(129), 'semi;colon']) {
    const res = await apps.public.request('/healthz', { headers: { 'x-request-id': bad } });
    assert.match(res.headers.get('x-request-id') ?? '', UUID, JSON.stringify(bad));
  }
  assert.equal(apps.lines.filter((l) => l.msg === 'request').map((l) => l.fields.request_id)[0], 'client-abc_123=');
});

test('every line a request writes carries its request_id, and an admin request names its operator', async () => {
  const apps = stubApps(tokens);
  // The stub's halt switch cannot halt: the route throws, and the app's error handler logs it.
  const res = await apps.public.request('/admin/v1/halt', {
    method: 'POST',
    headers: { authorization: `Bearer ${admin}`, 'x-request-id': 'trace-7', 'content-type': 'application/json' },
    body: JSON.stringify({ reason: 'drill' }),
  });
  assert.is(res.status, 500);
  const failure = apps.lines.find((l) => l.msg === 'unhandled error in a route');
  assert.ok(failure !== undefined, JSON.stringify(apps.lines));
  assert.is(failure.fields.request_id, 'trace-7', 'the error line names its request');
  assert.ok(failure.fields.err instanceof Error, 'the error itself, for the err serializer');
  const access = apps.lines.find((l) => l.msg === 'request');
  assert.equal(
    [access?.fields.request_id, access?.fields.user, access?.fields.route, access?.fields.status],
    ['trace-7', 'ops-alice', '/admin/v1/halt', 500],
  );
});

test('an error is written by pino err serializer: type, message and stack', () => {
  const lines: string[] = [];
  const log = createLogger({ level: 'info', name: 'test', write: (line) => lines.push(line) });
  log.child({ request_id: 'r1' }).error('it broke', { err: new TypeError('bad thing') });
  const line = JSON.parse(lines[0] ?? '{}') as { request_id?: string; err?: { type?: string; message?: string; stack?: string } };
  assert.equal([line.request_id, line.err?.type, line.err?.message], ['r1', 'TypeError', 'bad thing']);
  assert.match(line.err?.stack ?? '', /TypeError: bad thing/);
});

test('readable lines are for development: production refuses LOG_FORMAT=pretty and writes JSON on auto', () => {
  const production = { NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) };
  assert.throws(
    () => loadConfig({ ...production, LOG_FORMAT: 'pretty' }),
    (e: unknown) => e instanceof ConfigError && /LOG_FORMAT=pretty is for development/.test(e.message),
  );
  assert.is(loadConfig({ ...production, LOG_FORMAT: 'auto' }).logFormat, 'json');
  assert.is(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
});

test.run();
