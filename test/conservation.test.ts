// Proves the fund conservation check: exact on every judgement of a transfer between the two cuts, silent under concurrent load (INV-001..003), and halting new transfers when a balance changes behind the service's back in PostgreSQL or in UBSCore (MON-003).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkConservation, keyOf, type TransferFacts } from '../src/invariant/conservation.js';
import { deposit, transfer } from './support/funds.js';
import { startTestService, type TestService } from './support/service.js';

const K = keyOf(1n, 'USDT');
const facts = (fromFunding: boolean, f: string, s: string, ever = s.includes('w')): TransferFacts => ({
  reqId: 'R', userId: 1n, asset: 'USDT', amount: 10n, fromFunding,
  funding: { withdraw: f.includes('w'), deposit: f.includes('d'), refund: f.includes('r') },
  spotByCut: { withdraw: s.includes('w'), deposit: s.includes('d'), refund: s.includes('r') },
  spotWithdrawEver: ever,
});

test('table: each combination of effects across the two cuts is settled, in flight, crossing, or a violation', () => {
  // [facts, funding, spot, external, differences expected]
  const rows: Array<[TransferFacts, bigint, bigint, number, string]> = [
    [facts(true, '', ''), 100n, 0n, 0, 'F→S not started'],
    [facts(true, 'w', ''), 90n, 0n, 0, 'F→S debited, credit after P: in flight'],
    [facts(true, 'w', 'd'), 90n, 10n, 0, 'F→S committed'],
    [facts(true, 'wr', ''), 100n, 0n, 0, 'F→S rolled back'],
    [facts(true, '', 'd'), 100n, 10n, 2, 'F→S credit without debit'],
    [facts(true, 'wr', 'd'), 100n, 10n, 2, 'F→S credited and refunded'],
    [facts(false, '', '', false), 0n, 100n, 0, 'S→F not started'],
    [facts(false, '', 'w'), 0n, 90n, 0, 'S→F debited: in flight'],
    [facts(false, 'd', 'w'), 10n, 90n, 0, 'S→F committed'],
    [facts(false, 'd', '', true), 10n, 100n, 0, 'S→F crossing: SPOT debit after P'],
    [facts(false, 'd', '', false), 10n, 100n, 2, 'S→F credit without any SPOT debit'],
    [facts(false, '', 'wr'), 0n, 100n, 0, 'S→F rolled back'],
    [facts(false, 'w', 'w'), 0n, 90n, 2, 'wrong-direction operation (and its account)'],
  ];
  for (const [t, funding, spot, differences, name] of rows) {
    const result = checkConservation({ funding: new Map([[K, funding]]), spot: new Map([[K, spot]]), external: new Map([[K, 100n]]), transfers: [t] });
    assert.is(result.differences.length, differences, `${name}: ${JSON.stringify(result.differences, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`);
  }
});

let svc: TestService;

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0', INVARIANT_INTERVAL_MS: '0' });
});

test.after(async () => {
  await svc.stop();
});

const invariant = () => svc.call('GET', '/admin/v1/invariant', { token: svc.adminToken() });

test('INV-001 / INV-002 / INV-003: after committed, failed and rolled-back transfers the check finds no difference', async () => {
  await deposit(svc, 1201n, 'FUNDING', 'USDT', '100', 'inv-f');
  await deposit(svc, 1201n, 'SPOT', 'USDT', '100', 'inv-s');
  assert.is((await transfer(svc, 1201n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '30' })).body.state, 'COMMITTED');
  assert.is((await transfer(svc, 1201n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '500' })).body.state, 'FAILED');
  // A SPOT credit that would overflow is refused explicitly: the transfer is compensated.
  for (let i = 0; i < 5; i++) await deposit(svc, 1202n, 'SPOT', 'USDT', '18446744073.70955161', `inv-big-${i}`);
  await deposit(svc, 1202n, 'FUNDING', 'USDT', '1', 'inv-small');
  const rolled = await transfer(svc, 1202n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '0.0000001' });
  assert.is(rolled.body.state, 'ROLLED_BACK', JSON.stringify(rolled.body));
  const r = await invariant();
  assert.is(r.status, 200);
  assert.equal(r.body.differences, []);
  assert.is(r.body.ok, true);
  assert.is(r.body.accounts_checked, 2, 'one (user, asset) pair per user');
});

