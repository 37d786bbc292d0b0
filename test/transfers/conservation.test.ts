// Proves funds are conserved by every final state (INV-001, and INV-002 / INV-003: a failed or rolled-back transfer leaves the total as before and its source as it was) and the fund conservation check: exact on every judgement of a transfer between the two cuts and by its state, silent under concurrent load, catching a final state whose effects are wrong at the first check after the fault and halting new transfers, as when a balance changes behind the service's back in PostgreSQL or in UBSCore, with an alert for every check that finds differences not yet alerted (MON-003).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TransferStateName } from '../../src/domain/fsm.js';
import { STATE_IDS } from '../../src/domain/fsm.js';
import { FUNDING_OP_CODES } from '../../src/db/transfer-writes.js';
import { checkConservation, keyOf, type TransferFacts } from '../../src/invariant/conservation.js';
import { newReqId } from '../../src/http/req-ids.js';
import { deposit, fundsOf, transfer } from '../support/funds.js';
import { startTestService, type TestService } from '../support/service.js';

const K = keyOf(1n, 'USDT');
/** f: FUNDING effects in PostgreSQL's cut; s: SPOT effects by P; ever: SPOT effects applied at all (s when absent). */
const facts = (fromFunding: boolean, state: TransferStateName, f: string, s: string, ever = s): TransferFacts => ({
  reqId: 'R',
  userId: 1n,
  asset: 'USDT',
  amount: 10n,
  fromFunding,
  state,
  funding: { withdraw: f.includes('w'), deposit: f.includes('d'), refund: f.includes('r') },
  spotByCut: { withdraw: s.includes('w'), deposit: s.includes('d'), refund: s.includes('r') },
  spotEver: { withdraw: ever.includes('w'), deposit: ever.includes('d'), refund: ever.includes('r') },
});

test('table: each combination of state and effects across the two cuts is settled, in flight, crossing, or a violation', () => {
  // [facts, funding, spot, external, differences expected]
  const rows: Array<[TransferFacts, bigint, bigint, number, string]> = [
    [facts(true, 'INIT', '', ''), 100n, 0n, 0, 'F→S not started'],
    [facts(true, 'TARGET_PENDING', 'w', ''), 90n, 0n, 0, 'F→S debited, credit after P: in flight'],
    [facts(true, 'TARGET_PENDING', 'w', 'd'), 90n, 10n, 0, 'F→S credited, COMMITTED not yet written'],
    [facts(true, 'COMMITTED', 'w', 'd'), 90n, 10n, 0, 'F→S committed'],
    [facts(true, 'COMMITTED', 'w', '', 'd'), 90n, 0n, 0, 'F→S committed, credit after P: in flight at P'],
    [facts(true, 'ROLLED_BACK', 'wr', ''), 100n, 0n, 0, 'F→S rolled back'],
    [facts(true, 'FAILED', '', ''), 100n, 0n, 0, 'F→S failed'],
    [facts(true, 'TARGET_PENDING', '', 'd'), 100n, 10n, 2, 'F→S credit without debit'],
    [facts(true, 'ROLLED_BACK', 'wr', 'd'), 100n, 10n, 2, 'F→S credited and refunded'],
    // By state: each of these balances out if taken as in flight, so only the state can tell.
    [facts(true, 'COMMITTED', 'w', ''), 90n, 0n, 2, 'F→S COMMITTED without its SPOT credit'],
    [facts(true, 'ROLLED_BACK', 'w', ''), 90n, 0n, 2, 'F→S ROLLED_BACK without its FUNDING refund'],
    [facts(true, 'FAILED', 'w', ''), 90n, 0n, 2, 'F→S FAILED with a FUNDING debit'],
    [facts(true, 'COMPENSATING', 'w', '', 'd'), 90n, 0n, 2, 'F→S COMPENSATING though SPOT credited after P'],
    [facts(false, 'SOURCE_PENDING', '', ''), 0n, 100n, 0, 'S→F not started'],
    [facts(false, 'SOURCE_PENDING', '', 'w'), 0n, 90n, 0, 'S→F debited: in flight'],
    [facts(false, 'COMMITTED', 'd', 'w'), 10n, 90n, 0, 'S→F committed'],
    [facts(false, 'COMMITTED', 'd', '', 'w'), 10n, 100n, 0, 'S→F crossing: SPOT debit after P'],
    [facts(false, 'SOURCE_PENDING', 'd', ''), 10n, 100n, 2, 'S→F credit without any SPOT debit'],
    [facts(false, 'ROLLED_BACK', '', 'wr'), 0n, 100n, 0, 'S→F rolled back'],
    [facts(false, 'ROLLED_BACK', '', 'w', 'wr'), 0n, 90n, 0, 'S→F rolled back, refund after P: in flight at P'],
    [facts(false, 'FAILED', '', ''), 0n, 100n, 0, 'S→F failed'],
    [facts(false, 'SOURCE_PENDING', 'w', 'w'), 0n, 90n, 2, 'wrong-direction operation (and its account)'],
    [facts(false, 'ROLLED_BACK', '', 'w'), 0n, 90n, 2, 'S→F ROLLED_BACK without its SPOT refund'],
    [facts(false, 'COMMITTED', '', 'w'), 0n, 90n, 2, 'S→F COMMITTED without its FUNDING credit'],
    [facts(false, 'FAILED', '', 'w'), 0n, 90n, 2, 'S→F FAILED with a SPOT debit'],
  ];
  for (const [t, funding, spot, differences, name] of rows) {
    const result = checkConservation({
      funding: new Map([[K, funding]]),
      spot: new Map([[K, spot]]),
      external: new Map([[K, 100n]]),
      transfers: [t],
    });
    assert.is(
      result.differences.length,
      differences,
      `${name}: ${JSON.stringify(result.differences, (_k, v) => (typeof v === 'bigint' ? v.toString() : v))}`,
    );
  }
});

