// Proves the repeatable SQL function files (src/db/migrations/repeatable/): a fresh database gets every function of the
// schema from its file, each file recorded with its checksum, and a second run runs none again; a database of the
// previous build (the versioned files only) holding transfers is upgraded in place, its data kept, a transfer still
// applied; an edited file runs once more and its checksum is updated, a removed one is forgotten; a start without
// MIGRATE_ON_START refuses a file not applied or changed since, naming it and `make migrate`; a badly named file is
// refused before anything is written; and a backup copies no schema_repeatables, so a restore keeps the restoring
// build's functions.

import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { monotonicFactory } from 'ulid';
import { dumpTables, loadTables } from '../../src/backup/pg-tables.js';
import { checkMigrated, loadMigrations, loadRepeatables, migrate, MIGRATIONS_DIR } from '../../src/db/migrations.js';
import { seedDemoAssets } from '../../src/db/schema.js';
import type { Sql } from '../../src/db/sql.js';
import { EVENT_CODES as E, STATE_IDS as S } from '../../src/domain/fsm.js';
import { BALANCE_UNITS_MAX } from '../../src/domain/money.js';
import { migrationRefusal, scratchKeeper } from '../support/database.js';
import { cleanupAll, useOneServerForThisFile } from '../support/process.js';

/** Transfer ids in increasing order. */
const next = monotonicFactory();
const scratch = scratchKeeper('test-migrations-repeatable');

test.before(useOneServerForThisFile);
test.after(async () => {
  await scratch.close();
  await cleanupAll();
});

const freshDatabase = scratch.database;

const scratchDir = (): Promise<string> => scratch.dir('transfer-repeatables-');

