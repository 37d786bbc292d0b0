// Proves that coalescing concurrent calls into one statement keeps each call's own answer: a
// batch is bounded, never holds one key twice, isolates a failing row, and the Funding adapter
// decides the operations of one batch against the running balance, exactly once each.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { composeShard } from '../../src/coordinator/compose.js';
import { Batcher } from '../../src/db/batch.js';
import { createLogger } from '../../src/log.js';
import { LAYER_CONFIG, startLayers, type Layers } from '../support/layers.js';
import { balances, createAndDebit, newTransfer, newUserId, seed, settle, total, transferOf } from '../support/ledger.js';

const COIN = 10n ** 8n;
let L: Layers;

test.before(async () => {
  L = await startLayers();
});

test.after(async () => {
  await L.stop();
});

test('calls made in one turn share a batch, bounded by batchMax, and each gets its own answer', async () => {
  const batches: number[][] = [];
  const b = new Batcher<number, number>(
    async (xs) => {
      batches.push([...xs]);
      return xs.map((x) => x * 2);
    },
    { batchMax: 4, inFlightMax: 1 },
  );
  const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((x) => b.call(x)));
  assert.equal(answers, [2, 4, 6, 8, 10, 12]);
  assert.equal(batches, [
    [1, 2, 3, 4],
    [5, 6],
  ]);
});

test('two calls with the same key never share a batch', async () => {
  const batches: string[][] = [];
  const b = new Batcher<string, string>(
    async (xs) => {
      batches.push([...xs]);
      return xs;
    },
    { batchMax: 10, inFlightMax: 1, key: (x) => x.slice(0, 1) },
  );
  await Promise.all(['a1', 'a2', 'b1', 'a3'].map((x) => b.call(x)));
  assert.equal(batches, [['a1', 'b1'], ['a2'], ['a3']]);
});

/** An error as postgres.js raises it for a statement PostgreSQL refused, with its SQLSTATE. */
function pgError(code: string): Error {
  return Object.assign(new Error(`refused with ${code}`), { code });
}

test("a batch refused for one row's data is split in halves until that row fails alone, one run at a time", async () => {
  const runs: number[][] = [];
  let concurrent = 0;
  let concurrentMax = 0;
  const b = new Batcher<number, number>(
    async (xs) => {
      runs.push([...xs]);
      concurrent += 1;
      concurrentMax = Math.max(concurrentMax, concurrent);
      await new Promise((resolve) => setImmediate(resolve));
      concurrent -= 1;
      if (xs.includes(13)) throw pgError('23505');
      return xs;
    },
    { batchMax: 16, inFlightMax: 1 },
  );
  const inputs = Array.from({ length: 16 }, (_, i) => i + 1);
  const results = await Promise.allSettled(inputs.map((x) => b.call(x)));
  assert.equal(
    results.map((r) => r.status),
    inputs.map((x) => (x === 13 ? 'rejected' : 'fulfilled')),
  );
  // 16 → 8 + 8 → 4 + 4 → 2 + 2 → 1 + 1: 9 runs, where a row at a time would take 17.
  assert.is(runs.length, 9, `runs: ${JSON.stringify(runs)}`);
  assert.is(concurrentMax, 1, 'the re-runs go one after the other, never all at once');
});

test('a batch that failed for another reason (a lost connection, a timeout) is not re-run: every row gets the error', async () => {
  for (const error of [pgError('08006'), pgError('57014'), pgError('40P01'), new Error('write CONNECTION_CLOSED')]) {
    let runs = 0;
    const b = new Batcher<number, number>(
      async () => {
        runs += 1;
        throw error;
      },
      { batchMax: 10, inFlightMax: 1 },
    );
    const results = await Promise.allSettled([1, 2, 3, 4].map((x) => b.call(x)));
    assert.ok(results.every((r) => r.status === 'rejected' && r.reason === error));
    assert.is(runs, 1, `${error.message}: one run, no re-run storm`);
  }
});

test('a run that answers the wrong number of rows is an error, never a misaligned answer', async () => {
  const b = new Batcher<number, number>(async (xs) => xs.slice(1), { batchMax: 10, inFlightMax: 1 });
  const results = await Promise.allSettled([1, 2].map((x) => b.call(x)));
  assert.ok(results.every((r) => r.status === 'rejected'));
});

