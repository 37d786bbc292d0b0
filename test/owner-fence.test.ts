// Proves the fence of migration 0010 and that no layer takes its refusal for a business one: a write on a connection whose owner epoch was superseded is refused with LF001 on every money table, a `standby` connection writes nothing, the current epoch and an unfenced connection pass, and the Funding adapter answers a fenced write as an unknown outcome (PENDING), never FAILED.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { FundingAdapter } from '../src/adapters/funding.js';
import { isConstraintRefusal } from '../src/db/batch.js';
import { migrate } from '../src/db/migrations.js';
import { seedDemoAssets } from '../src/db/schema.js';
import { openSql, type PgOwnerIdentity, type Sql } from '../src/db/sql.js';
import { TransferWrites } from '../src/db/transfer-writes.js';
import { isFenced } from '../src/spot-log/store.js';
import { createTestDatabase } from './support/database.js';

/** Every table that holds money or the SPOT log: each must carry the fence. */
const MONEY_TABLES = [
  'external_movements',
  'funding_balances',
  'funding_operations',
  'spot_log',
  'spot_processed',
  'spot_seq_clock',
  'spot_snapshots',
  'transfer_state_history',
  'transfers_active',
  'transfers_tb',
];
const CURRENT_EPOCH = 5;

async function withLedger(body: (url: string, setup: Sql) => Promise<void>): Promise<void> {
  const db = await createTestDatabase();
  const setup = openSql(db.url, { max: 1, application: 'test-setup' });
  try {
    await migrate(setup);
    await seedDemoAssets(setup);
    await setup`UPDATE ledger_owner SET epoch = ${CURRENT_EPOCH}`;
    await body(db.url, setup);
  } finally {
    await setup.end({ timeout: 5 });
    await db.drop();
  }
}

async function withPool<T>(url: string, owner: PgOwnerIdentity | undefined, body: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = openSql(url, { max: 1, application: 'test-writer', ...(owner === undefined ? {} : { owner }) });
  try {
    return await body(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** What a write on each money table answers: 'ok', or the SQLSTATE it was refused with. */
async function writeEach(sql: Sql): Promise<Record<string, string>> {
  const answers: Record<string, string> = {};
  for (const table of MONEY_TABLES) {
    // A statement trigger fires whether or not a row matches: the fence is asked all the same.
    answers[table] = await sql
      .unsafe(`DELETE FROM ${table} WHERE false`)
      .then(() => 'ok')
      .catch((error: unknown) => (isFenced(error) ? 'LF001' : String((error as { code?: unknown }).code)));
  }
  return answers;
}

const every = (answer: string) => Object.fromEntries(MONEY_TABLES.map((t) => [t, answer]));

test('fence: every money table carries the fence trigger', async () => {
  await withLedger(async (_url, setup) => {
    const rows = await setup<{ relname: string }[]>`
      SELECT DISTINCT c.relname FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid JOIN pg_proc AS p ON p.oid = t.tgfoid
       WHERE p.proname = 'owner_fence' ORDER BY c.relname`;
    assert.equal(
      rows.map((r) => r.relname),
      MONEY_TABLES,
    );
  });
});

test('fence: a superseded epoch is refused with LF001 on every money table, a standby writes nothing, the current epoch and an unfenced connection pass', async () => {
  await withLedger(async (url, setup) => {
    const old = { tag: 'test-old', epoch: CURRENT_EPOCH - 1 };
    assert.equal(await withPool(url, old, writeEach), every('LF001'), 'superseded epoch');
    assert.equal(await withPool(url, { tag: 'test-standby', epoch: 'standby' }, writeEach), every('LF001'), 'standby');
    assert.equal(await withPool(url, { tag: 'test-now', epoch: CURRENT_EPOCH }, writeEach), every('ok'), 'current epoch');
    assert.equal(await withPool(url, undefined, writeEach), every('ok'), 'unfenced');
    // A real row, not only the statement: nothing of it lands.
    const refused = await withPool(url, old, (sql) =>
      sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (7, 'USDT', 1)`.then(
        () => 'written',
        (e: unknown) => (isFenced(e) ? 'LF001' : String(e)),
      ),
    );
    assert.is(refused, 'LF001');
    assert.is((await setup`SELECT count(*)::int AS n FROM funding_balances`)[0]?.n, 0);
  });
});

test('fence: a fenced Funding write is an unknown outcome (PENDING, retried), never FAILED', async () => {
  await withLedger(async (url, setup) => {
    await setup`INSERT INTO funding_balances (user_id, asset, available) VALUES (8, 'USDT', 100)`;
    const batch = { batchMax: 16 };
    const outcome = await withPool(url, { tag: 'test-old', epoch: CURRENT_EPOCH - 1 }, (sql) =>
      new FundingAdapter(sql, new TransferWrites(sql, batch), batch).withdraw({ reqId: ulid(), userId: 8n, asset: 'USDT', amount: 1n }),
    );
    assert.is(outcome.kind, 'PENDING', JSON.stringify(outcome));
    assert.not.ok(isConstraintRefusal({ code: 'LF001' }), 'LF001 is no constraint refusal');
    assert.is((await setup`SELECT available::text AS a FROM funding_balances WHERE user_id = 8`)[0]?.a, '100', 'nothing withdrawn');
  });
});

test.run();
