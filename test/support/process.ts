// The real service as a child process (`node dist/actors/main.js`), for tests that kill it with
// SIGKILL and start it again on the same data directory and database. Everything it starts
// (children, temp dirs, databases, a file-local PostgreSQL) is registered and removed at the end.
// The parts live beside it by job: child-service.ts starts one service, own-pg.ts a harness's own
// PostgreSQL, leftovers.ts keeps what is still to remove, polling.ts waits; tests import them all
// from here.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openSql, type Sql } from '../../src/db/sql.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { MAIN_JS, startChild, type ChildService, type StartOptions } from './child-service.js';
import { createTestDatabase, type TestDatabase } from './database.js';
import { liveDirs, liveHarnesses } from './leftovers.js';
import { startOwnPg, type OwnPg } from './own-pg.js';
import { TEST_JWT_SECRET } from './service.js';

export { PROJECT_ROOT, type CallOptions, type ChildService, type ExitInfo, type StartOptions } from './child-service.js';
export { cleanupAll, useOneServerForThisFile } from './leftovers.js';
export type { OwnPg } from './own-pg.js';
export { pollUntil, sleep } from './polling.js';

/**
 * Where the harness's services find PostgreSQL: `runner`, a fresh database on the suite's server
 * (DATABASE_URL); `embedded`, no DATABASE_URL, so the service starts its own server in
 * DATA_DIR/postgres (initialised by the harness first, so the harness knows its password);
 * `external`, a server the harness starts in a directory of its own, given as DATABASE_URL.
 */
export type PgMode = 'runner' | 'embedded' | 'external';

export type Harness = {
  readonly databaseUrl: string;
  readonly dataDir: string;
  /** The harness's own server, or null in mode `runner`. */
  readonly pg: OwnPg | null;
  /** A direct connection to the service's database, for checks from PostgreSQL itself. */
  readonly sql: Sql;
  readonly userToken: (userId: bigint | number | string) => string;
  readonly adminToken: () => string;
  /** Starts a service on this harness's data dir and database; `env` adds or overrides variables. */
  readonly start: (env?: Record<string, string>, how?: StartOptions) => Promise<ChildService>;
  /**
   * Starts a service that is expected to die while it recovers (a crash point reached by its
   * start-up scan): answers once it is ready or has exited, whichever comes first.
   */
  readonly startToDie: (env?: Record<string, string>) => Promise<ChildService>;
  /**
   * Stops `previous` if it still runs (SIGTERM), then starts a new service on the SAME data dir
   * and database with `env` (which does not inherit the previous one's extra variables).
   */
  readonly restart: (previous: ChildService, env?: Record<string, string>) => Promise<ChildService>;
  /** Kills every child, closes the connection, drops the database, removes the data dir. */
  readonly cleanup: () => Promise<void>;
};

export async function createHarness(opts: { readonly pg?: PgMode } = {}): Promise<Harness> {
  await fs.access(MAIN_JS).catch(() => {
    throw new Error(`${MAIN_JS} is missing: compile first (node_modules/.bin/tsc -p tsconfig.json)`);
  });
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-crash-data-'));
  liveDirs.add(dataDir);
  let db: TestDatabase;
  let own: { readonly pg: OwnPg; readonly env: Record<string, string> } | null = null;
  try {
    if ((opts.pg ?? 'runner') === 'runner') db = await createTestDatabase();
    else {
      const started = await startOwnPg(opts.pg === 'embedded' ? 'embedded' : 'external', dataDir);
      own = started;
      db = started.db;
    }
  } catch (error) {
    await fs.rm(dataDir, { recursive: true, force: true });
    liveDirs.delete(dataDir);
    throw error;
  }
  const sql = openSql(db.url, { max: 2, application: 'crash-test' });
  const children = new Set<ChildService>();
  const exp = () => Math.floor(Date.now() / 1000) + 3600;
  let cleaned: Promise<void> | null = null;

  const launch = async (env: Record<string, string>, mayExit: boolean, how: StartOptions = {}): Promise<ChildService> => {
    if (cleaned !== null) throw new Error('harness already cleaned up');
    const child = await startChild({
      dataDir,
      databaseUrl: own?.pg.mode === 'embedded' ? null : db.url,
      env: { ...own?.env, ...env },
      mayExit,
      viaMake: how.viaMake === true,
    });
    children.add(child);
    return child;
  };
  const start = (env: Record<string, string> = {}, how: StartOptions = {}): Promise<ChildService> => launch(env, false, how);

  const harness: Harness = {
    databaseUrl: db.url,
    dataDir,
    pg: own?.pg ?? null,
    sql,
    userToken: (userId) => signJwt({ sub: String(userId), exp: exp() }, TEST_JWT_SECRET),
    adminToken: () => signJwt({ sub: '1', exp: exp(), role: 'admin' }, TEST_JWT_SECRET),
    start,
    startToDie: (env = {}) => launch(env, true),
    restart: async (previous, env = {}) => {
      if (previous.exited() === null) await previous.stop();
      return start(env);
    },
    cleanup: () => {
      cleaned ??= removeHarness(harness, { children, sql, db, dataDir });
      return cleaned;
    },
  };
  liveHarnesses.add(harness);
  return harness;
}

/** A harness's cleanup: every error is collected, and every step is tried. */
async function removeHarness(
  harness: Harness,
  held: { readonly children: ReadonlySet<ChildService>; readonly sql: Sql; readonly db: TestDatabase; readonly dataDir: string },
): Promise<void> {
  const errors: unknown[] = [];
  const attempt = async (step: () => Promise<unknown>) => {
    try {
      await step();
    } catch (error) {
      errors.push(error);
    }
  };
  // SIGKILL: the test is over, nothing left to flush, and a stuck child must not hang us.
  for (const child of held.children) if (child.exited() === null) await attempt(() => child.kill9());
  await attempt(() => held.sql.end({ timeout: 5 }));
  await attempt(() => held.db.drop());
  await attempt(() => fs.rm(held.dataDir, { recursive: true, force: true }));
  liveDirs.delete(held.dataDir);
  liveHarnesses.delete(harness);
  if (errors.length > 0) throw new Error(`cleanup: ${errors.map(String).join('; ')}`);
}

/** Runs `body` on a fresh harness and always cleans it up, whether `body` passes or throws. */
export async function withHarness<T>(body: (h: Harness) => Promise<T>, opts: { readonly pg?: PgMode } = {}): Promise<T> {
  const h = await createHarness(opts);
  try {
    return await body(h);
  } finally {
    await h.cleanup();
  }
}
