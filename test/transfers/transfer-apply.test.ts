// Proves that the two forms of transfer_apply (per item for small batches, set-based for large
// ones) keep one contract: the same batch gives the same answers and the same effects on balances,
// transfers, history, operation records and the unfinished list. Catches a rule, a path or a
// lock check that one form applies and the other does not.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { monotonicFactory, ulid } from 'ulid';
import { EVENT_CODES as E, STATE_IDS as S } from '../../src/domain/fsm.js';
import { BALANCE_UNITS_MAX } from '../../src/domain/money.js';
import { migrate, seedDemoAssets } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { createTestDatabase } from '../support/database.js';
import { startLayers, type Layers } from '../support/layers.js';

const COIN = 10n ** 8n;
let L: Layers;

test.before(async () => {
  L = await startLayers();
});

test.after(async () => {
  await L.stop();
});

type Item = Record<string, unknown>;
type Fn = 'transfer_apply' | 'transfer_apply_set';

/** The scenario's users, transfers and items for one run, on users starting at `base`. */
function scenario(base: bigint) {
  const u = (n: number) => String(base + BigInt(n));
  // Items are decided in req_id order: increasing ids make that the order they are written in.
  const next = monotonicFactory();
  const ids = new Map<string, string>();
  const id = (label: string): string => {
    const known = ids.get(label);
    if (known !== undefined) return known;
    const made = next();
    ids.set(label, made);
    return made;
  };
  const create = (label: string, user: number, from: 'F' | 'S', coins: bigint, extra: Item = {}): Item => ({
    k: 'c',
    r: id(label),
    u: u(user),
    a: 'USDT',
    m: String(coins * COIN),
    e: S.INIT,
    st: from === 'F' ? 1 : 2,
    tt: from === 'F' ? 2 : 1,
    coid: null,
    c: null,
    ...(from === 'F'
      ? {
          o: 'WITHDRAW',
          p: [
            [S.SOURCE_DONE, E.SOURCE_OK, false],
            [S.TARGET_PENDING, E.TARGET_CALL, false],
          ],
          q: [[S.FAILED, E.SOURCE_FAIL, true]],
        }
      : { o: null, tf: 1, p: [[S.SOURCE_PENDING, E.SOURCE_CALL, false]], q: [[S.FAILED, E.SOURCE_FAIL, true]] }),
    ...extra,
  });
  const move = (label: string, user: number, coins: bigint, from: number, o: string | null, p: unknown[], q: unknown[] = []): Item => ({
    k: 'm',
    r: id(label),
    u: u(user),
    a: 'USDT',
    m: String(coins * COIN),
    e: from,
    o,
    c: null,
    p,
    q,
  });
  // Transfers the batch finds: made first, by the same function.
  const setup: Item[][] = [
    [
      create('pending', 1, 'F', 1n),
      create('raced', 1, 'F', 1n),
      create('back', 2, 'S', 1n),
      create('refunded', 1, 'F', 1n),
      create('stray', 2, 'S', 1n),
      create('lone', 2, 'S', 1n),
    ],
    [
      move('refunded', 1, 1n, S.TARGET_PENDING, null, [[S.COMPENSATING, E.TARGET_FAIL, false]]),
      move('raced', 1, 1n, S.TARGET_PENDING, null, [[S.COMMITTED, E.TARGET_OK, true]]),
    ],
  ];
  const batch: Item[] = [
    create('a', 1, 'F', 3n),
    create('b', 1, 'F', 3n),
    create('c', 1, 'F', 4n), // the running balance of 10 − 3 (setup) + 1 (refund) − 3 − 3 leaves 2: refused
    create('frozen', 3, 'F', 1n),
    create('nobody', 4, 'F', 1n),
    create('no-target', 4, 'S', 1n),
    create('to-funding', 2, 'S', 1n),
    { ...create('again', 1, 'F', 1n), r: id('pending') }, // a req_id already there: exists
    move('pending', 1, 1n, S.TARGET_PENDING, null, [[S.COMMITTED, E.TARGET_OK, true]]),
    move('raced', 1, 1n, S.TARGET_PENDING, null, [[S.COMMITTED, E.TARGET_OK, true]]), // moved on already: lost
    move(
      'back',
      2,
      1n,
      S.SOURCE_PENDING,
      'DEPOSIT',
      [
        [S.SOURCE_DONE, E.SOURCE_OK, false],
        [S.COMMITTED, E.TARGET_OK, true],
      ],
      [
        [S.SOURCE_DONE, E.SOURCE_OK, false],
        [S.COMPENSATING, E.TARGET_FAIL, false],
      ],
    ),
    move('refunded', 1, 1n, S.COMPENSATING, 'REFUND', [[S.ROLLED_BACK, E.ROLLBACK_OK, true]]),
    move('stray', 2, 1n, S.SOURCE_PENDING, 'REFUND', [[S.ROLLED_BACK, E.ROLLBACK_OK, true]]), // no withdraw of its own: the refund is refused and nothing moves
    { k: 'o', r: id('lone'), u: u(2), a: 'USDT', m: String(COIN), o: 'WITHDRAW' },
    // An operation belongs to its transfer: of other parameters, or of a req_id that names none, it is refused.
    { k: 'o', r: id('stray'), u: u(2), a: 'USDT', m: String(2n * COIN), o: 'DEPOSIT' },
    { k: 'o', r: ulid(), u: u(2), a: 'USDT', m: String(COIN), o: 'WITHDRAW' },
  ];
  return { u, ids, setup, batch };
}

