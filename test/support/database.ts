// A fresh PostgreSQL database for one test file: on the suite's server when the runner
// provides one (TEST_PG_ADMIN_URL), else on an embedded server this file starts itself.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { startEmbeddedPg, type EmbeddedPg } from '../../src/db/embedded-pg.js';
import { MigrationError } from '../../src/db/migrations.js';
import { migrate } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { freePort } from './ports.js';

export type TestDatabase = { readonly url: string; readonly drop: () => Promise<void> };

/** An embedded server in a fresh temporary directory, on a free port; stop() stops it and removes the directory, even when stopping fails. */
export type ScratchPg = { readonly pg: EmbeddedPg; readonly dir: string; readonly stop: () => Promise<void> };

export async function startScratchPg(prefix: string): Promise<ScratchPg> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
  // The server runs as an unprivileged user when the suite runs as root: it must reach the dir.
  await fs.chmod(dir, 0o755);
  const pg = await startEmbeddedPg({ dir, port: await freePort(), log: () => undefined }).catch(async (error: unknown) => {
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    pg,
    dir,
    stop: async () => {
      try {
        await pg.stop();
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  };
}

export async function createTestDatabase(): Promise<TestDatabase> {
  let adminUrl = process.env.TEST_PG_ADMIN_URL;
  let stopServer = async (): Promise<void> => undefined;
  if (adminUrl === undefined) {
    const scratch = await startScratchPg('transfer-file-pg-');
    adminUrl = scratch.pg.url('postgres');
    stopServer = scratch.stop;
  }
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = openSql(adminUrl, { max: 1, application: 'test-admin' });
  await admin.unsafe(`CREATE DATABASE ${name}`);
  const url = adminUrl.replace(/\/postgres$/, `/${name}`);
  return {
    url,
    drop: async () => {
      await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end({ timeout: 5 });
      await stopServer();
    },
  };
}

/** A fresh database with the schema migrated, given to `body` with a setup connection (no owner epoch), then dropped. */
export async function withMigratedDatabase(body: (url: string, sql: Sql) => Promise<void>): Promise<void> {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 2, application: 'test-look' });
  try {
    await migrate(sql);
    await body(db.url, sql);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
}

/**
 * The databases and temporary directories one test file opens: `database` makes a fresh one
 * (`application` names its connections), `dir` a temporary directory; `close` drops and removes
 * them all, for the file's `test.after`.
 */
export function scratchKeeper(application: string): {
  database: () => Promise<Sql>;
  dir: (prefix: string) => Promise<string>;
  close: () => Promise<void>;
} {
  const opened: { db: TestDatabase; sql: Sql }[] = [];
  const dirs: string[] = [];
  return {
    database: async () => {
      const db = await createTestDatabase();
      const sql = openSql(db.url, { max: 2, application });
      opened.push({ db, sql });
      return sql;
    },
    dir: async (prefix) => {
      const dir = await fs.mkdtemp(path.join(os.tmpdir(), prefix));
      dirs.push(dir);
      return dir;
    },
    close: async () => {
      for (const { db, sql } of opened) {
        await sql.end({ timeout: 5 });
        await db.drop();
      }
      for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

/** The message of the MigrationError `work` was refused with; fails the test if it was not refused so. */
export async function migrationRefusal(work: Promise<unknown>): Promise<string> {
  const error = await work.then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(error instanceof MigrationError, `refused with a MigrationError, got ${String(error)}`);
  return (error as MigrationError).message;
}
