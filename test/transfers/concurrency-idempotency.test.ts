// Proves races and repeats never move funds twice (CON-001..004, IDP-001..004) and the fund anomalies of spec 000 §10.8 cannot happen (FND-001, FND-003..006), each ending with exact conservation.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { composeShard } from '../../src/coordinator/compose.js';
import type { CrashPoint } from '../../src/faults/crash-points.js';
import type { StepResult } from '../../src/coordinator/driver.js';
import type { NewTransfer, TransferView } from '../../src/domain/transfer.js';
import { STATE_IDS, type TransferStateName } from '../../src/domain/fsm.js';
import type { TransferOp } from '../../src/domain/types.js';
import type { Sql } from '../../src/db/sql.js';
import { createLogger } from '../../src/log.js';
import { FaultPlan, faultyAdapters } from '../support/faults.js';
import { Overlap } from '../support/overlap.js';
import { LAYER_CONFIG, startLayers, type Layers } from '../support/layers.js';
import { balances, fundedUser, newTransfer, newUserId, path, seed, settle, total } from '../support/ledger.js';

const plan = new FaultPlan();
let L: Layers;
const COIN = 10n ** 8n;
const quiet = createLogger({ level: 'error', name: 'test', write: () => undefined });

test.before(async () => {
  L = await startLayers({ retryBaseMs: 20, retryCapMs: 200, happyPathDeadlineMs: 500 }, { wrapAdapters: faultyAdapters(plan) });
});

test.after(async () => {
  await L.stop();
});

test.before.each(() => plan.clear());

/** A second, independent driver on the same database and UBSCore: another coordinator. */
function secondShard(hooks = {}) {
  return shardOn(L.sql, hooks);
}

function shardOn(sql: Sql, hooks = {}) {
  return composeShard({
    sql,
    ubs: (cmd, ms) => L.ubs.send(cmd, ms),
    config: { ...LAYER_CONFIG, retryBaseMs: 20, retryCapMs: 200 },
    log: quiet,
    hooks,
  });
}

async function applied(reqId: string, op: string): Promise<number> {
  const rows =
    await L.sql`SELECT count(*)::int AS n FROM funding_operation_records WHERE req_id = ${reqId} AND op = ${op} AND outcome = 'APPLIED'`;
  return rows[0]?.n as number;
}

test('CON-001: many drivers stepping one req_id at once: one CAS wins each move, one effect per operation', async () => {
  const user = await fundedUser(L);
  const other = secondShard();
  for (const from of ['FUNDING', 'SPOT'] as const) {
    const t = newTransfer(user, from, 'USDT', 3n * COIN);
    const created = await L.store.insert(t);
    assert.ok(created !== null);
    for (let round = 0; round < 6; round++) {
      await Promise.all([L.driver.step(t.reqId), other.driver.step(t.reqId), L.driver.step(t.reqId), other.driver.step(t.reqId)]);
    }
    assert.is((await L.store.get(t.reqId))?.state, 'COMMITTED');
    // Spec 003 §4.3: the FUNDING side's call shares the transaction of the moves around it.
    const expected =
      from === 'FUNDING' ? ['INIT', 'SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED'] : ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'COMMITTED'];
    assert.equal(await path(L, t.reqId), expected);
    assert.is(await applied(t.reqId, from === 'FUNDING' ? 'WITHDRAW' : 'DEPOSIT'), 1);
  }
  assert.equal(await balances(L, user, 'USDT'), { funding: 10n * COIN, spot: 10n * COIN });
  assert.is(await total(L, user, 'USDT'), 20n * COIN);
});

test('CON-002: two concurrent transfers of the same amount with separate req_ids both execute', async () => {
  const user = await fundedUser(L);
  const [a, b] = [newTransfer(user, 'FUNDING', 'USDT', 2n * COIN), newTransfer(user, 'FUNDING', 'USDT', 2n * COIN)];
  await Promise.all([L.shard.submit(a), L.shard.submit(b)]);
  assert.is((await settle(L, a.reqId)).state, 'COMMITTED');
  assert.is((await settle(L, b.reqId)).state, 'COMMITTED');
  assert.equal(await balances(L, user, 'USDT'), { funding: 6n * COIN, spot: 14n * COIN });
  assert.is(await total(L, user, 'USDT'), 20n * COIN);
});