async function seedUsers(base: bigint, sql: Sql = L.sql): Promise<void> {
  await sql`INSERT INTO funding_balances (user_id, asset, available, status) VALUES
    (${base + 1n}, 'USDT', ${10n * COIN}, 'ACTIVE'), (${base + 2n}, 'USDT', ${2n * COIN}, 'ACTIVE'), (${base + 3n}, 'USDT', ${5n * COIN}, 'FROZEN')`;
}

async function call(fn: Fn, items: Item[], sql: Sql = L.sql): Promise<Record<string, unknown>[]> {
  const input = JSON.stringify(items);
  const rows =
    fn === 'transfer_apply'
      ? await sql<{ out: Record<string, unknown>[] }[]>`SELECT transfer_apply(${input}::text::jsonb, ${BALANCE_UNITS_MAX}::bigint) AS out`
      : await sql<
          { out: Record<string, unknown>[] }[]
        >`SELECT transfer_apply_set(${input}::text::jsonb, ${BALANCE_UNITS_MAX}::bigint) AS out`;
  return rows[0]?.out ?? [];
}

/** Everything the run changed, with users and req_ids replaced by the scenario's labels. */
async function effects(base: bigint, ids: Map<string, string>) {
  const label = new Map([...ids].map(([k, v]) => [v, k]));
  const users = [base + 1n, base + 2n, base + 3n, base + 4n];
  const name = (r: string) => label.get(r) ?? 'op-only';
  const balances = await L.sql<
    { user_id: bigint; available: bigint }[]
  >`SELECT user_id, available FROM funding_balances WHERE user_id IN ${L.sql(users)} ORDER BY user_id`;
  const transfers = await L.sql<
    { req_id: string; state: number; error_code: string | null }[]
  >`SELECT req_id, state, error_code FROM transfers_tb WHERE user_id IN ${L.sql(users)}`;
  const history = await L.sql<{ req_id: string; from_state: number | null; to_state: number; event: number; detail: string | null }[]>`
    SELECT t.req_id, from_state, to_state, event, detail FROM transfer_state_history AS h JOIN transfers_tb AS t USING (transfer_id) WHERE t.user_id IN ${L.sql(users)} ORDER BY h.id`;
  const ops = await L.sql<
    { req_id: string; op: string; outcome: string; code: string | null }[]
  >`SELECT req_id, op, outcome, code FROM funding_operation_records WHERE user_id IN ${L.sql(users)}`;
  const active = await L.sql<{ req_id: string }[]>`SELECT a.req_id FROM transfers_active AS a WHERE a.user_id IN ${L.sql(users)}`;
  return {
    balances: balances.map((b) => [String(b.user_id - base), String(b.available)]),
    transfers: transfers.map((t) => `${name(t.req_id)}:${t.state}:${t.error_code}`).sort(),
    history: history.map((h) => `${name(h.req_id)}:${h.from_state}>${h.to_state}:${h.event}:${h.detail}`).sort(),
    ops: ops.map((o) => `${name(o.req_id)}:${o.op}:${o.outcome}:${o.code}`).sort(),
    active: active.map((a) => name(a.req_id)).sort(),
  };
}

