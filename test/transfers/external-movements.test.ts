// Proves external deposits and withdrawals on both sides are idempotent by ref, checked like any debit, and recorded in the external ledger.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fundsOf } from '../support/funds.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
const COIN = 10n ** 8n;

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0' });
});

test.after(async () => {
  await svc.stop();
});

const move = (path: string, body: Record<string, unknown>) => svc.call('POST', `/admin/v1/${path}`, { token: svc.adminToken(), body });

test('withdraw from FUNDING and SPOT: applied once per ref, refused when short, frozen or missing', async () => {
  for (const account of ['FUNDING', 'SPOT']) {
    assert.is((await move('deposit', { user_id: '950', account, asset: 'USDT', amount: '10', ref: `ext-d-${account}` })).status, 200);
    const body = { user_id: '950', account, asset: 'USDT', amount: '4', ref: `ext-w-${account}` };
    const first = await move('withdraw', body);
    const again = await move('withdraw', body);
    assert.equal([first.status, again.status, again.body.duplicate], [200, 200, true]);
    const other = await move('withdraw', { ...body, amount: '5' });
    assert.equal([other.status, other.body.code], [409, 'DUPLICATE_REQUEST']);
    const short = await move('withdraw', { ...body, amount: '7', ref: `ext-short-${account}` });
    assert.equal([short.status, short.body.code], [422, 'INSUFFICIENT_BALANCE']);
    const shortAgain = await move('withdraw', { ...body, amount: '7', ref: `ext-short-${account}` });
    assert.is(shortAgain.body.code, 'INSUFFICIENT_BALANCE', 'a refused ref answers the same refusal');
    const missing = await move('withdraw', { ...body, user_id: '951', ref: `ext-missing-${account}` });
    assert.is(missing.body.code, 'SOURCE_ACCOUNT_NOT_FOUND');
  }
  await svc.call('POST', '/admin/v1/account_status', {
    token: svc.adminToken(),
    body: { user_id: '950', account: 'SPOT', asset: 'USDT', status: 'FROZEN' },
  });
  const frozen = await move('withdraw', { user_id: '950', account: 'SPOT', asset: 'USDT', amount: '1', ref: 'ext-frozen' });
  assert.is(frozen.body.code, 'ACCOUNT_FROZEN');
  assert.equal(await fundsOf(svc, 950n, 'USDT'), { funding: 6n * COIN, spot: 6n * COIN });
  const ledger = await svc.sql<{ kind: string; account: string; state: string; n: number }[]>`
    SELECT kind, account, state, count(*)::int AS n FROM external_movements WHERE user_id = 950 GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`;
  assert.equal(
    ledger.map((r) => `${r.kind}/${r.account}/${r.state}/${r.n}`),
    [
      'DEPOSIT/FUNDING/DONE/1',
      'DEPOSIT/SPOT/DONE/1',
      'WITHDRAW/FUNDING/DONE/1',
      'WITHDRAW/FUNDING/REJECTED/1',
      'WITHDRAW/SPOT/DONE/1',
      'WITHDRAW/SPOT/REJECTED/2',
    ],
  );
});

test.run();