test('no false alarm: checks during a concurrent load of transfers in both directions find no difference', async () => {
  const users = [1211n, 1212n, 1213n, 1214n];
  for (const u of users) {
    await deposit(svc, u, 'FUNDING', 'USDT', '1000', `load-f-${u}`);
    await deposit(svc, u, 'SPOT', 'USDT', '1000', `load-s-${u}`);
  }
  let running = true;
  const clients = users.flatMap((u) => [true, false].map(async (fromFunding) => {
    while (running) await transfer(svc, u, { from: fromFunding ? 'FUNDING' : 'SPOT', to: fromFunding ? 'SPOT' : 'FUNDING', asset: 'USDT', amount: '1.5' });
  }));
  const reports = [];
  for (let i = 0; i < 8; i++) reports.push((await invariant()).body);
  running = false;
  await Promise.all(clients);
  for (const r of reports) assert.equal(r.differences, [], JSON.stringify(r));
  assert.ok(reports.some((r) => Number(r.transfers_examined) > 0), 'the checks saw transfers in their window');
  assert.equal((await invariant()).body.differences, []);
});

test('MON-003: a FUNDING balance changed behind the service: CRITICAL alert, new transfers 503 SERVICE_HALTED, reads go on, resume lifts it', async () => {
  await deposit(svc, 1221n, 'FUNDING', 'USDT', '10', 'mon3-f');
  await svc.sql`UPDATE funding_balances SET available = available + 1 WHERE user_id = 1221 AND asset = 'USDT'`;
  const r = await invariant();
  assert.is(r.body.ok, false);
  assert.equal((r.body.differences as { account: string }[]).map((d) => d.account), ['1221/USDT']);
  assert.is(r.body.halted, true);
  const refused = await transfer(svc, 1221n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
  assert.equal([refused.status, refused.body.code], [503, 'SERVICE_HALTED']);
  assert.is((await svc.call('GET', '/api/v1/balances', { token: svc.userToken(1221) })).status, 200, 'reads go on');
  assert.is((await svc.call('GET', '/readyz')).status, 503);
  const alerts = await svc.call('GET', '/admin/v1/alerts', { token: svc.adminToken() });
  assert.ok((alerts.body.alerts as { kind: string; severity: string }[]).some((a) => a.kind === 'CONSERVATION_VIOLATION' && a.severity === 'CRITICAL'));
  await svc.sql`UPDATE funding_balances SET available = available - 1 WHERE user_id = 1221 AND asset = 'USDT'`;
  assert.is((await invariant()).body.ok, true);
  assert.is((await svc.call('POST', '/admin/v1/resume', { token: svc.adminToken() })).body.was_halted, true);
  assert.is((await transfer(svc, 1221n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })).body.state, 'COMMITTED');
  assert.is((await svc.call('GET', '/readyz')).status, 200);
});

test('MON-003: SPOT funds UBSCore holds without a ledger entry are found, and the halt survives a restart of the checker state', async () => {
  await deposit(svc, 1222n, 'SPOT', 'USDT', '5', 'mon3-s');
  // Behind the service: erase the ledger entry of a credit UBSCore applied.
  await svc.sql`DELETE FROM external_movements WHERE ref = 'mon3-s'`;
  const r = await invariant();
  assert.equal((r.body.differences as { account: string; actual_units: string; expected_units: string }[]).map((d) => [d.account, d.actual_units, d.expected_units]), [['1222/USDT', '500000000', '0']]);
  const stored = await svc.sql`SELECT value FROM service_state WHERE key = 'halt'`;
  assert.is(stored.length, 1, 'the halt is stored, so a restart keeps it');
  await svc.sql`INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state) VALUES ('mon3-s', 'DEPOSIT', 1222, 'SPOT', 'USDT', 500000000, 'DONE')`;
  assert.is((await invariant()).body.ok, true);
  await svc.call('POST', '/admin/v1/resume', { token: svc.adminToken() });
});

test.run();