test('MON-003: the differences come in one order, by account, whatever order the reads returned', () => {
  const b = keyOf(7n, 'USDT');
  const a = keyOf(7n, 'BTC');
  const violating = { ...facts(true, 'COMMITTED', 'w', ''), userId: 7n, asset: 'USDT' };
  const result = checkConservation({
    funding: new Map([
      [b, 1n],
      [a, 1n],
    ]),
    spot: new Map(),
    external: new Map(),
    transfers: [violating],
  });
  assert.equal(
    result.differences.map((d) => [d.key, d.detail.includes(':')]),
    [
      [a, false],
      [b, true],
      [b, false],
    ],
  );
});

let svc: TestService;

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0', INVARIANT_INTERVAL_MS: '0' });
});

test.after(async () => {
  await svc.stop();
});

const invariant = () => svc.call('GET', '/admin/v1/invariant', { token: svc.adminToken() });

test('INV-001: after committed, failed and rolled-back transfers the check finds no difference (no false alarm on any final state)', async () => {
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

type Direction = { readonly from: 'FUNDING' | 'SPOT'; readonly to: 'FUNDING' | 'SPOT' };
const F_TO_S: Direction = { from: 'FUNDING', to: 'SPOT' };
const S_TO_F: Direction = { from: 'SPOT', to: 'FUNDING' };

/**
 * Makes a transfer the service ends in `state`, and holds the user's funds to INV-002 / INV-003:
 * both balances exactly as before (the total, and the source unchanged or fully restored), and the
 * conservation check finds nothing.
 */
async function endsAsBefore(userId: bigint, d: Direction, amount: string, state: TransferStateName, code: string): Promise<void> {
  const before = await fundsOf(svc, userId, 'USDT');
  const r = await transfer(svc, userId, { ...d, asset: 'USDT', amount });
  assert.is(r.body.state, state, JSON.stringify(r.body));
  const reqId = r.body.req_id as string;
  const stored = await svc.sql<{ error_code: string }[]>`SELECT error_code FROM transfers_tb WHERE req_id = ${reqId}`;
  assert.is(stored[0]?.error_code, code, 'the refusal that ended it');
  assert.equal(await fundsOf(svc, userId, 'USDT'), before, `${d.from}→${d.to} ${state}: both balances as before`);
  const ops = await svc.sql<
    { op: string }[]
  >`SELECT op FROM funding_operation_records WHERE req_id = ${reqId} AND outcome = 'APPLIED' ORDER BY op`;
  const expected = state === 'FAILED' ? [] : d.from === 'FUNDING' ? ['REFUND', 'WITHDRAW'] : [];
  assert.equal(
    ops.map((o) => o.op),
    expected,
    'FUNDING effects: none when failed; a debit and its refund when rolled back',
  );
  const check = await invariant();
  assert.equal([check.body.ok, check.body.differences], [true, []], JSON.stringify(check.body));
}

test('INV-002: a transfer failed at its source or target account leaves the total as before and its source unchanged', async () => {
  await deposit(svc, 1241n, 'FUNDING', 'USDT', '10', 'inv2-f');
  await deposit(svc, 1241n, 'SPOT', 'USDT', '10', 'inv2-s');
  await endsAsBefore(1241n, F_TO_S, '10.5', 'FAILED', 'INSUFFICIENT_BALANCE');
  await endsAsBefore(1241n, S_TO_F, '10.5', 'FAILED', 'INSUFFICIENT_BALANCE');
  // No FUNDING account for the asset: refused before the SPOT debit.
  await deposit(svc, 1242n, 'SPOT', 'USDT', '10', 'inv2-s-only');
  await endsAsBefore(1242n, S_TO_F, '4', 'FAILED', 'TARGET_ACCOUNT_NOT_FOUND');
  // A frozen source with the funds to pay: only the refusal keeps them where they are.
  for (const account of ['FUNDING', 'SPOT']) {
    const r = await svc.call('POST', '/admin/v1/account_status', {
      token: svc.adminToken(),
      body: { user_id: '1241', account, asset: 'USDT', status: 'FROZEN' },
    });
    assert.is(r.status, 200, JSON.stringify(r.body));
  }
  await endsAsBefore(1241n, F_TO_S, '4', 'FAILED', 'ACCOUNT_FROZEN');
  await endsAsBefore(1241n, S_TO_F, '4', 'FAILED', 'ACCOUNT_FROZEN');
});

test('INV-003: a transfer rolled back after its source was debited leaves the total as before and its source fully restored', async () => {
  // A target whose balance is at its limit refuses the credit explicitly (OVERFLOW), after the
  // source was debited: the transfer is compensated. Each side in turn is the full one.
  for (let i = 0; i < 5; i++) await deposit(svc, 1243n, 'SPOT', 'USDT', '18446744073.70955161', `inv3-big-s-${i}`);
  await deposit(svc, 1243n, 'FUNDING', 'USDT', '1', 'inv3-f');
  await endsAsBefore(1243n, F_TO_S, '0.0000001', 'ROLLED_BACK', 'OVERFLOW');
  for (let i = 0; i < 5; i++) await deposit(svc, 1244n, 'FUNDING', 'USDT', '18446744073.70955161', `inv3-big-f-${i}`);
  await deposit(svc, 1244n, 'SPOT', 'USDT', '1', 'inv3-s');
  await endsAsBefore(1244n, S_TO_F, '0.0000001', 'ROLLED_BACK', 'OVERFLOW');
});

/**
 * A transfer written behind the service in a final state with the FUNDING side exactly as that
 * state's path leaves it up to the fault: the funds it lacks then look like funds in flight, so
 * only a judgement by state finds it, and it must be found by the first check. Its updated_at is
 * a minute ahead, as if it were written while the check ran: the check then judges it on its own
 * (one written before the check began is also caught, by its account's totals).
 */
async function injectFinal(userId: bigint, state: TransferStateName, ops: readonly ('WITHDRAW' | 'REFUND')[]): Promise<string> {
  const reqId = newReqId();
  const amount = 700_000_000n;
  await svc.sql.begin(async (tx) => {
    await tx`INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state) VALUES (${reqId}, ${userId}, 'USDT', ${amount}, 1, 1, 2, ${STATE_IDS[state]})`;
    await tx`UPDATE transfers_tb SET updated_at = now() + interval '1 minute' WHERE req_id = ${reqId}`;
    for (const op of ops) {
      await tx`INSERT INTO funding_operations (transfer_id, op) SELECT transfer_id, ${FUNDING_OP_CODES[op]} FROM transfers_tb WHERE req_id = ${reqId}`;
      await tx`UPDATE funding_balances SET available = available + ${op === 'WITHDRAW' ? -amount : amount} WHERE user_id = ${userId} AND asset = 'USDT'`;
    }
  });
  return reqId;
}

const faults: Array<[string, bigint, TransferStateName, ('WITHDRAW' | 'REFUND')[]]> = [
  ['MON-003: a COMMITTED transfer missing its SPOT credit', 1231n, 'COMMITTED', ['WITHDRAW']],
  ['MON-003: a ROLLED_BACK transfer missing its FUNDING refund', 1232n, 'ROLLED_BACK', ['WITHDRAW']],
  ['MON-003: a FAILED transfer that debited FUNDING', 1233n, 'FAILED', ['WITHDRAW']],
];
for (const [name, userId, state, ops] of faults) {
  test(`${name} is a difference at the first check after it, and halts`, async () => {
    await deposit(svc, userId, 'FUNDING', 'USDT', '10', `inv-fault-${userId}`);
    assert.is((await invariant()).body.ok, true, 'clean before the fault');
    const reqId = await injectFinal(userId, state, ops);
    const r = await invariant();
    assert.is(r.body.ok, false, JSON.stringify(r.body));
    const differences = r.body.differences as { account: string; detail: string }[];
    assert.ok(differences.length > 0 && differences.every((d) => d.account === `${userId}/USDT`), JSON.stringify(differences));
    assert.ok(
      differences.some((d) => d.detail.startsWith(`${reqId}: ${state}`)),
      `the transfer is named with its state: ${JSON.stringify(differences)}`,
    );
    assert.is(r.body.halted, true);
    // Put it right (the transfer becomes what its effects say) and resume for the next case.
    await svc.sql`DELETE FROM funding_operations WHERE transfer_id = (SELECT transfer_id FROM transfers_tb WHERE req_id = ${reqId})`;
    await svc.sql`UPDATE funding_balances SET available = available + 700000000 WHERE user_id = ${userId} AND asset = 'USDT'`;
    await svc.sql`UPDATE transfers_tb SET state = ${STATE_IDS.FAILED} WHERE req_id = ${reqId}`;
    assert.is((await invariant()).body.ok, true, 'clean once put right');
    await svc.call('POST', '/admin/v1/resume', { token: svc.adminToken() });
  });
}

test('no false alarm: checks during a concurrent load of transfers in both directions find no difference', async () => {
  const users = [1211n, 1212n, 1213n, 1214n];
  for (const u of users) {
    await deposit(svc, u, 'FUNDING', 'USDT', '1000', `load-f-${u}`);
    await deposit(svc, u, 'SPOT', 'USDT', '1000', `load-s-${u}`);
  }
  let running = true;
  const clients = users.flatMap((u) =>
    [true, false].map(async (fromFunding) => {
      while (running)
        await transfer(svc, u, {
          from: fromFunding ? 'FUNDING' : 'SPOT',
          to: fromFunding ? 'SPOT' : 'FUNDING',
          asset: 'USDT',
          amount: '1.5',
        });
    }),
  );
  const reports = [];
  for (let i = 0; i < 8; i++) reports.push((await invariant()).body);
  running = false;
  await Promise.all(clients);
  for (const r of reports) assert.equal(r.differences, [], JSON.stringify(r));
  assert.ok(
    reports.some((r) => Number(r.transfers_examined) > 0),
    'the checks saw transfers in their window',
  );
  assert.equal((await invariant()).body.differences, []);
});

test('MON-003: a FUNDING balance changed behind the service: CRITICAL alert, new transfers 503 SERVICE_HALTED, reads go on, resume lifts it', async () => {
  await deposit(svc, 1221n, 'FUNDING', 'USDT', '10', 'mon3-f');
  await svc.sql`UPDATE funding_balances SET available = available + 1 WHERE user_id = 1221 AND asset = 'USDT'`;
  const r = await invariant();
  assert.is(r.body.ok, false);
  assert.equal(
    (r.body.differences as { account: string }[]).map((d) => d.account),
    ['1221/USDT'],
  );
  assert.is(r.body.halted, true);
  const refused = await transfer(svc, 1221n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' });
  assert.equal([refused.status, refused.body.code], [503, 'SERVICE_HALTED']);
  assert.is((await svc.call('GET', '/api/v1/balances', { token: svc.userToken(1221) })).status, 200, 'reads go on');
  assert.is((await svc.call('GET', '/readyz')).status, 503);
  const alerts = await svc.call('GET', '/admin/v1/alerts', { token: svc.adminToken() });
  assert.ok(
    (alerts.body.alerts as { kind: string; severity: string }[]).some(
      (a) => a.kind === 'CONSERVATION_VIOLATION' && a.severity === 'CRITICAL',
    ),
  );
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
  assert.equal(
    (r.body.differences as { account: string; actual_units: string; expected_units: string }[]).map((d) => [
      d.account,
      d.actual_units,
      d.expected_units,
    ]),
    [['1222/USDT', '500000000', '0']],
  );
  const stored = await svc.sql`SELECT value FROM service_state WHERE key = 'halt'`;
  assert.is(stored.length, 1, 'the halt is stored, so a restart keeps it');
  await svc.sql`INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state) VALUES ('mon3-s', 'DEPOSIT', 1222, 'SPOT', 'USDT', 500000000, 'DONE')`;
  assert.is((await invariant()).body.ok, true);
  await svc.call('POST', '/admin/v1/resume', { token: svc.adminToken() });
});

test('MON-003: every failing check alerts, halted or not, once per set of differences: a second difference during the halt is raised, a standing one is not', async () => {
  const alerts = async () =>
    (
      await svc.sql<{ details: { differences: { key: string }[] } }[]>`
      SELECT details FROM alerts WHERE kind = 'CONSERVATION_VIOLATION' ORDER BY id`
    ).map((a) => a.details.differences.map((d) => d.key));
  const poke = (userId: number, units: number) =>
    svc.sql`UPDATE funding_balances SET available = available + ${units} WHERE user_id = ${userId} AND asset = 'USDT'`;
  await deposit(svc, 1223n, 'FUNDING', 'USDT', '10', 'mon3-a');
  await deposit(svc, 1224n, 'FUNDING', 'USDT', '10', 'mon3-b');
  const before = (await alerts()).length;
  const raised = async () => (await alerts()).slice(before);
  await poke(1223, 1);
  assert.is((await invariant()).body.halted, true);
  assert.is((await invariant()).body.ok, false);
  assert.equal(await raised(), [['1223/USDT']], 'the halting check alerts; the same difference again does not');
  await poke(1224, 1);
  assert.is((await invariant()).body.ok, false);
  await invariant();
  assert.equal(await raised(), [['1223/USDT'], ['1223/USDT', '1224/USDT']], 'a second difference while halted is a new alert, once');
  await poke(1223, 1);
  await invariant();
  assert.is((await raised()).length, 3, 'a difference that grew is a new alert');
  await poke(1223, -2);
  await poke(1224, -1);
  assert.is((await invariant()).body.ok, true);
  await poke(1223, 2);
  await poke(1224, 1);
  await invariant();
  assert.equal((await raised())[3], ['1223/USDT', '1224/USDT'], 'after a passing check the same differences alert again');
  await poke(1223, -2);
  await poke(1224, -1);
  assert.is((await invariant()).body.ok, true);
  await svc.call('POST', '/admin/v1/resume', { token: svc.adminToken() });
});

test.run();