test('withdraws batched together are decided against the running balance: exactly what the balance holds is taken', async () => {
  const user = newUserId();
  await seed(L, user, 'USDT', 5n * COIN, 0n);
  const requests = await Promise.all(
    Array.from({ length: 20 }, () => transferOf(L, { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN })),
  );
  const outcomes = await Promise.all(requests.map((r) => L.funding.withdraw(r)));
  assert.is(outcomes.filter((o) => o.kind === 'SUCCESS').length, 5);
  assert.ok(outcomes.filter((o) => o.kind !== 'SUCCESS').every((o) => o.kind === 'FAILED' && o.code === 'INSUFFICIENT_BALANCE'));
  assert.is((await balances(L, user, 'USDT')).funding, 0n);
  const recorded = await L.sql<{ applied: number; rejected: number }[]>`
    SELECT count(*) FILTER (WHERE outcome = 'APPLIED')::int AS applied, count(*) FILTER (WHERE outcome = 'REJECTED')::int AS rejected
      FROM funding_operation_records WHERE user_id = ${user}`;
  assert.equal(recorded[0], { applied: 5, rejected: 15 });
});

test('the same (req_id, op) asked many times at once is applied once, and every answer agrees', async () => {
  const user = newUserId();
  await seed(L, user, 'USDT', 5n * COIN, 0n);
  const req = await transferOf(L, { reqId: ulid(), userId: user, asset: 'USDT', amount: 2n * COIN });
  const outcomes = await Promise.all(Array.from({ length: 8 }, () => L.funding.withdraw(req)));
  assert.ok(outcomes.every((o) => o.kind === 'SUCCESS'));
  assert.is((await balances(L, user, 'USDT')).funding, 3n * COIN);
});

test('a refund batched with other operations credits back only its own withdraw', async () => {
  const user = newUserId();
  await seed(L, user, 'USDT', 4n * COIN, 0n);
  const first = await transferOf(L, { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN });
  assert.is((await L.funding.withdraw(first)).kind, 'SUCCESS');
  const never = await transferOf(L, { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN });
  const incoming = await transferOf(L, { reqId: ulid(), userId: user, asset: 'USDT', amount: COIN }, 'SPOT');
  const [refund, stray, deposit] = await Promise.all([L.funding.refund(first), L.funding.refund(never), L.funding.deposit(incoming)]);
  assert.is(refund.kind, 'SUCCESS');
  assert.is(stray.kind, 'PENDING', 'a refund without a withdraw is never applied and never final');
  assert.is(deposit.kind, 'SUCCESS');
  assert.is((await balances(L, user, 'USDT')).funding, 5n * COIN);
});

test('concurrent compare-and-swaps of one transfer through one store: exactly one wins', async () => {
  const user = newUserId();
  await seed(L, user, 'USDT', COIN, 0n);
  const created = await L.store.create(newTransfer(user, 'FUNDING', 'USDT', COIN));
  assert.is(created.kind, 'created');
  const reqId = created.kind === 'created' ? created.view.reqId : '';
  const view = created.kind === 'created' ? created.view : null;
  if (view === null) throw new Error('not created');
  const wins = await Promise.all(Array.from({ length: 6 }, () => L.store.move(view, [{ event: 'SOURCE_CALL', to: 'SOURCE_PENDING' }])));
  assert.is(wins.filter((w) => w !== null).length, 1);
  const history = await L.store.history(reqId);
  assert.equal(
    history.map((h) => h.to),
    ['INIT', 'SOURCE_PENDING'],
  );
});

test('the unfinished list follows the transfer: listed when created, gone when it ends', async () => {
  const user = newUserId();
  await seed(L, user, 'USDT', COIN, 0n);
  const created = await L.store.create(newTransfer(user, 'FUNDING', 'USDT', COIN));
  if (created.kind !== 'created') throw new Error('not created');
  const reqId = created.view.reqId;
  const listed = async () => (await L.sql`SELECT 1 FROM transfers_active WHERE req_id = ${reqId}`).length === 1;
  assert.ok(await listed());
  assert.ok((await L.store.move(created.view, [{ event: 'SOURCE_FAIL', to: 'FAILED' }], 'INVALID_ASSET')) !== null);
  assert.not.ok(await listed());
});