test('CON-003: transfers racing external SPOT withdrawals never spend more than the balance', async () => {
  const user = await fundedUser(L, 0n, 10n * COIN);
  const transfers = Array.from({ length: 4 }, () => newTransfer(user, 'SPOT', 'USDT', 2n * COIN));
  await L.sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (${user}, 'USDT', 0)`;
  const spends = Array.from({ length: 4 }, () =>
    L.ubs.send(
      { kind: 'external_op', op: 'EXTERNAL_WITHDRAW', ref: `spend-${ulid()}`, userId: user, asset: 'USDT', amount: 2n * COIN },
      5_000,
    ),
  );
  const [outcomes, spent] = await Promise.all([Promise.all(transfers.map((t) => L.shard.submit(t))), Promise.all(spends)]);
  assert.is(outcomes.length, 4);
  const moved = (await Promise.all(transfers.map((t) => settle(L, t.reqId)))).filter((v) => v.state === 'COMMITTED').length;
  const withdrawn = spent.filter((r) => r?.kind === 'applied').length;
  assert.is(moved + withdrawn, 5, `${moved} transfers, ${withdrawn} withdrawals out of 10 USDT`);
  const b = await balances(L, user, 'USDT');
  assert.equal(b, { funding: BigInt(moved) * 2n * COIN, spot: 0n });
  assert.is(await total(L, user, 'USDT'), 10n * COIN - BigInt(withdrawn) * 2n * COIN);
});

test('CON-004: two transactions open at once on one FUNDING balance row never both spend it (a balance read without its lock would)', async () => {
  // Two shards, each with its own batcher: two transactions, not one batch decided in memory.
  // Each withdraws the whole balance through the coordinator's own path (the debit in the
  // creating transaction), and the overlap makes the second decide while the first's debit is
  // written and uncommitted: only the locks on the user and the balance row keep it from spending
  // the balance again.
  for (let pair = 0; pair < 3; pair++) {
    const user = await fundedUser(L, 5n * COIN, 0n);
    const overlap = new Overlap(L.sql);
    const shards = ['A', 'B'].map((name) => shardOn(overlap.wrap(L.sql, name)));
    const transfers = shards.map(() => newTransfer(user, 'FUNDING', 'USDT', 5n * COIN));
    const created = await Promise.all(shards.map((s, i) => s.driver.start(transfers[i] as NewTransfer)));
    const views = created.map((c) => {
      if (c.kind !== 'created') throw new Error(`pair ${pair}: not created: ${c.kind}`);
      return c.view;
    });
    assert.equal(views.map((v) => `${v.state} ${v.errorCode ?? ''}`.trim()).sort(), ['FAILED INSUFFICIENT_BALANCE', 'TARGET_PENDING']);
    // The overlap happened: one side's call waited on a lock the other held, its debit uncommitted.
    assert.is(overlap.seen.filter((s) => s.includes('waiting on Lock')).length, 1, `pair ${pair}: ${overlap.seen.join('; ')}`);
    const debits =
      await L.sql`SELECT count(*)::int AS n FROM funding_operation_records WHERE user_id = ${user} AND op = 'WITHDRAW' AND outcome = 'APPLIED'`;
    assert.is(debits[0]?.n, 1, `pair ${pair}: one applied withdraw`);
    for (const v of views)
      assert.is((await L.driver.step(v.reqId)).kind, 'terminal', 'the debited one commits, the refused one stays FAILED');
    assert.equal(await balances(L, user, 'USDT'), { funding: 0n, spot: 5n * COIN });
    assert.is(await total(L, user, 'USDT'), 5n * COIN);
  }
});

// IDP-001..003 on the FUNDING side, through the coordinator's own path: the driver applies a
// FUNDING operation with `applyWithMove`, in one transaction with the moves it decides (never
// with FundingAdapter.withdraw/deposit/refund). The same (req_id, op) is asked again in two ways:
// by a drive holding a stale view (a retry after a lost reply, a second coordinator), which the
// move's compare-and-swap stops before anything is applied; and, in turn and at once, by drives
// of a transfer put back behind the service into the state the operation starts from, which the
// compare-and-swap lets through, so only the (req_id, op) record answers: the ok path again
// (SUCCESS, not a refusal), nothing applied twice.
async function askedAgain(t: TransferView, op: TransferOp, done: TransferStateName, funding: () => Promise<bigint>): Promise<void> {
  const other = secondShard();
  const stateOf = (r: StepResult) => (r.kind === 'not_found' ? 'not_found' : r.view.state);
  assert.is(stateOf(await L.driver.step(t.reqId, t)), done, `${op}: the first drive`);
  const after = await funding();
  assert.is(stateOf(await L.driver.step(t.reqId, t)), done, `${op}: a stale drive answers the transfer as it is`);
  assert.is(await funding(), after, `${op}: a stale drive applies nothing`);
  for (const atOnce of [false, true]) {
    await L.sql`UPDATE transfers_tb SET state = ${STATE_IDS[t.state]} WHERE req_id = ${t.reqId}`;
    // At once: both drives read the row put back before either writes. Left to read it each on
    // its own, the second read could come after the first drive's move (a connection still
    // opening), and that drive would rightly take the next step instead.
    const read = await L.store.get(t.reqId);
    assert.is(read?.state, t.state);
    const drives = atOnce ? [L.driver.step(t.reqId, read ?? t), other.driver.step(t.reqId, read ?? t)] : [L.driver.step(t.reqId)];
    assert.equal((await Promise.all(drives)).map(stateOf), atOnce ? [done, done] : [done], `${op}: the ok path again`);
    assert.is(await funding(), after, `${op}: applied once (${atOnce ? 'at once' : 'in turn'})`);
  }
  assert.is(await applied(t.reqId, op), 1);
}

const fundingOf = (user: bigint) => async () => (await balances(L, user, 'USDT')).funding;

test('IDP-001: a FUNDING withdraw asked again through the driver answers SUCCESS, deducted once', async () => {
  const user = await fundedUser(L);
  const t = await L.store.insert(newTransfer(user, 'FUNDING', 'USDT', COIN));
  assert.ok(t !== null && t.state === 'INIT');
  await askedAgain(t, 'WITHDRAW', 'TARGET_PENDING', fundingOf(user));
  assert.is((await L.driver.step(t.reqId)).kind, 'terminal');
  assert.equal(await balances(L, user, 'USDT'), { funding: 9n * COIN, spot: 11n * COIN });
});

test('IDP-002: a FUNDING deposit asked again through the driver answers SUCCESS, credited once', async () => {
  const user = await fundedUser(L);
  const created = await L.driver.start(newTransfer(user, 'SPOT', 'USDT', COIN));
  assert.ok(created.kind === 'created' && created.view.state === 'SOURCE_PENDING');
  await askedAgain(created.view, 'DEPOSIT', 'COMMITTED', fundingOf(user));
  assert.equal(await balances(L, user, 'USDT'), { funding: 11n * COIN, spot: 9n * COIN });
});

test('IDP-003: a FUNDING refund asked again through the driver answers SUCCESS, credited once', async () => {
  const user = await fundedUser(L);
  plan.set('SPOT', 'DEPOSIT', { kind: 'fail', code: 'ACCOUNT_DISABLED' }, 1);
  const created = await L.driver.start(newTransfer(user, 'FUNDING', 'USDT', COIN));
  assert.ok(created.kind === 'created' && created.view.state === 'TARGET_PENDING');
  const refused = await L.driver.step(created.view.reqId, created.view);
  assert.ok(refused.kind === 'moved' && refused.view.state === 'COMPENSATING');
  await askedAgain(refused.view, 'REFUND', 'ROLLED_BACK', fundingOf(user));
  assert.equal(await balances(L, user, 'USDT'), { funding: 10n * COIN, spot: 10n * COIN });
});

// IDP-001..003 on the SPOT side: the coordinator calls the Trading adapter's own operations, so
// they are asked twice directly. Each step is followed by the balance, so an operation applied
// twice (11 − 2, 9 + 2, …) fails at that step, whichever operation it is; a withdraw, a refund
// and a deposit never share a req_id, so no mix of them can hide another.
{
  const balanceOf = async (user: bigint) => (await balances(L, user, 'USDT')).spot;

  test('IDP-001: SPOT withdraw twice with one req_id, in turn and at once: SUCCESS each time, deducted once', async () => {
    const user = await fundedUser(L);
    const before = await balanceOf(user);
    const req = { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN };
    assert.is((await L.trading.withdraw(req)).kind, 'SUCCESS');
    assert.is((await L.trading.withdraw(req)).kind, 'SUCCESS', 'the second call answers SUCCESS');
    assert.is(await balanceOf(user), before - COIN, 'deducted once');
    const twin = { ...req, reqId: ulid() };
    const both = await Promise.all([L.trading.withdraw(twin), L.trading.withdraw(twin), L.trading.withdraw(twin)]);
    assert.equal(
      both.map((o) => o.kind),
      ['SUCCESS', 'SUCCESS', 'SUCCESS'],
    );
    assert.is(await balanceOf(user), before - 2n * COIN, 'concurrent calls deducted once');
  });

  test('IDP-002: SPOT deposit twice with one req_id, in turn and at once: SUCCESS each time, credited once', async () => {
    const user = await fundedUser(L);
    const before = await balanceOf(user);
    const req = { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN };
    assert.is((await L.trading.deposit(req)).kind, 'SUCCESS');
    assert.is((await L.trading.deposit(req)).kind, 'SUCCESS', 'the second call answers SUCCESS');
    assert.is(await balanceOf(user), before + COIN, 'credited once');
    const twin = { ...req, reqId: ulid() };
    const both = await Promise.all([L.trading.deposit(twin), L.trading.deposit(twin)]);
    assert.equal(
      both.map((o) => o.kind),
      ['SUCCESS', 'SUCCESS'],
    );
    assert.is(await balanceOf(user), before + 2n * COIN, 'concurrent calls credited once');
  });

  test('IDP-003: SPOT refund twice with one req_id, in turn and at once: SUCCESS each time, credited once', async () => {
    const user = await fundedUser(L);
    const before = await balanceOf(user);
    for (const concurrent of [false, true]) {
      const req = { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN };
      assert.is((await L.trading.withdraw(req)).kind, 'SUCCESS');
      assert.is(await balanceOf(user), before - COIN);
      const refunds = concurrent
        ? await Promise.all([L.trading.refund(req), L.trading.refund(req)])
        : [await L.trading.refund(req), await L.trading.refund(req)];
      assert.equal(
        refunds.map((o) => o.kind),
        ['SUCCESS', 'SUCCESS'],
        'the second call answers SUCCESS',
      );
      assert.is(await balanceOf(user), before, `refunded once (${concurrent ? 'at once' : 'in turn'})`);
    }
  });
}

test('IDP-004 / FND-001 / FND-003 / FND-005: lost replies on every operation; retries end consistent, each effect once', async () => {
  const user = await fundedUser(L);
  plan.set('FUNDING', 'WITHDRAW', { kind: 'lose_reply' }, 2);
  plan.set('SPOT', 'DEPOSIT', { kind: 'lose_reply' }, 2);
  const a = newTransfer(user, 'FUNDING', 'USDT', 4n * COIN);
  await L.shard.submit(a);
  assert.is((await settle(L, a.reqId)).state, 'COMMITTED');
  // The debit's lost replies: the creating transaction committed unseen, and the creation found it.
  assert.ok(plan.count('FUNDING', 'WITHDRAW') >= 1 && plan.count('SPOT', 'DEPOSIT') >= 3);
  assert.is(await applied(a.reqId, 'WITHDRAW'), 1, 'FND-001: deducted once');
  plan.set('SPOT', 'WITHDRAW', { kind: 'lose_reply' }, 2);
  plan.set('FUNDING', 'DEPOSIT', { kind: 'lose_reply' }, 2);
  const b = newTransfer(user, 'SPOT', 'USDT', COIN);
  await L.shard.submit(b);
  assert.is((await settle(L, b.reqId)).state, 'COMMITTED');
  assert.is(await applied(b.reqId, 'DEPOSIT'), 1, 'FND-003: credited once');
  assert.equal(await balances(L, user, 'USDT'), { funding: 7n * COIN, spot: 13n * COIN });
  assert.is(await total(L, user, 'USDT'), 20n * COIN);
});

test('FND-004: a coordinator that dies at any point leaves nothing lost; a fresh one recovers every transfer', async () => {
  const user = await fundedUser(L);
  const points: CrashPoint[] = [
    'init_before_source_pending',
    'source_pending_before_call',
    'source_pending_after_call',
    'source_done_before_target_pending',
    'target_pending_before_call',
    'target_pending_after_call',
  ];
  const ids: string[] = [];
  for (const point of points) {
    for (const from of ['FUNDING', 'SPOT'] as const) {
      const dying = secondShard({
        crash: (p: CrashPoint) => {
          if (p === point) throw new Error(`died at ${p}`);
        },
      });
      const t = newTransfer(user, from, 'USDT', COIN);
      ids.push(t.reqId);
      await L.store.insert(t);
      await dying.driver
        .step(t.reqId)
        .then(() => dying.driver.step(t.reqId))
        .then(() => dying.driver.step(t.reqId))
        .catch(() => undefined);
      await dying.shard.stop();
    }
  }
  const restarted = secondShard();
  restarted.shard.start(); // start-up recovery drives every unfinished transfer
  for (const id of ids) assert.is((await settle(L, id, undefined, 10_000)).state, 'COMMITTED', id);
  await restarted.shard.stop();
  for (const id of ids)
    assert.is(
      (await L.sql`SELECT count(*)::int AS n FROM funding_operation_records WHERE req_id = ${id} AND outcome = 'APPLIED'`)[0]?.n,
      1,
    );
  assert.equal(await balances(L, user, 'USDT'), { funding: 10n * COIN, spot: 10n * COIN });
  assert.is(await total(L, user, 'USDT'), 20n * COIN);
});

test('FND-003: a late duplicate of a refused credit, arriving after compensation when the balance has room, is never applied', async () => {
  const user = newUserId();
  const { AMOUNT_UNITS_MAX } = await import('../../src/domain/money.js');
  for (let i = 0; i < 5; i++) await seed(L, user, 'USDT', 0n, AMOUNT_UNITS_MAX);
  await seed(L, user, 'USDT', COIN, 0n);
  const t = newTransfer(user, 'FUNDING', 'USDT', 10n);
  await L.shard.submit(t);
  const v = await settle(L, t.reqId);
  assert.is(v.state, 'ROLLED_BACK');
  assert.is(v.errorCode, 'OVERFLOW');
  const out = await L.ubs.send(
    { kind: 'external_op', op: 'EXTERNAL_WITHDRAW', ref: `room-${t.reqId}`, userId: user, asset: 'USDT', amount: COIN },
    5_000,
  );
  assert.equal(out, { kind: 'applied', duplicate: false });
  const late = await L.ubs.send({ kind: 'transfer_op', op: 'DEPOSIT', reqId: t.reqId, userId: user, asset: 'USDT', amount: 10n }, 5_000);
  assert.equal(late, { kind: 'rejected', code: 'OVERFLOW', duplicate: true });
  assert.equal(await balances(L, user, 'USDT'), { funding: COIN, spot: 5n * AMOUNT_UNITS_MAX - COIN });
});

test('FND-006: a PostgreSQL transaction that fails half-way changes nothing; the retry applies it once', async () => {
  const user = await fundedUser(L);
  // Make the operation record fail after the balance update, inside the adapter's transaction.
  // A sequence is not rolled back with the transaction, so it marks the first call.
  await L.sql.unsafe(`
    CREATE SEQUENCE fnd006_calls;
    CREATE FUNCTION fail_once() RETURNS trigger AS $$ BEGIN
      IF EXISTS (SELECT 1 FROM transfers_tb WHERE transfer_id = NEW.transfer_id AND user_id = ${user}) THEN
        IF nextval('fnd006_calls') = 1 THEN RAISE EXCEPTION 'injected failure after the balance update'; END IF;
      END IF;
      RETURN NEW; END $$ LANGUAGE plpgsql;
    CREATE TRIGGER fnd006 BEFORE INSERT ON funding_operations FOR EACH ROW EXECUTE FUNCTION fail_once();`);
  const t = newTransfer(user, 'FUNDING', 'USDT', 5n * COIN);
  await L.shard.submit(t);
  assert.is((await settle(L, t.reqId)).state, 'COMMITTED');
  // The creating transaction (create + debit) rolled back whole; the transfer was then created
  // INIT on its own and its first step debited it.
  const history = await path(L, t.reqId);
  assert.equal(history, ['INIT', 'SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED']);
  assert.is(await applied(t.reqId, 'WITHDRAW'), 1);
  assert.equal(await balances(L, user, 'USDT'), { funding: 5n * COIN, spot: 15n * COIN });
  assert.is(await total(L, user, 'USDT'), 20n * COIN);
  const calls = await L.sql<{ n: bigint }[]>`SELECT last_value AS n FROM fnd006_calls`;
  assert.ok((calls[0]?.n ?? 0n) >= 2n, 'the first attempt failed inside the transaction and was retried');
  await L.sql.unsafe('DROP TRIGGER fnd006 ON funding_operations; DROP FUNCTION fail_once(); DROP SEQUENCE fnd006_calls;');
});

test.run();
