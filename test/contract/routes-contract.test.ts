// Proves two promises of the client contract through the app with its services stubbed: a
// history filtered by state=PENDING, the state answers show for an unfinished transfer, asks for
// every state that is not final; and a 500 from an exception thrown after a transfer was given
// its req_id still names that req_id, as the OpenAPI document says, so a client can ask what
// became of the transfer instead of sending it again.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TransferView } from '../../src/domain/transfer.js';
import type { Asset } from '../../src/domain/asset.js';
import type { ListQuery } from '../../src/db/transfers.js';
import { isTerminal, STATE_NAMES } from '../../src/domain/fsm.js';
import type { AppDeps } from '../../src/http/deps.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { openApiDocument } from '../../src/http/openapi/document.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { stubApps } from '../support/app.js';
import { answerProblem, schemaValidator } from './openapi-check.js';
import { TEST_JWT_SECRET } from '../support/service.js';

const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });
const user = signJwt({ sub: '42', exp: Math.floor(Date.now() / 1000) + 600 }, TEST_JWT_SECRET);
const auth = { authorization: `Bearer ${user}`, 'content-type': 'application/json' };

const USDT: Asset = {
  symbol: 'USDT',
  precision: 6,
  minTransferUnits: 1n,
  maxTransferUnits: 10n ** 12n,
  status: 'ACTIVE',
  internalTransferEnabled: true,
  dailyAmountLimitUnits: null,
};

const moving: TransferView = {
  transferId: '7',
  reqId: '01M85SM5VW0H1XVWTCX66YP1H9',
  userId: 42n,
  from: 'FUNDING',
  to: 'SPOT',
  asset: 'USDT',
  amount: 1_500_000n,
  state: 'TARGET_PENDING',
  errorCode: null,
  retryCount: 0,
  attempts: 0,
  createdAt: '2026-11-24T03:29:37.665Z',
  updatedAt: '2026-11-24T03:29:37.682Z',
};

test('GET ?state=PENDING asks for every state that is not final, and shows each as PENDING', async () => {
  const asked: ListQuery[] = [];
  const list = async (q: ListQuery) => {
    asked.push(q);
    return [moving];
  };
  const apps = stubApps(tokens, { deps: { transfers: { list }, assets: { get: async () => USDT } } as unknown as Partial<AppDeps> });
  const res = await apps.public.request('/api/v1/internal_transfer?state=PENDING', { headers: auth });
  assert.is(res.status, 200);
  const body = (await res.json()) as { items: { state: string; internal_state: string }[] };
  assert.equal(
    body.items.map((t) => [t.state, t.internal_state]),
    [['PENDING', 'TARGET_PENDING']],
  );
  assert.equal(
    asked[0]?.state,
    STATE_NAMES.filter((s) => !isTerminal(s)),
  );
  assert.equal(asked[0]?.state, ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'TARGET_PENDING', 'COMPENSATING']);
  const one = await apps.public.request('/api/v1/internal_transfer?state=COMPENSATING', { headers: auth });
  assert.is(one.status, 200);
  assert.equal(asked[1]?.state, ['COMPENSATING'], 'a state of the machine is itself alone');
});

test('a 500 from an exception after the req_id was given carries that req_id, as the document says', async () => {
  const given: string[] = [];
  const submit = async (t: { reqId: string }) => {
    given.push(t.reqId);
    throw new Error('the mailbox is full and recording the transfer failed');
  };
  const apps = stubApps(tokens, { deps: { submit, assets: { get: async () => USDT } } as unknown as Partial<AppDeps> });
  const res = await apps.public.request('/api/v1/internal_transfer', {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1.5' }),
  });
  assert.is(res.status, 500);
  const body = (await res.json()) as Record<string, unknown>;
  assert.is(given.length, 1, 'the route reached submit');
  assert.equal(body, { code: 'SYSTEM_ERROR', message: body.message, req_id: given[0] });
  const doc = openApiDocument();
  assert.is(answerProblem(doc, schemaValidator(doc), 'POST', '/api/v1/internal_transfer', 500, body), null);
});

test('a 500 before any transfer was given a req_id names none', async () => {
  const read = async () => {
    throw new Error('the balances could not be read');
  };
  const apps = stubApps(tokens, { deps: { balances: { read } } as unknown as Partial<AppDeps> });
  const res = await apps.public.request('/api/v1/balances', { headers: auth });
  assert.is(res.status, 500);
  assert.equal(await res.json(), { code: 'SYSTEM_ERROR', message: 'Internal failure; retry later' });
});

test.run();
