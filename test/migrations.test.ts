// Proves the versioned migrations: the files apply in order once each with their checksums
// stored; an applied file that was edited, an applied version this build does not know, or a
// gap in the files is refused before anything is written; a database migrated before checksums
// were stored is adopted once; and a production start (MIGRATE_ON_START off) refuses a database
// with pending migrations, naming `make migrate`, which then lets it start.

import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkMigrated, loadMigrations, migrate, MigrationError, MIGRATIONS_DIR } from '../src/db/migrations.js';
import { openSql, type Sql } from '../src/db/sql.js';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { cleanupAll, PROJECT_ROOT, useOneServerForThisFile, withHarness } from './support/process.js';

const run = promisify(execFile);
const opened: { db: TestDatabase; sql: Sql }[] = [];
const dirs: string[] = [];

test.before(useOneServerForThisFile);
test.after(async () => {
  for (const { db, sql } of opened) {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
  for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  await cleanupAll();
});

async function freshDatabase(): Promise<Sql> {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 2, application: 'test-migrations' });
  opened.push({ db, sql });
  return sql;
}

/** A copy of the migration files that a test may change. */
async function copyOfMigrations(): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-migrations-'));
  dirs.push(dir);
  await fs.cp(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

async function refusal(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof MigrationError, `refused with a MigrationError, got ${String(error)}`);
  return (error as MigrationError).message;
}

test('the files apply in order once each, with their checksums; a second run applies none', async () => {
  const sql = await freshDatabase();
  const files = await loadMigrations();
  assert.equal(await migrate(sql), { applied: files.length, total: files.length });
  const rows = await sql<
    { version: number; name: string; checksum: string }[]
  >`SELECT version, name, checksum FROM schema_migrations ORDER BY version`;
  assert.equal(
    rows.map((r) => [r.version, r.name, r.checksum]),
    files.map((f) => [f.version, f.name, f.checksum]),
  );
  assert.equal(await migrate(sql), { applied: 0, total: files.length });
  assert.equal(await checkMigrated(sql), { total: files.length });
});

test('an applied migration edited afterwards is refused by name, and nothing is written', async () => {
  const sql = await freshDatabase();
  await migrate(sql);
  const dir = await copyOfMigrations();
  const file = path.join(dir, '0004_ledger_identity.sql');
  await fs.appendFile(file, '-- an innocent-looking edit\n');
  assert.match(await refusal(migrate(sql, dir)), /0004_ledger_identity\.sql was changed after it was applied/);
  assert.match(await refusal(checkMigrated(sql, dir)), /0004_ledger_identity\.sql was changed/);
  // A new file after the edited one was not applied either: the refusal comes first.
  await fs.writeFile(
    path.join(dir, `${String((await loadMigrations()).length + 1).padStart(4, '0')}_later.sql`),
    'CREATE TABLE later_table (id int);\n',
  );
  await refusal(migrate(sql, dir));
  const later = await sql`SELECT 1 FROM pg_tables WHERE tablename = 'later_table'`;
  assert.is(later.length, 0);
});

test('a gap in the files, a badly named file, or an applied version this build lacks is refused', async () => {
  const gap = await copyOfMigrations();
  await fs.rm(path.join(gap, '0002_hot_updates_and_active_list.sql'));
  assert.match(await refusal(loadMigrations(gap)), /expected version 2/);
  const badName = await copyOfMigrations();
  await fs.writeFile(path.join(badName, '0099 Oops.sql'), 'SELECT 1;\n');
  assert.match(await refusal(loadMigrations(badName)), /NNNN_lowercase_name\.sql/);
  const sql = await freshDatabase();
  await migrate(sql);
  const older = await copyOfMigrations();
  const files = await loadMigrations();
  await fs.rm(path.join(older, files[files.length - 1]?.name ?? ''));
  assert.match(await refusal(migrate(sql, older)), /migrated by a newer build/);
});

test('pending migrations: checkMigrated names them and changes nothing; a database with no schema is named too', async () => {
  const empty = await freshDatabase();
  assert.match(await refusal(checkMigrated(empty)), /no schema yet: run `make migrate`/);
  const sql = await freshDatabase();
  await migrate(sql);
  const dir = await copyOfMigrations();
  const next = `${String((await loadMigrations()).length + 1).padStart(4, '0')}_pending_one.sql`;
  await fs.writeFile(path.join(dir, next), 'CREATE TABLE pending_one (id int);\n');
  assert.match(await refusal(checkMigrated(sql, dir)), new RegExp(`1 migration\\(s\\) not applied \\(${next}\\)`));
  assert.is((await sql`SELECT 1 FROM pg_tables WHERE tablename = 'pending_one'`).length, 0);
  assert.equal((await migrate(sql, dir)).applied, 1);
});

test('a database migrated before checksums were stored has them recorded once, then edits are caught', async () => {
  const sql = await freshDatabase();
  await migrate(sql);
  await sql`ALTER TABLE schema_migrations DROP COLUMN name, DROP COLUMN checksum`;
  const files = await loadMigrations();
  assert.equal(await migrate(sql), { applied: 0, total: files.length });
  const stored = await sql<{ checksum: string }[]>`SELECT checksum FROM schema_migrations ORDER BY version`;
  assert.equal(
    stored.map((r) => r.checksum),
    files.map((f) => f.checksum),
  );
});

test('production (MIGRATE_ON_START off) refuses pending migrations naming make migrate; after it, the service starts', async () => {
  await withHarness(async (h) => {
    const production = { NODE_ENV: 'production', PRINT_BANNER: '0' };
    const refused = await h.startToDie(production);
    const exit = await refused.waitForExit(30_000);
    assert.is(exit.code, 4, refused.stderrTail());
    assert.match(refused.stderrTail(), /no schema yet: run `make migrate`/);
    const tables = await h.sql`SELECT 1 FROM pg_tables WHERE schemaname = 'public'`;
    assert.is(tables.length, 0, 'the refused start wrote nothing');
    const out = await run(process.execPath, [path.join(PROJECT_ROOT, 'dist', 'src', 'migrate-cli.js')], {
      env: { ...process.env, DATABASE_URL: h.databaseUrl, NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(40) },
    });
    assert.match(out.stdout, /migrate: \d+ applied/);
    const svc = await h.start(production);
    const ready = await svc.call('GET', '/readyz');
    assert.is(ready.status, 200, JSON.stringify(ready.body));
  });
});

test.run();
