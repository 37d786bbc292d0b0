// Proves that the rules of the tables every transfer writes still hold after migration 0008 made
// their CHECK constraints domains: each bad value stored into transfers_tb, funding_balances or
// funding_operations, by an insert or by an update that sets it, is refused with 23514
// (check_violation), and the one rule over two columns (source differs from target) is still a
// table constraint. It also holds the reason for 0008: those tables keep no other CHECK
// constraint, since PostgreSQL re-plans every CHECK of a table each time a statement writing it
// starts, a cost the batch writer paid per item. And the indexes of those tables are exactly the
// ones docs/operations.md names, each with the query that reads it; transfer_events names exactly
// the event codes the history stores (src/domain/fsm.ts EVENT_CODES), and funding_ops the
// operation codes the Funding records store (src/db/transfer-writes.ts FUNDING_OP_CODES).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { migrate } from '../../src/db/migrations.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { EVENT_CODES } from '../../src/domain/fsm.js';
import { FUNDING_OP_CODES } from '../../src/db/transfer-writes.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { cleanupAll, useOneServerForThisFile } from '../support/process.js';

let db: TestDatabase;
let sql: Sql;

test.before(async () => {
  await useOneServerForThisFile();
  db = await createTestDatabase();
  sql = openSql(db.url, { max: 1, application: 'test-schema-rules' });
  await migrate(sql);
  await sql`INSERT INTO assets (symbol, precision, min_transfer_units, max_transfer_units) VALUES ('USDT', 6, 1, 1000000000)`;
  await sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (7, 'USDT', 100)`;
});
test.after(async () => {
  await sql?.end({ timeout: 5 });
  await db?.drop();
  await cleanupAll();
});

const REQ = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

type Row = {
  req_id: string;
  user_id: string;
  amount: string;
  transfer_type: number;
  source_type: number;
  target_type: number;
  state: number;
  client_order_id: string | null;
};
const GOOD: Row = {
  req_id: REQ,
  user_id: '7',
  amount: '5',
  transfer_type: 1,
  source_type: 1,
  target_type: 2,
  state: 0,
  client_order_id: 'order-1',
};

async function sqlState(work: Promise<unknown>): Promise<string | null> {
  return work.then(
    () => null,
    (e: unknown) => String((e as { code?: unknown }).code),
  );
}

/** Inserts one transfer inside a transaction that is always rolled back: each case starts clean. */
function insertTransfer(row: Row): Promise<unknown> {
  return sql.begin(async (tx) => {
    await tx`
      INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state, client_order_id)
      VALUES (${row.req_id}, ${row.user_id}::bigint, 'USDT', ${row.amount}::bigint, ${row.transfer_type}::smallint,
              ${row.source_type}::smallint, ${row.target_type}::smallint, ${row.state}::smallint, ${row.client_order_id})`;
    throw Object.assign(new Error('rolled back'), { code: 'ROLLED_BACK' });
  });
}

test('a good transfer row is stored (the cases below differ from it by one value)', async () => {
  assert.is(await sqlState(insertTransfer(GOOD)), 'ROLLED_BACK');
});

const BAD_TRANSFERS: readonly [string, Partial<Row>][] = [
  ['req_id not a ULID', { req_id: 'not-a-ulid' }],
  ['req_id with a letter ULIDs leave out', { req_id: '01ARZ3NDEKTSV4RRFFQ69G5FAU' }],
  ['user_id 0', { user_id: '0' }],
  ['amount 0', { amount: '0' }],
  ['amount negative', { amount: '-5' }],
  ['transfer_type 3', { transfer_type: 3 }],
  ['source_type 0', { source_type: 0 }],
  ['target_type 3', { target_type: 3 }],
  ['source and target the same', { source_type: 2, target_type: 2 }],
  ['state unknown', { state: 50 }],
  ['client_order_id with a space', { client_order_id: 'order 1' }],
  ['client_order_id of 65 characters', { client_order_id: 'x'.repeat(65) }],
];

for (const [name, change] of BAD_TRANSFERS) {
  test(`transfers_tb refuses ${name} with 23514`, async () => {
    assert.is(await sqlState(insertTransfer({ ...GOOD, ...change })), '23514');
  });
}

test('an update that sets a bad value is refused with 23514: transfers_tb state, funding_balances available and status', async () => {
  await sql`
    INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state)
    VALUES (${REQ}, 7, 'USDT', 5, 1, 1, 2, 0)`;
  assert.is(await sqlState(sql`UPDATE transfers_tb SET state = 50 WHERE req_id = ${REQ}`), '23514');
  assert.is(await sqlState(sql`UPDATE transfers_tb SET state = 40 WHERE req_id = ${REQ}`), null);
  assert.is(await sqlState(sql`UPDATE funding_balances SET available = available - 101 WHERE user_id = 7`), '23514');
  assert.is(await sqlState(sql`UPDATE funding_balances SET status = 'CLOSED' WHERE user_id = 7`), '23514');
  const [row] = await sql<{ available: string; status: string }[]>`SELECT available::text, status FROM funding_balances WHERE user_id = 7`;
  assert.equal(row, { available: '100', status: 'ACTIVE' });
});

test('funding_balances and funding_operations refuse bad values on insert with 23514', async () => {
  assert.is(await sqlState(sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (0, 'USDT', 1)`), '23514');
  assert.is(await sqlState(sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (8, 'USDT', -1)`), '23514');
  const op = (o: number) => sql`INSERT INTO funding_operations (transfer_id, op) VALUES (1, ${o})`;
  assert.is(await sqlState(op(0)), '23514');
  assert.is(await sqlState(op(4)), '23514');
  assert.is(await sqlState(op(FUNDING_OP_CODES.WITHDRAW)), null);
});

test('the tables a transfer writes keep no CHECK constraint but the direction rule (each would be re-planned per statement)', async () => {
  const rows = await sql<{ table: string; name: string }[]>`
    SELECT conrelid::regclass::text AS table, conname AS name FROM pg_constraint
     WHERE contype = 'c' AND conrelid::regclass::text IN ('transfers_tb', 'funding_balances', 'funding_operations', 'transfer_state_history', 'transfers_active')
     ORDER BY 1, 2`;
  assert.equal([...rows], [{ table: 'transfers_tb', name: 'transfers_tb_direction_check' }]);
});

test('the indexes of the tables a transfer writes are exactly those docs/operations.md names with the query that reads each', async () => {
  const rows = await sql<{ table: string; def: string }[]>`
    SELECT tablename AS table, regexp_replace(indexdef, '^.* USING btree ', '') AS def FROM pg_indexes
     WHERE schemaname = 'public' AND tablename IN ('transfers_tb', 'transfer_state_history', 'funding_operations', 'transfers_active', 'assets')
     ORDER BY 1, 2`;
  assert.equal(
    rows.map((r) => `${r.table} ${r.def}`),
    [
      'assets (asset_id)',
      'assets (symbol)',
      'funding_operations (transfer_id, op)',
      'transfer_state_history (transfer_id)',
      'transfers_active (req_id)',
      'transfers_tb (req_id)',
      'transfers_tb (transfer_id)',
      'transfers_tb (user_id, client_order_id) WHERE (client_order_id IS NOT NULL)',
      'transfers_tb (user_id, created_at)',
      'transfers_tb (user_id, transfer_id DESC)',
    ],
  );
});

/** A code table's rows beside the code list TypeScript writes, both as [code, name] in code order. */
async function codeTable(table: 'transfer_events' | 'funding_ops', codes: Readonly<Record<string, number>>): Promise<[unknown, unknown]> {
  const rows = await sql<{ code: number; name: string }[]>`SELECT code, name FROM ${sql(table)} ORDER BY code`;
  const written = Object.entries(codes)
    .map(([name, code]) => [code, name])
    .sort((x, y) => Number(x[0]) - Number(y[0]));
  return [rows.map((r) => [r.code, r.name]), written];
}

test('transfer_events names exactly the codes src/domain/fsm.ts writes for each event', async () => {
  const [table, written] = await codeTable('transfer_events', EVENT_CODES);
  assert.equal(table, written);
});

test('funding_ops names exactly the codes src/db/transfer-writes.ts writes for each Funding operation', async () => {
  const [table, written] = await codeTable('funding_ops', FUNDING_OP_CODES);
  assert.equal(table, written);
});

test.run();