/** The scenario's setup and batch through `fn`, on `sql`; the batch's answers. */
async function answersOf(fn: Fn, base: bigint, sql: Sql = L.sql) {
  await seedUsers(base, sql);
  const s = scenario(base);
  for (const step of s.setup) for (const r of await call(fn, step, sql)) assert.is(r.k, 'moved', `${fn} setup: ${JSON.stringify(r)}`);
  const answers = (await call(fn, s.batch, sql)).map((r) => ({ k: r.k, s: r.s ?? null, oc: r.oc ?? null, code: r.code ?? null }));
  return { answers, ids: s.ids };
}

async function run(fn: Fn, base: bigint) {
  const { answers, ids } = await answersOf(fn, base);
  return { answers, effects: await effects(base, ids) };
}

test('the per-item and the set-based transfer_apply answer one batch alike and leave the same effects', async () => {
  const one = await run('transfer_apply', 9_100_000n);
  const set = await run('transfer_apply_set', 9_200_000n);
  assert.equal(set.answers, one.answers);
  assert.equal(set.effects, one.effects);
  // And what they agree on is right: the rules, not only the sameness.
  const kinds = one.answers.map((a) => `${a.k}${a.code === null ? '' : `:${a.code}`}`);
  assert.equal(kinds, [
    'moved',
    'moved',
    'moved:INSUFFICIENT_BALANCE',
    'moved:ACCOUNT_FROZEN',
    'moved:SOURCE_ACCOUNT_NOT_FOUND',
    'moved:TARGET_ACCOUNT_NOT_FOUND',
    'moved',
    'exists',
    'moved',
    'lost',
    'moved',
    'moved',
    'held:REFUND_WITHOUT_WITHDRAW',
    'op',
    'held',
    'held',
  ]);
  assert.equal(
    one.answers.slice(-2).map((a) => a.oc),
    ['CONFLICT', 'CONFLICT'],
  );
  // User 1: 10 − 3 (setup debits) + 1 (refund of 'refunded') − 3 − 3 = 2; user 2: 2 + 1 (credit) − 1 (lone withdraw) = 2.
  assert.equal(one.effects.balances, [
    ['1', String(2n * COIN)],
    ['2', String(2n * COIN)],
    ['3', String(5n * COIN)],
  ]);
});

/** Sequential scans of the tables both forms read by key, as this database's backends reported them. */
async function seqScans(sql: Sql): Promise<Record<string, number>> {
  const rows = await sql<{ relname: string; seq_scan: string }[]>`
    SELECT relname, seq_scan::text FROM pg_stat_user_tables
     WHERE relname IN ('transfers_tb', 'funding_balances', 'funding_operations', 'transfers_active') ORDER BY relname`;
  return Object.fromEntries(rows.map((r) => [r.relname, Number(r.seq_scan)]));
}

test('both forms read by key with an index, even with plans a connection cached while the tables were nearly empty', async () => {
  // PL/pgSQL keeps a generic plan per statement and connection after its fifth run. Made on a
  // fresh database, that plan was a sequential scan, kept while the table grew (the set form's
  // operation lookup cost 0.87 ms a batch at 9,000 rows). Both functions' files turn sequential
  // scans off inside them (src/db/migrations/repeatable/transfer_apply.sql says why). One
  // connection on a database of its own, so the counters are this test's alone.
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 1, application: 'test-index-plans' });
  try {
    await migrate(sql);
    await seedDemoAssets(sql);
    const runs = 8;
    for (const fn of ['transfer_apply', 'transfer_apply_set'] as const)
      for (let i = 0; i < runs; i++) await answersOf(fn, BigInt((fn === 'transfer_apply' ? 100 : 200) + i) * 1_000n, sql);
    await sql`SELECT pg_stat_force_next_flush()`;
    const before = await seqScans(sql);
    for (const fn of ['transfer_apply', 'transfer_apply_set'] as const)
      await answersOf(fn, BigInt(fn === 'transfer_apply' ? 300 : 400) * 1_000n, sql);
    await sql`SELECT pg_stat_force_next_flush()`;
    // The flush happens when the backend next goes idle: one more statement lets it report.
    await sql`SELECT 1`;
    assert.equal(await seqScans(sql), before);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test.run();
