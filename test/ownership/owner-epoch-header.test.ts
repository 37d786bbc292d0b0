// Proves that every answer of the service names the owner epoch of the process that made it
// (x-owner-epoch), whatever made the answer: a probe, a route, an authentication refusal, an unknown
// path, the owner gate's 503; and that the epoch is read as the answer leaves, so an answer made
// after the process claimed a new epoch names the new one. `none` while the process has no epoch,
// and on every answer of a standby's listener (it has claimed none).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { listenStandby } from '../../src/compose/standby.js';
import { OWNER_EPOCH_HEADER } from '../../src/http/middleware/owner-epoch.js';
import { stubApps } from '../support/app.js';
import { TEST_JWT_SECRET } from '../support/service.js';

const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });

test('every kind of answer carries the epoch of the answering process', async () => {
  let epoch: number | null = 7;
  let held = true;
  const apps = stubApps(tokens, { deps: { ownerEpoch: () => epoch, ownerHeld: () => held } });
  const ask = (path: string, init?: RequestInit) => apps.public.request(path, init);
  const answers = [
    await ask('/healthz'),
    await ask('/readyz'),
    await ask('/api/v1/balances'),
    await ask('/no/such/route'),
    await ask('/api/v1/internal_transfer', { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } }),
  ];
  assert.equal(
    answers.map((r) => [r.status, r.headers.get(OWNER_EPOCH_HEADER)]),
    answers.map((r) => [r.status, '7']),
  );
  held = false;
  const gated = await ask('/api/v1/internal_transfer', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  assert.is(gated.status, 503, 'the owner gate refuses while the lock is not held');
  assert.is(gated.headers.get(OWNER_EPOCH_HEADER), '7');
  held = true;
  epoch = 8;
  assert.is((await ask('/healthz')).headers.get(OWNER_EPOCH_HEADER), '8', 'read as the answer leaves, not when the app was made');
  epoch = null;
  assert.is((await ask('/healthz')).headers.get(OWNER_EPOCH_HEADER), 'none');
});

test("a standby's listener names no epoch on any answer", async () => {
  const lag = { lag_records: 0, lag_ms: 0, applied_seq: 0 };
  const listener = await listenStandby(
    { port: 0, host: '127.0.0.1' },
    () => lag,
    async () => '# metrics\n',
  );
  try {
    for (const path of ['/healthz', '/readyz', '/metrics', '/api/v1/balances']) {
      const r = await fetch(`http://127.0.0.1:${listener.port}${path}`);
      await r.text();
      assert.is(r.headers.get(OWNER_EPOCH_HEADER), 'none', path);
    }
  } finally {
    await listener.close();
  }
});

test.run();