test('start-up recovery on two shards walks every page: each stuck transfer driven to COMMITTED once, funds exact', async () => {
  const users = [newUserId(), newUserId(), newUserId(), newUserId()];
  for (const user of users) await seed(L, user, 'USDT', 100n * COIN, 100n * COIN);
  const ids: string[] = [];
  for (let i = 0; i < 120; i++) {
    const t = newTransfer(users[i % users.length] as bigint, i % 3 === 0 ? 'SPOT' : 'FUNDING', 'USDT', COIN);
    await L.store.insert(t);
    ids.push(t.reqId);
  }
  // Small pages, few lanes and small batches: many pages read ahead, many batches per step.
  const quiet = createLogger({ level: 'error', name: 'test', write: () => undefined });
  const shards = [0, 1].map((shard) =>
    composeShard({
      sql: L.sql,
      ubs: (cmd, ms) => L.ubs.send(cmd, ms),
      config: { ...LAYER_CONFIG, shard, shards: 2, staleThresholdMs: 0, scanBatchMax: 16, scanConcurrencyMax: 6, pgBatchMax: 4 },
      log: quiet,
    }),
  );
  for (const s of shards) s.shard.start();
  for (const id of ids) assert.is((await settle(L, id, undefined, 15_000)).state, 'COMMITTED', id);
  for (const s of shards) await s.shard.stop();
  const ops = await L.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM funding_operation_records WHERE req_id IN (SELECT json_array_elements_text(${JSON.stringify(ids)}::text::json)) AND outcome = 'APPLIED'`;
  assert.is(ops[0]?.n, ids.length, 'one Funding operation applied per transfer');
  const listed = await L.sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM transfers_active WHERE req_id IN (SELECT json_array_elements_text(${JSON.stringify(ids)}::text::json))`;
  assert.is(listed[0]?.n, 0, 'none left on the unfinished list');
  for (const user of users) assert.is(await total(L, user, 'USDT'), 200n * COIN);
});

test('a whole batch re-run after a commit whose answer was lost changes nothing more: create-and-debit, credit-and-move, retry note', async () => {
  const user = newUserId();
  await seed(L, user, 'USDT', 10n * COIN, 0n);
  const t = newTransfer(user, 'FUNDING', 'USDT', 3n * COIN);
  const create = createAndDebit(t);
  const first = await L.store.writes.write(create);
  assert.is(first.kind === 'moved' && first.state, 'TARGET_PENDING');
  // The same batch again, as a re-run after an unknown commit would send it.
  assert.is((await L.store.writes.write(create)).kind, 'exists', 'the creation is found, not made again');
  assert.is((await balances(L, user, 'USDT')).funding, 7n * COIN, 'debited once');

  const back = newTransfer(user, 'SPOT', 'USDT', 2n * COIN);
  await L.store.writes.write({
    ...create,
    transfer: back,
    op: null,
    paths: { ok: [{ event: 'SOURCE_CALL', to: 'SOURCE_PENDING' }], ko: [] },
  });
  const credit = {
    kind: 'move',
    params: back,
    from: 'SOURCE_PENDING',
    op: 'DEPOSIT',
    paths: {
      ok: [
        { event: 'SOURCE_OK', to: 'SOURCE_DONE' },
        { event: 'TARGET_OK', to: 'COMMITTED' },
      ],
      ko: [
        { event: 'SOURCE_OK', to: 'SOURCE_DONE' },
        { event: 'TARGET_FAIL', to: 'COMPENSATING' },
      ],
    },
    code: null,
  } as const;
  assert.is((await L.store.writes.write(credit)).kind, 'moved');
  assert.is((await L.store.writes.write(credit)).kind, 'lost', 'the re-run finds the transfer moved on and applies nothing');
  assert.is((await balances(L, user, 'USDT')).funding, 9n * COIN, 'credited once');
  assert.equal(await L.store.history(back.reqId).then((h) => h.map((e) => e.to)), ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'COMMITTED']);

  const stuck = await L.store.insert(newTransfer(user, 'FUNDING', 'USDT', COIN));
  if (stuck === null) throw new Error('not created');
  const cause = { kind: 'timeout', detail: 'unknown' } as const;
  assert.ok(await L.store.noteRetry(stuck, cause, new Date()));
  assert.not.ok(await L.store.noteRetry(stuck, cause, new Date()), 'a re-run of the same note is refused');
  assert.is((await L.store.get(stuck.reqId))?.retryCount, 1, 'the retry is counted once');
});

test.run();
