// The schema as SQL files of two kinds, applied by `migrate` in one transaction under an advisory
// lock, so several processes starting together do not race and a failed file leaves nothing of
// the run applied.
//
// Versioned: src/db/migrations/NNNN_name.sql, applied in order, once each, and recorded in
// schema_migrations with each file's SHA-256. An applied file must never change: a start (or
// `make migrate`) that finds an applied version whose file now reads differently, or an applied
// version the files no longer have, is refused with the version named, before anything is
// written (the comment edits of COMMENT_REVISIONS aside). A change to the tables is a new file.
// From 0014 on, a versioned file holds only tables, indexes, the triggers that bind an existing
// function to a new table (owner_fence), and data moves: never a function's body (0003, 0005,
// 0010 and 0012 still hold the bodies they once created, frozen).
//
// Repeatable: src/db/migrations/repeatable/<function_name>.sql, one per SQL function (trigger
// functions included), holding its current definition as CREATE OR REPLACE FUNCTION, so a change
// to a function is a diff of its file. After the pending versioned files, each repeatable file
// whose SHA-256 differs from the one recorded in schema_repeatables (or that was never applied)
// runs again, in file-name order, and its new checksum is recorded; an unchanged one does not
// run. A repeatable file runs after every versioned one, so a versioned file must not rely on a
// function's new body, nor on a function a repeatable file adds: the trigger that binds a new
// trigger function goes in that function's file, after it (CREATE OR REPLACE TRIGGER). A file's
// name is lowercase letters, digits and `_`, then `.sql`; anything else in that folder is
// refused. A start without MIGRATE_ON_START refuses a repeatable file not applied or changed
// since, naming it, as it does a pending versioned one.
//
// A function whose arguments or return type change cannot be replaced in place (CREATE OR REPLACE
// would add a second function beside the old one for new arguments, and refuses a new return
// type): its file then starts with `DROP FUNCTION IF EXISTS name(old argument types);`, which is
// harmless once the old one is gone. A function removed for good: delete its file, and drop it in
// a versioned migration (its row in schema_repeatables is removed by the next run). A function's
// settings (`SET enable_seqscan`) are part of its definition: CREATE OR REPLACE resets them to
// those the file names.

import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql, Tx } from './sql.js';

/** The migration files: compiled to dist/src/db/, they stay in src/db/migrations/ of the project. */
export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'db', 'migrations');
const MIGRATION_LOCK_KEY = 0x7472616e73666572n; // "transfer"
const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;
/** The folder of the repeatable files, inside the versioned files' folder. */
const REPEATABLE_FOLDER = 'repeatable';
const REPEATABLE_NAME = /^[a-z0-9_]+\.sql$/;

/**
 * Applied files whose text changed after they were applied in their comments alone, each with
 * the SHA-256 of every text it replaced (their first lines cited a tracker a reader does not
 * have). A database that applied a former text is accepted, and a migrating start records the
 * file's current checksum for it. A change to a statement is never listed here: it is a new file.
 */
const COMMENT_REVISIONS: ReadonlyMap<string, readonly string[]> = new Map([
  ['0010_spot_log.sql', ['84070770cb793e3ac38c108cf6bed62a1211baac87448af127df06f17306ec11']],
  ['0011_seq_clock.sql', ['feab48079a71dce7455bef740ac69285286802172e6df4b2a1fbf6a57bdf769d']],
]);

type Migration = { readonly version: number; readonly name: string; readonly sql: string; readonly checksum: string };
type Repeatable = { readonly name: string; readonly sql: string; readonly checksum: string };

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/** The migration files of `dir`, in version order; versions must run 1, 2, 3… with no gap. */
export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const names = (await fs.readdir(dir)).filter((n) => n.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of names) {
    const match = FILE_NAME.exec(file);
    if (match === null) throw new MigrationError(`${path.join(dir, file)}: a migration file is named NNNN_lowercase_name.sql`);
    const version = Number(match[1]);
    if (version !== migrations.length + 1)
      throw new MigrationError(`${path.join(dir, file)}: expected version ${migrations.length + 1} (versions run 1, 2, 3… with no gap)`);
    const bytes = await fs.readFile(path.join(dir, file));
    migrations.push({ version, name: file, sql: bytes.toString('utf8'), checksum: sha256(bytes) });
  }
  if (migrations.length === 0) throw new MigrationError(`no migration files in ${dir}`);
  return migrations;
}