/** A copy of the migration files, repeatable ones included, that a test may change. */
async function copyOfMigrations(): Promise<string> {
  const dir = await scratchDir();
  await fs.cp(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

/** The last version whose history rows named their transfer by req_id and their event by name. */
const LAST_TEXT_HISTORY_VERSION = 13;

/** A previous build's schema: the versioned files up to `lastVersion` alone, whose functions are the bodies they restate. */
async function versionedOnly(lastVersion: number): Promise<string> {
  const dir = await scratchDir();
  for (const m of await loadMigrations()) if (m.version <= lastVersion) await fs.writeFile(path.join(dir, m.name), m.sql);
  return dir;
}

/** The body a file gives its function: the text between its dollar quotes, as PostgreSQL keeps it in prosrc. */
function fileBody(sql: string): string {
  const match = /\bAS\s+(\$[a-z_]*\$)([\s\S]*?)\1/i.exec(sql);
  assert.ok(match !== null, 'the file holds a dollar-quoted body');
  return match[2] as string;
}

async function liveBody(sql: Sql, fn: string): Promise<string | null> {
  const rows = await sql<{ body: string }[]>`
    SELECT prosrc AS body FROM pg_proc WHERE proname = ${fn} AND pronamespace = current_schema()::regnamespace`;
  return rows[0]?.body ?? null;
}

async function recorded(sql: Sql): Promise<{ name: string; checksum: string; at: string }[]> {
  return sql<{ name: string; checksum: string; at: string }[]>`
    SELECT name, checksum, applied_at::text AS at FROM schema_repeatables ORDER BY name`;
}

test('a fresh database: every function of the schema is its file, each file recorded once; a second run runs none', async () => {
  const sql = await freshDatabase();
  const files = await loadRepeatables();
  const first = await migrate(sql);
  assert.is(first.repeatablesApplied, files.length);
  const functions = await sql<{ name: string }[]>`
    SELECT proname AS name FROM pg_proc WHERE pronamespace = current_schema()::regnamespace ORDER BY proname`;
  assert.equal(
    functions.map((f) => `${f.name}.sql`),
    files.map((f) => f.name),
    'one file per function',
  );
  for (const f of files) assert.is(await liveBody(sql, f.name.slice(0, -'.sql'.length)), fileBody(f.sql), `${f.name} is live`);
  // CREATE OR REPLACE resets a function's settings to those its file names: the batch writer keeps its index plans.
  const settings = await sql<{ name: string; config: string[] | null }[]>`
    SELECT proname AS name, proconfig AS config FROM pg_proc WHERE proname IN ('transfer_apply', 'transfer_apply_set') ORDER BY proname`;
  assert.equal(
    settings.map((s) => [s.name, s.config]),
    [
      ['transfer_apply', ['enable_seqscan=off']],
      ['transfer_apply_set', ['enable_seqscan=off']],
    ],
  );
  assert.equal(
    (await recorded(sql)).map((r) => [r.name, r.checksum]),
    files.map((f) => [f.name, f.checksum]),
  );
  await sql`UPDATE schema_repeatables SET applied_at = '2000-01-01T00:00:00Z'`;
  assert.equal(await migrate(sql), { applied: 0, total: (await loadMigrations()).length, repeatablesApplied: 0 });
  assert.equal(
    (await recorded(sql)).map((r) => r.at.slice(0, 10)),
    files.map(() => '2000-01-01'),
    'an unchanged file does not run again',
  );
  assert.equal(await checkMigrated(sql), { total: (await loadMigrations()).length });
});

/**
 * A FUNDING→SPOT transfer created and debited, left in TARGET_PENDING: the first half of the usual
 * path. Its events go by name to a build before migration 0014, by code (EVENT_CODES) since.
 */
function creation(reqId: string, user: bigint, amount: bigint, events: 'names' | 'codes' = 'codes'): Record<string, unknown> {
  const ev = (name: 'SOURCE_OK' | 'TARGET_CALL' | 'SOURCE_FAIL') => (events === 'names' ? name : E[name]);
  return {
    k: 'c',
    r: reqId,
    u: String(user),
    a: 'USDT',
    m: String(amount),
    e: S.INIT,
    st: 1,
    tt: 2,
    coid: null,
    c: null,
    o: 'WITHDRAW',
    p: [
      [S.SOURCE_DONE, ev('SOURCE_OK'), false],
      [S.TARGET_PENDING, ev('TARGET_CALL'), false],
    ],
    q: [[S.FAILED, ev('SOURCE_FAIL'), true]],
  };
}

async function apply(sql: Sql, fn: 'transfer_apply' | 'transfer_apply_set', items: Record<string, unknown>[]): Promise<string[]> {
  const input = JSON.stringify(items);
  const rows =
    fn === 'transfer_apply'
      ? await sql<{ out: { k: string }[] }[]>`SELECT transfer_apply(${input}::text::jsonb, ${BALANCE_UNITS_MAX}::bigint) AS out`
      : await sql<{ out: { k: string }[] }[]>`SELECT transfer_apply_set(${input}::text::jsonb, ${BALANCE_UNITS_MAX}::bigint) AS out`;
  return (rows[0]?.out ?? []).map((a) => a.k);
}

/**
 * The ledger's rows; its history and Funding records read by req_id and names, as rows stored them
 * before migrations 0014 and 0015 or, by transfer_id and codes, since.
 */
async function ledgerRows(sql: Sql, history: 'by req_id' | 'by transfer_id' = 'by transfer_id'): Promise<unknown> {
  return {
    transfers: await sql`SELECT req_id, user_id::text, amount::text, state FROM transfers_tb ORDER BY req_id`,
    balances: await sql`SELECT user_id::text, asset, available::text FROM funding_balances ORDER BY user_id, asset`,
    history:
      history === 'by req_id'
        ? await sql`SELECT req_id, id::text, at::text, from_state, to_state, event, detail FROM transfer_state_history ORDER BY req_id, id`
        : await sql`
            SELECT t.req_id, h.id::text, h.at::text, h.from_state, h.to_state, e.name AS event, h.detail
              FROM transfer_state_history AS h JOIN transfers_tb AS t USING (transfer_id) JOIN transfer_events AS e ON e.code = h.event
             ORDER BY t.req_id, h.id`,
    operations:
      history === 'by req_id'
        ? await sql`SELECT req_id, op::text, user_id::text, asset, amount::text, outcome, code FROM funding_operations ORDER BY req_id, op`
        : await sql`
            SELECT t.req_id, o.name AS op, t.user_id::text, t.asset, t.amount::text,
                   CASE WHEN f.code IS NULL THEN 'APPLIED' ELSE 'REJECTED' END AS outcome, f.code
              FROM funding_operations AS f JOIN transfers_tb AS t USING (transfer_id) JOIN funding_ops AS o ON o.code = f.op
             ORDER BY t.req_id, o.name`,
  };
}

test('a database of the previous build, holding transfers, is upgraded in place: functions replaced, history and Funding records converted to transfer_id and codes, data kept, transfers still apply', async () => {
  const sql = await freshDatabase();
  await migrate(sql, await versionedOnly(LAST_TEXT_HISTORY_VERSION));
  assert.is((await sql`SELECT to_regclass('schema_repeatables') AS t`)[0]?.t, null, 'the previous build kept no repeatables');
  await seedDemoAssets(sql);
  const user = 7001n;
  await sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (${user}, 'USDT', 1000)`;
  assert.equal(await apply(sql, 'transfer_apply', [creation(next(), user, 100n, 'names')]), ['moved']);
  assert.equal(await apply(sql, 'transfer_apply_set', [creation(next(), user, 200n, 'names')]), ['moved']);
  // Refused: its history ends in FAILED with the refusal's code as detail.
  assert.equal(await apply(sql, 'transfer_apply', [creation(next(), user, 5_000n, 'names')]), ['moved']);
  const before = await ledgerRows(sql, 'by req_id');
  assert.is((before as { history: unknown[] }).history.length, 8, 'three rows for each debited transfer, two for the refused one');
  const files = await loadRepeatables();
  const setFile = files.find((f) => f.name === 'transfer_apply_set.sql');
  assert.ok(setFile !== undefined);
  assert.is.not(await liveBody(sql, 'transfer_apply_set'), fileBody(setFile.sql), "the previous build's body differs");
  assert.match(
    await migrationRefusal(checkMigrated(sql)),
    /2 migration\(s\) not applied \(0014_compact_history\.sql, 0015_compact_funding_operations\.sql\)/,
  );

  const upgraded = await migrate(sql);
  assert.equal(
    [upgraded.applied, upgraded.repeatablesApplied],
    [(await loadMigrations()).length - LAST_TEXT_HISTORY_VERSION, files.length],
  );
  for (const f of files) assert.is(await liveBody(sql, f.name.slice(0, -'.sql'.length)), fileBody(f.sql), `${f.name} is live`);
  assert.equal(await ledgerRows(sql), before, 'the data is untouched, every history row converted');
  assert.equal(await apply(sql, 'transfer_apply', [creation(next(), user, 300n)]), ['moved']);
  assert.equal(await apply(sql, 'transfer_apply_set', [creation(next(), user, 400n)]), ['moved']);
  const [rows] = await sql<{ n: number; named: number }[]>`
    SELECT count(*)::int AS n, count(*) FILTER (WHERE e.name IS NOT NULL AND t.req_id IS NOT NULL)::int AS named
      FROM transfer_state_history AS h LEFT JOIN transfers_tb AS t USING (transfer_id) LEFT JOIN transfer_events AS e ON e.code = h.event`;
  assert.equal(rows, { n: 14, named: 14 }, 'the new rows name their transfer and event too');
  const [balance] = await sql<{ available: string }[]>`SELECT available::text FROM funding_balances WHERE user_id = ${user}`;
  assert.is(balance?.available, '0', '1000 - 100 - 200 - 300 - 400');
  await checkMigrated(sql);
});

test('migration 0015 refuses Funding records it cannot convert (of no transfer, of other parameters than their transfer, an outcome its code denies), changing nothing', async () => {
  const sql = await freshDatabase();
  await migrate(sql, await versionedOnly(LAST_TEXT_HISTORY_VERSION + 1));
  await seedDemoAssets(sql);
  const reqId = next();
  await sql`
    INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state)
    VALUES (${reqId}, 7002, 'USDT', 100, 1, 1, 2, ${S.ROLLED_BACK})`;
  await sql`
    INSERT INTO funding_operations (req_id, op, user_id, asset, amount, outcome, code)
    VALUES (${reqId}, 'WITHDRAW', 7002, 'USDT', 100, 'APPLIED', NULL), (${reqId}, 'REFUND', 7002, 'USDT', 99, 'APPLIED', NULL),
           (${next()}, 'DEPOSIT', 7002, 'USDT', 5, 'APPLIED', NULL), (${reqId}, 'DEPOSIT', 7002, 'USDT', 100, 'REJECTED', NULL)`;
  const before = await sql`SELECT * FROM funding_operations ORDER BY req_id, op`;
  const refused = await migrate(sql).then(
    () => 'migrated',
    (e: unknown) => String((e as Error).message),
  );
  assert.is(
    refused,
    "migration 0015: funding_operations holds 1 row(s) of no transfer, 1 of other parameters than their transfer's, 1 whose outcome and code disagree",
  );
  assert.equal(await sql`SELECT * FROM funding_operations ORDER BY req_id, op`, before, 'the records are as they were');
  assert.match(await migrationRefusal(checkMigrated(sql)), /1 migration\(s\) not applied \(0015_compact_funding_operations\.sql\)/);
});

test('an edited file runs once more, its checksum updated; until then a start without MIGRATE_ON_START refuses it by name; a removed one is forgotten', async () => {
  const sql = await freshDatabase();
  const dir = await copyOfMigrations();
  await migrate(sql, dir);
  const old = await recorded(sql);
  const file = path.join(dir, 'repeatable', 'funding_refusal.sql');
  const text = await fs.readFile(file, 'utf8');
  assert.ok(text.includes('\nBEGIN\n'));
  await fs.writeFile(file, text.replace('\nBEGIN\n', '\nBEGIN\n-- an edited comment, inside the body so the live function shows it\n'));
  assert.match(
    await migrationRefusal(checkMigrated(sql, dir)),
    /1 repeatable SQL file\(s\) to apply \(repeatable\/funding_refusal\.sql changed since it was applied\): run `make migrate`/,
  );
  assert.equal(await recorded(sql), old, 'the refusal wrote nothing');
  assert.is((await migrate(sql, dir)).repeatablesApplied, 1);
  assert.match((await liveBody(sql, 'funding_refusal')) ?? '', /an edited comment/);
  const now = await recorded(sql);
  const edited = (await loadRepeatables(dir)).find((f) => f.name === 'funding_refusal.sql');
  assert.is(now.find((r) => r.name === 'funding_refusal.sql')?.checksum, edited?.checksum);
  assert.is.not(edited?.checksum, old.find((r) => r.name === 'funding_refusal.sql')?.checksum);
  assert.equal(
    now.filter((r) => r.name !== 'funding_refusal.sql'),
    old.filter((r) => r.name !== 'funding_refusal.sql'),
    'the others did not run',
  );
  assert.is((await migrate(sql, dir)).repeatablesApplied, 0);
  await checkMigrated(sql, dir);
  // A function removed for good (a versioned migration drops it): its file gone, its row goes too.
  await fs.rm(file);
  assert.is((await migrate(sql, dir)).repeatablesApplied, 0);
  assert.ok(!(await recorded(sql)).some((r) => r.name === 'funding_refusal.sql'), 'the removed file is forgotten');
});

test('a badly named file, or anything but a file, in the repeatable folder is refused before anything is written', async () => {
  for (const bad of ['Transfer-Apply.sql', 'notes.txt', 'sub/']) {
    const dir = await copyOfMigrations();
    const target = path.join(dir, 'repeatable', bad);
    if (bad.endsWith('/')) await fs.mkdir(target);
    else await fs.writeFile(target, 'SELECT 1;\n');
    assert.match(await migrationRefusal(loadRepeatables(dir)), /holds only files named lowercase_name\.sql/, bad);
    const sql = await freshDatabase();
    assert.match(await migrationRefusal(migrate(sql, dir)), new RegExp(bad.replace(/[.]/g, '\\.').replace(/\/$/, '')), bad);
    assert.is((await sql`SELECT 1 FROM pg_tables WHERE schemaname = current_schema()`).length, 0, `${bad}: nothing written`);
  }
});

test("a backup copies no schema_repeatables: a restore into a build whose functions differ keeps that build's", async () => {
  const taking = await freshDatabase();
  const takingBuild = await copyOfMigrations();
  const setFile = path.join(takingBuild, 'repeatable', 'transfer_apply_set.sql');
  await fs.writeFile(setFile, (await fs.readFile(setFile, 'utf8')).replace('\nDECLARE\n', "\nDECLARE\n-- the taking build's body\n"));
  await migrate(taking, takingBuild);
  await seedDemoAssets(taking);
  const backupDir = await scratchDir();
  const tables = await taking.begin((tx) => dumpTables(tx, backupDir));
  assert.ok(!tables.some((t) => t.name.startsWith('schema_')), tables.map((t) => t.name).join(', '));

  const restoring = await freshDatabase();
  await migrate(restoring);
  await restoring.begin((tx) => loadTables(tx, backupDir, tables));
  const files = await loadRepeatables();
  assert.equal(
    (await recorded(restoring)).map((r) => [r.name, r.checksum]),
    files.map((f) => [f.name, f.checksum]),
  );
  const live = await liveBody(restoring, 'transfer_apply_set');
  assert.is(live, fileBody(files.find((f) => f.name === 'transfer_apply_set.sql')?.sql ?? ''));
  assert.equal((await restoring`SELECT symbol FROM assets ORDER BY symbol`).length, 3, 'the rows came across');
  await checkMigrated(restoring);
});

test.run();
