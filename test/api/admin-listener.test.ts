// Proves that with ADMIN_PORT the admin routes and /metrics answer only on the admin listener while the public one answers 404 NOT_FOUND for them (and the reverse for the user routes), that without it everything stays on one listener, and that a stop closes both listeners.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../src/config/config.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { stubApps } from '../support/app.js';
import { startTestService, TEST_JWT_SECRET } from '../support/service.js';

const exp = () => Math.floor(Date.now() / 1000) + 600;
const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });
const admin = signJwt({ sub: 'ops-alice', exp: exp(), role: 'admin' }, TEST_JWT_SECRET);
const user = signJwt({ sub: '5', exp: exp() }, TEST_JWT_SECRET);

async function get(
  app: { request: (p: string, init?: RequestInit) => Response | Promise<Response> },
  route: string,
  token?: string,
): Promise<{ status: number; code: unknown }> {
  const response = await app.request(route, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
  const text = await response.text();
  return { status: response.status, code: text.startsWith('{') ? (JSON.parse(text) as { code?: unknown }).code : undefined };
}

test('route level: with a separate admin app, /admin/v1 and /metrics are 404 on the public app and served by the admin app', async () => {
  const apps = stubApps(tokens, { separateAdmin: true });
  assert.ok(apps.admin !== null);
  assert.equal(await get(apps.public, '/admin/v1/alerts', admin), { status: 404, code: 'NOT_FOUND' });
  assert.equal(await get(apps.public, '/admin/v1/alerts'), { status: 404, code: 'NOT_FOUND' }, 'not even a 401 hints that it exists');
  assert.equal(await get(apps.public, '/metrics'), { status: 404, code: 'NOT_FOUND' });
  assert.is((await get(apps.admin, '/admin/v1/alerts', admin)).status, 200);
  assert.is((await get(apps.admin, '/metrics')).status, 200);
  assert.equal(await get(apps.admin, '/api/v1/balances', user), { status: 404, code: 'NOT_FOUND' }, 'user routes are public only');
  assert.is((await get(apps.public, '/api/v1/balances', user)).status, 200);
  for (const probe of ['/healthz', '/readyz']) {
    assert.is((await get(apps.public, probe)).status, 200);
    assert.is((await get(apps.admin, probe)).status, 200);
  }
});

test('route level: without ADMIN_PORT one app serves everything, as before', async () => {
  const apps = stubApps(tokens);
  assert.is(apps.admin, null);
  assert.is((await get(apps.public, '/admin/v1/alerts', admin)).status, 200);
  assert.is((await get(apps.public, '/metrics')).status, 200);
});

test('configuration: ADMIN_PORT is checked, ADMIN_HOST defaults to loopback', () => {
  const base = { JWT_SECRET: TEST_JWT_SECRET };
  assert.is(loadConfig(base).adminPort, null);
  assert.is(loadConfig({ ...base, ADMIN_PORT: '9090' }).adminHost, '127.0.0.1');
  assert.throws(() => loadConfig({ ...base, ADMIN_PORT: 'x' }), /ADMIN_PORT must be a whole number/);
  assert.throws(() => loadConfig({ ...base, ADMIN_PORT: '70000' }), /ADMIN_PORT must be between/);
  assert.throws(() => loadConfig({ ...base, PORT: '9090', ADMIN_PORT: '9090' }), /ADMIN_PORT must differ from PORT/);
});

test('sockets: the real service with ADMIN_PORT=0 serves admin routes and /metrics on its admin port only, and its stop closes both listeners', async () => {
  const svc = await startTestService({ ADMIN_PORT: '0' });
  const adminBase = svc.adminBase;
  let stopped = false;
  try {
    assert.ok(adminBase !== null && adminBase !== svc.base);
    const call = async (base: string, route: string, token?: string) => {
      const r = await fetch(base + route, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } });
      await r.arrayBuffer();
      return r.status;
    };
    assert.is(await call(adminBase, '/admin/v1/alerts', svc.adminToken()), 200);
    assert.is(await call(adminBase, '/metrics'), 200);
    assert.is(await call(svc.base, '/admin/v1/alerts', svc.adminToken()), 404);
    assert.is(await call(svc.base, '/admin/v1/invariant', svc.adminToken()), 404);
    assert.is(await call(svc.base, '/metrics'), 404);
    assert.is(await call(svc.base, '/api/v1/balances', svc.userToken(5)), 200);
    assert.is(await call(adminBase, '/api/v1/balances', svc.userToken(5)), 404);
    await svc.stop();
    stopped = true;
    for (const base of [svc.base, adminBase]) {
      const refused = await fetch(`${base}/healthz`).then(
        () => false,
        () => true,
      );
      assert.ok(refused, `${base} is closed after the stop`);
    }
  } finally {
    if (!stopped) await svc.stop();
  }
});

test.run();
