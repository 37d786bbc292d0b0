// Proves the versioned migrations: the files apply in order once each with their checksums
// stored; an applied file that was edited, an applied version this build does not know, or a
// gap in the files is refused before anything is written; a database migrated before checksums
// were stored is adopted once; and a production start (MIGRATE_ON_START off) refuses a database
// with pending migrations, naming `make migrate`, which then lets it start.

import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkMigrated, loadMigrations, loadRepeatables, migrate, MIGRATIONS_DIR } from '../../src/db/migrations.js';
import { migrationRefusal, scratchKeeper } from '../support/database.js';
import { cleanupAll, PROJECT_ROOT, useOneServerForThisFile, withHarness } from '../support/process.js';

const run = promisify(execFile);
const scratch = scratchKeeper('test-migrations');

test.before(useOneServerForThisFile);
test.after(async () => {
  await scratch.close();
  await cleanupAll();
});

const freshDatabase = scratch.database;

/** A copy of the migration files that a test may change. */
async function copyOfMigrations(): Promise<string> {
  const dir = await scratch.dir('transfer-migrations-');
  await fs.cp(MIGRATIONS_DIR, dir, { recursive: true });
  return dir;
}

test('the files apply in order once each, with their checksums; a second run applies none', async () => {
  const sql = await freshDatabase();
  const files = await loadMigrations();
  const repeatables = await loadRepeatables();
  assert.equal(await migrate(sql), { applied: files.length, total: files.length, repeatablesApplied: repeatables.length });
  const rows = await sql<
    { version: number; name: string; checksum: string }[]
  >`SELECT version, name, checksum FROM schema_migrations ORDER BY version`;
  assert.equal(
    rows.map((r) => [r.version, r.name, r.checksum]),
    files.map((f) => [f.version, f.name, f.checksum]),
  );
  assert.equal(await migrate(sql), { applied: 0, total: files.length, repeatablesApplied: 0 });
  assert.equal(await checkMigrated(sql), { total: files.length });
});

test('a database that applied a file before a listed comment edit is accepted, and recorded anew by a migrating run; any other text is refused', async () => {
  const sql = await freshDatabase();
  await migrate(sql);
  const total = (await loadMigrations()).length;
  const current = (await loadMigrations()).find((m) => m.version === 10)?.checksum;
  // 0010_spot_log.sql as applied before its first line stopped citing a tracker number.
  const former = '84070770cb793e3ac38c108cf6bed62a1211baac87448af127df06f17306ec11';
  const recorded = async () => (await sql<{ checksum: string }[]>`SELECT checksum FROM schema_migrations WHERE version = 10`)[0]?.checksum;
  await sql`UPDATE schema_migrations SET checksum = ${former} WHERE version = 10`;
  assert.equal(await checkMigrated(sql), { total });
  assert.is(await recorded(), former, 'a check writes nothing');
  assert.equal(await migrate(sql), { applied: 0, total, repeatablesApplied: 0 });
  assert.is(await recorded(), current);
  await sql`UPDATE schema_migrations SET checksum = ${'0'.repeat(64)} WHERE version = 10`;
  assert.match(await migrationRefusal(migrate(sql)), /0010_spot_log\.sql was changed after it was applied/);
});

test('an applied migration edited afterwards is refused by name, and nothing is written', async () => {
  const sql = await freshDatabase();
  await migrate(sql);
  const dir = await copyOfMigrations();
  const file = path.join(dir, '0004_ledger_identity.sql');
  await fs.appendFile(file, '-- an innocent-looking edit\n');
  assert.match(await migrationRefusal(migrate(sql, dir)), /0004_ledger_identity\.sql was changed after it was applied/);
  assert.match(await migrationRefusal(checkMigrated(sql, dir)), /0004_ledger_identity\.sql was changed/);
  // A new file after the edited one was not applied either: the refusal comes first.
  await fs.writeFile(
    path.join(dir, `${String((await loadMigrations()).length + 1).padStart(4, '0')}_later.sql`),
    'CREATE TABLE later_table (id int);\n',
  );
  await migrationRefusal(migrate(sql, dir));
  const later = await sql`SELECT 1 FROM pg_tables WHERE tablename = 'later_table'`;
  assert.is(later.length, 0);
});

test('a gap in the files, a badly named file, or an applied version this build lacks is refused', async () => {
  const gap = await copyOfMigrations();
  await fs.rm(path.join(gap, '0002_hot_updates_and_active_list.sql'));
  assert.match(await migrationRefusal(loadMigrations(gap)), /expected version 2/);
  const badName = await copyOfMigrations();
  await fs.writeFile(path.join(badName, '0099 Oops.sql'), 'SELECT 1;\n');
  assert.match(await migrationRefusal(loadMigrations(badName)), /NNNN_lowercase_name\.sql/);
  const sql = await freshDatabase();
  await migrate(sql);
  const older = await copyOfMigrations();
  const files = await loadMigrations();
  await fs.rm(path.join(older, files[files.length - 1]?.name ?? ''));
  assert.match(await migrationRefusal(migrate(sql, older)), /migrated by a newer build/);
});

test('pending migrations: checkMigrated names them and changes nothing; a database with no schema is named too', async () => {
  const empty = await freshDatabase();
  assert.match(await migrationRefusal(checkMigrated(empty)), /no schema yet: run `make migrate`/);
  const sql = await freshDatabase();
  await migrate(sql);
  const dir = await copyOfMigrations();
  const next = `${String((await loadMigrations()).length + 1).padStart(4, '0')}_pending_one.sql`;
  await fs.writeFile(path.join(dir, next), 'CREATE TABLE pending_one (id int);\n');
  assert.match(await migrationRefusal(checkMigrated(sql, dir)), new RegExp(`1 migration\\(s\\) not applied \\(${next}\\)`));
  assert.is((await sql`SELECT 1 FROM pg_tables WHERE tablename = 'pending_one'`).length, 0);
  assert.equal((await migrate(sql, dir)).applied, 1);
});

test('a database migrated before checksums were stored has them recorded once, then edits are caught', async () => {
  const sql = await freshDatabase();
  await migrate(sql);
  await sql`ALTER TABLE schema_migrations DROP COLUMN name, DROP COLUMN checksum`;
  const files = await loadMigrations();
  assert.equal(await migrate(sql), { applied: 0, total: files.length, repeatablesApplied: 0 });
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
