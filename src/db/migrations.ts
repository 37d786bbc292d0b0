// The schema's history as versioned SQL files, src/db/migrations/NNNN_name.sql, applied in order
// and recorded in schema_migrations with each file's SHA-256. An applied file must never change:
// a start (or `make migrate`) that finds an applied version whose file now reads differently, or
// an applied version the files no longer have, is refused with the version named, before anything
// is written. A change to the schema is a new file. Applying runs under an advisory lock in one
// transaction, so several processes starting together do not race and a failed file leaves none
// of the pending ones applied.

import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql, Tx } from './sql.js';

/** The migration files: compiled to dist/src/db/, they stay in src/db/migrations/ of the project. */
export const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'src', 'db', 'migrations');
const MIGRATION_LOCK_KEY = 0x7472616e73666572n; // "transfer"
const FILE_NAME = /^(\d{4})_([a-z0-9_]+)\.sql$/;

type Migration = { readonly version: number; readonly name: string; readonly sql: string; readonly checksum: string };

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
    migrations.push({ version, name: file, sql: bytes.toString('utf8'), checksum: createHash('sha256').update(bytes).digest('hex') });
  }
  if (migrations.length === 0) throw new MigrationError(`no migration files in ${dir}`);
  return migrations;
}

/** The schema version this build creates: its newest migration. A backup restores only into the same. */
export async function schemaVersion(dir: string = MIGRATIONS_DIR): Promise<number> {
  return (await loadMigrations(dir)).length;
}

/** Applies every pending migration; refuses an edited or unknown applied one first. */
export async function migrate(sql: Sql, dir: string = MIGRATIONS_DIR): Promise<{ applied: number; total: number }> {
  const migrations = await loadMigrations(dir);
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    const pending = await verifyApplied(tx, migrations, true);
    for (const m of pending) {
      await tx.unsafe(m.sql);
      await tx`INSERT INTO schema_migrations (version, name, checksum) VALUES (${m.version}, ${m.name}, ${m.checksum})`;
    }
    return { applied: pending.length, total: migrations.length };
  });
}

/**
 * For a start without MIGRATE_ON_START: the database must be exactly at the files' version.
 * Changes nothing; throws MigrationError naming what to do.
 */
export async function checkMigrated(sql: Sql, dir: string = MIGRATIONS_DIR): Promise<{ total: number }> {
  const migrations = await loadMigrations(dir);
  return sql.begin(async (tx) => {
    const exists = await tx`SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = 'schema_migrations'`;
    if (exists.length === 0)
      throw new MigrationError(`the database has no schema yet: run \`make migrate\` (or start with MIGRATE_ON_START=true)`);
    const pending = await verifyApplied(tx, migrations, false);
    if (pending.length > 0)
      throw new MigrationError(
        `${pending.length} migration(s) not applied (${pending.map((m) => m.name).join(', ')}): run \`make migrate\` (or start with MIGRATE_ON_START=true)`,
      );
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
    if (row.checksum !== file.checksum) {
      throw new MigrationError(
        `${file.name} was changed after it was applied (checksum ${row.checksum.slice(0, 12)}… applied, ${file.checksum.slice(0, 12)}… now): never edit an applied migration, add a new one`,
      );
    }
  }
  const applied = new Set(rows.map((r) => r.version));
  return migrations.filter((m) => !applied.has(m.version));
}
