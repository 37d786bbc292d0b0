// Proves a process answers clients only while it can prove it owns the ledger: with its lease standing by, or its owner lock not held, every answer but GET /healthz and GET /readyz (reads, a transfer, a new transfer, admin reads, /metrics) is 503 OWNER_LEASE_UNPROVEN with `owner: false` and nothing behind the gate is asked, /readyz is 503 with `owner: false` and why, and a proven lease answers as ever.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signJwt } from '../../src/http/auth/jwt.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import type { LeaseState } from '../../src/ownership/lease.js';
import { stubApps, type StubApps } from '../support/app.js';
import { TEST_JWT_SECRET } from '../support/service.js';

const exp = () => Math.floor(Date.now() / 1000) + 600;
const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });
const user = signJwt({ sub: '42', exp: exp() }, TEST_JWT_SECRET);
const admin = signJwt({ sub: 'ops', exp: exp(), role: 'admin' }, TEST_JWT_SECRET);
const REQ_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

type Answer = { readonly status: number; readonly body: Record<string, unknown> };

/** Apps whose ownership is `held` and `lease`, counting every call that reaches a service behind the gate. */
function appsOwning(held: boolean, lease: LeaseState): { readonly apps: StubApps; readonly reached: string[] } {
  const reached: string[] = [];
  const reach = <T>(what: string, answer: T): T => {
    reached.push(what);
    return answer;
  };
  const apps = stubApps(tokens, {
    separateAdmin: true,
    deps: {
      ownerHeld: () => held,
      leaseState: () => lease,
      balances: { read: async () => reach('balances', { funding: [], spot: [] }) } as never,
      transfers: { get: async () => reach('transfer', null) } as never,
      alerts: { list: async () => reach('alerts', []), raise: async () => false } as never,
      metrics: async () => reach('metrics', '# metrics\n'),
    },
  });
  return { apps, reached };
}

async function ask(app: StubApps['public'], method: string, path: string, token?: string, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (token !== undefined) headers.authorization = `Bearer ${token}`;
  const res = await app.request(path, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  return {
    status: res.status,
    body: (res.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** Every kind of answer but the probes, on both listeners. */
async function everyAnswer(apps: StubApps): Promise<Record<string, Answer>> {
  const adminApp = apps.admin;
  assert.ok(adminApp !== null);
  const transfer = { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1', user_id: '42' };
  return {
    balances: await ask(apps.public, 'GET', '/api/v1/balances', user),
    transfer: await ask(apps.public, 'GET', `/api/v1/internal_transfer/${REQ_ID}`, user),
    newTransfer: await ask(apps.public, 'POST', '/api/v1/internal_transfer', user, transfer),
    adminAlerts: await ask(adminApp, 'GET', '/admin/v1/alerts', admin),
    metrics: await ask(adminApp, 'GET', '/metrics'),
  };
}

for (const [why, held, lease] of [
  ['the lease standing by', false, 'standing-by'],
  ['the owner lock not held', false, 'proven'],
] as const) {
  test(`owner gate: with ${why}, every answer but the probes is 503 OWNER_LEASE_UNPROVEN and nothing behind the gate is asked`, async () => {
    const { apps, reached } = appsOwning(held, lease);
    const answers = await everyAnswer(apps);
    for (const [name, a] of Object.entries(answers))
      assert.equal([a.status, a.body.code, a.body.owner, a.body.lease], [503, 'OWNER_LEASE_UNPROVEN', false, lease], name);
    assert.equal(reached, [], 'no service was asked');
    for (const app of [apps.public, apps.admin]) {
      assert.is((await ask(app as StubApps['public'], 'GET', '/healthz')).status, 200, 'alive');
      const ready = await ask(app as StubApps['public'], 'GET', '/readyz');
      assert.equal([ready.status, ready.body.owner, ready.body.lease], [503, false, lease], JSON.stringify(ready.body));
      assert.match(String(ready.body.owner_reason), lease === 'proven' ? /owner lock is not held/ : /lease is standing-by/);
    }
  });
}

test('owner gate: with the lock held and the lease proven, the same requests are answered and /readyz is 200', async () => {
  const { apps, reached } = appsOwning(true, 'proven');
  const answers = await everyAnswer(apps);
  assert.equal(
    Object.fromEntries(Object.entries(answers).map(([name, a]) => [name, a.status])),
    // The stub store has no such transfer, and knows no asset: the new transfer's checks refuse it.
    { balances: 200, transfer: 404, newTransfer: 400, adminAlerts: 200, metrics: 200 },
  );
  assert.equal(reached, ['balances', 'transfer', 'alerts', 'metrics']);
  const ready = await ask(apps.public, 'GET', '/readyz');
  assert.equal([ready.status, ready.body.owner, ready.body.lease, ready.body.owner_reason], [200, true, 'proven', null]);
});

test.run();