/** The schema version this build creates: its newest migration. A backup restores only into the same. */
export async function schemaVersion(dir: string = MIGRATIONS_DIR): Promise<number> {
  return (await loadMigrations(dir)).length;
}

/**
 * The repeatable files of `dir`/repeatable, in file-name order; none when the folder is absent (a
 * copy of the versioned files alone, as a test of an earlier build's schema makes).
 */
export async function loadRepeatables(dir: string = MIGRATIONS_DIR): Promise<Repeatable[]> {
  const folder = path.join(dir, REPEATABLE_FOLDER);
  const entries = await fs.readdir(folder, { withFileTypes: true }).catch((e: unknown) => {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  });
  const repeatables: Repeatable[] = [];
  for (const entry of [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (!entry.isFile() || !REPEATABLE_NAME.test(entry.name))
      throw new MigrationError(
        `${path.join(folder, entry.name)}: the repeatable folder holds only files named lowercase_name.sql (a-z, 0-9, _), one per function`,
      );
    const bytes = await fs.readFile(path.join(folder, entry.name));
    repeatables.push({ name: entry.name, sql: bytes.toString('utf8'), checksum: sha256(bytes) });
  }
  return repeatables;
}

/** Applies every pending migration, then every new or changed repeatable file; refuses an edited or unknown applied migration first. */
export async function migrate(
  sql: Sql,
  dir: string = MIGRATIONS_DIR,
): Promise<{ applied: number; total: number; repeatablesApplied: number }> {
  const migrations = await loadMigrations(dir);
  const repeatables = await loadRepeatables(dir);
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    const pending = await verifyApplied(tx, migrations, true);
    for (const m of pending) {
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_migrations (version, name, checksum) VALUES (${m.version}, ${m.name}, ${m.checksum})`;
    }
    const repeated = await applyRepeatables(tx, repeatables);
    return { applied: pending.length, total: migrations.length, repeatablesApplied: repeated };
  });
}

/**
 * Runs each repeatable file not recorded with its current checksum and records it; forgets the
 * rows of files this build no longer has. Answers how many ran. Without files it touches nothing.
 */
async function applyRepeatables(tx: Tx, repeatables: readonly Repeatable[]): Promise<number> {
  if (repeatables.length === 0) return 0;
  const found = await recordedRepeatables(tx);
  if (found === null) {
    await tx`CREATE TABLE schema_repeatables (name TEXT PRIMARY KEY, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`;
    // Fenced like every table of the schema but ledger_owner (migration 0013 says why), although
    // only the migrator writes it, on a connection that carries no owner epoch.
    await tx`CREATE TRIGGER schema_repeatables_fence BEFORE INSERT OR UPDATE OR DELETE ON schema_repeatables
               FOR EACH STATEMENT EXECUTE FUNCTION owner_fence()`;
  }
  const recorded = found ?? new Map<string, string>();
  const due = staleRepeatables(repeatables, recorded);
  for (const { file } of due) {
    await tx.unsafe(file.sql);
    await tx`INSERT INTO schema_repeatables (name, checksum) VALUES (${file.name}, ${file.checksum})
             ON CONFLICT (name) DO UPDATE SET checksum = EXCLUDED.checksum, applied_at = now()`;
  }
  const gone = [...recorded.keys()].filter((name) => !repeatables.some((r) => r.name === name));
  if (gone.length > 0) await tx`DELETE FROM schema_repeatables WHERE name = ANY (${gone})`;
  return due.length;
}

/** Each applied repeatable file's checksum by name; null before the first run made the table. */
async function recordedRepeatables(tx: Tx): Promise<Map<string, string> | null> {
  const [table] = await tx<{ present: boolean }[]>`SELECT to_regclass('schema_repeatables') IS NOT NULL AS present`;
  if (table?.present !== true) return null;
  const rows = await tx<{ name: string; checksum: string }[]>`SELECT name, checksum FROM schema_repeatables`;
  return new Map(rows.map((r) => [r.name, r.checksum]));
}

/** The repeatable files not applied yet, or changed since they were, with which of the two. */
function staleRepeatables(
  repeatables: readonly Repeatable[],
  recorded: ReadonlyMap<string, string>,
): { file: Repeatable; changed: boolean }[] {
  return repeatables
    .filter((file) => recorded.get(file.name) !== file.checksum)
    .map((file) => ({ file, changed: recorded.has(file.name) }));
}

/**
 * For a start without MIGRATE_ON_START: the database must be exactly at the files' version, and
 * every repeatable file applied as it reads now. Changes nothing; throws MigrationError naming what to do.
 */
export async function checkMigrated(sql: Sql, dir: string = MIGRATIONS_DIR): Promise<{ total: number }> {
  const migrations = await loadMigrations(dir);
  const repeatables = await loadRepeatables(dir);
  return sql.begin(async (tx) => {
    const exists = await tx`SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'`;
    if (exists.length === 0)
      throw new MigrationError(`the database has no schema yet: run \`make migrate\` (or start with MIGRATE_ON_START=true)`);
    const pending = await verifyApplied(tx, migrations, false);
    if (pending.length > 0)
      throw new MigrationError(
        `${pending.length} migration(s) not applied (${pending.map((m) => m.name).join(', ')}): run \`make migrate\` (or start with MIGRATE_ON_START=true)`,
      );
    const stale = staleRepeatables(repeatables, (await recordedRepeatables(tx)) ?? new Map());
    if (stale.length > 0) {
      const named = stale.map((s) => `${REPEATABLE_FOLDER}/${s.file.name} ${s.changed ? 'changed since it was applied' : 'not applied'}`);
      throw new MigrationError(
        `${stale.length} repeatable SQL file(s) to apply (${named.join(', ')}): run \`make migrate\` (or start with MIGRATE_ON_START=true)`,
      );
    }
    return { total: migrations.length };
  });
}

/**
 * Checks every applied version against its file and answers the pending ones. A database
 * migrated by a build that stored no checksums has them recorded now (`adopt`), once.
 */
async function verifyApplied(tx: Tx, migrations: readonly Migration[], adopt: boolean): Promise<Migration[]> {
  if (adopt) {
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`;
    await tx`ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS name TEXT, ADD COLUMN IF NOT EXISTS checksum TEXT`;
  }
  const rows = await tx<{ version: number; checksum: string | null }[]>`SELECT * FROM schema_migrations ORDER BY version`;
  const byVersion = new Map(migrations.map((m) => [m.version, m]));
  for (const row of rows) {
    const file = byVersion.get(row.version);
    if (file === undefined)
      throw new MigrationError(
        `the database has migration ${row.version} applied, which this build does not know: it was migrated by a newer build`,
      );
    if (row.checksum === null || row.checksum === undefined) {
      if (adopt) await tx`UPDATE schema_migrations SET name = ${file.name}, checksum = ${file.checksum} WHERE version = ${row.version}`;
      continue;
    }
    if (row.checksum !== file.checksum && COMMENT_REVISIONS.get(file.name)?.includes(row.checksum) === true) {
      if (adopt) await tx`UPDATE schema_migrations SET checksum = ${file.checksum} WHERE version = ${row.version}`;
      continue;
    }
    if (row.checksum !== file.checksum) {
      throw new MigrationError(
        `${file.name} was changed after it was applied (checksum ${row.checksum.slice(0, 12)}… applied, ${file.checksum.slice(0, 12)}… now): never edit an applied migration, add a new one`,
      );
    }
  }
  const applied = new Set(rows.map((r) => r.version));
  return migrations.filter((m) => !applied.has(m.version));
}
