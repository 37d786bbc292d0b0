// The real service as a child process (`node dist/actors/main.js`), for tests that kill it with
// SIGKILL and start it again on the same data directory and database. Everything it starts
// (children, temp dirs, databases, a file-local PostgreSQL) is registered and removed at the end.

import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  CLUSTER_LOCATION_FILE,
  DATABASE_NAME,
  ensureDatabase,
  livePostmasterPid,
  startEmbeddedPg,
  type EmbeddedPg,
} from '../../src/db/embedded-pg.js';
import { quitPostmaster } from '../../src/db/embedded-pg.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { createTestDatabase, startScratchPg, type ScratchPg, type TestDatabase } from './database.js';
import { freePort } from './ports.js';
import { TEST_JWT_SECRET, type Reply } from './service.js';

/** The project root: this file compiles to <root>/dist/test/support/process.js. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'actors', 'main.js');

const READY_TIMEOUT_MS = 30_000;
const READY_POLL_MS = 50;
const STOP_TIMEOUT_MS = 15_000;
const CALL_TIMEOUT_MS = 15_000;
const TAIL_CHARS = 16_000;

export type ExitInfo = { readonly code: number | null; readonly signal: NodeJS.Signals | null };

export type CallOptions = { readonly token?: string; readonly body?: unknown; readonly timeoutMs?: number };

export type ChildService = {
  readonly pid: number;
  readonly port: number;
  readonly base: string;
  /** The environment variables given on top of the harness's defaults (CRASH_POINT, ...). */
  readonly env: Readonly<Record<string, string>>;
  readonly call: (method: string, urlPath: string, opts?: CallOptions) => Promise<Reply>;
  /** Resolves once the process has exited, with its exit code or the signal that ended it. */
  readonly waitForExit: (timeoutMs?: number) => Promise<ExitInfo>;
  readonly exited: () => ExitInfo | null;
  readonly kill9: () => Promise<ExitInfo>;
  /** SIGTERM, then waits for the exit (SIGKILL if it does not stop in time). */
  readonly stop: () => Promise<ExitInfo>;
  /** The last characters the child wrote on stderr (its JSON log lines). */
  readonly stderrTail: () => string;
  /** `signal` to the child's whole process group (a child started with `viaMake` leads one). */
  readonly signalGroup: (signal: NodeJS.Signals) => void;
};

/**
 * How a service is started. `viaMake`: `make run` itself (it builds first: tsc, incremental, a
 * no-op after `make build`), in a process group of its own as a terminal or systemd would start
 * it, so that a test can signal the group; make stays the service's parent and relays SIGTERM.
 */
export type StartOptions = { readonly viaMake?: boolean };

/**
 * Where the harness's services find PostgreSQL: `runner`, a fresh database on the suite's server
 * (DATABASE_URL); `embedded`, no DATABASE_URL, so the service starts its own server in
 * DATA_DIR/postgres (initialised by the harness first, so the harness knows its password);
 * `external`, a server the harness starts in a directory of its own, given as DATABASE_URL.
 */
export type PgMode = 'runner' | 'embedded' | 'external';

/** A PostgreSQL server that belongs to one harness (modes `embedded` and `external`). */
export type OwnPg = {
  readonly mode: 'embedded' | 'external';
  readonly port: number;
  /** The cluster's data directory (the one holding postmaster.pid). */
  readonly pgData: string;
  /** The live postmaster's pid, or null when none runs. */
  readonly postmasterPid: () => Promise<number | null>;
  /** `external` only: starts the server again on the same directory and port, retried (bounded) until it runs. */
  readonly start: () => Promise<void>;
};

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

// ---------------------------------------------------------------------------------------------
// Registry: whatever is still alive when the file ends (or the process exits) is removed.

const liveChildren = new Set<ChildProcess>();
/** Children that lead a process group (`make run`): signalled as a group, so the service under make goes too. */
const groupLeaders = new WeakSet<ChildProcess>();

function signalChild(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (groupLeaders.has(proc) && proc.pid !== undefined) {
    try {
      process.kill(-proc.pid, signal);
    } catch {
      // the whole group is gone already
    }
  } else proc.kill(signal);
}
const liveHarnesses = new Set<Harness>();
const liveDirs = new Set<string>();
/** Data directories of servers the harnesses (or their services) started: stopped at exit. */
const livePgData = new Set<string>();
let filePg: ScratchPg | null = null;
let filePgStarting: Promise<void> | null = null;

/** Last resort, synchronous only: no child outlives the test file, no temp dir is left. */
let removedNow = false;
function removeEverythingNow(): void {
  if (removedNow) return;
  removedNow = true;
  for (const child of liveChildren) signalChild(child, 'SIGKILL');
  // pg_ctl runs the postmaster in its own session: stop it by its pid file (immediate mode).
  if (filePg !== null) quitPostmaster(path.join(filePg.dir, 'pg', 'postmaster.pid'));
  for (const pgData of livePgData) quitPostmaster(path.join(pgData, 'postmaster.pid'));
  for (const dir of liveDirs) rmSync(dir, { recursive: true, force: true });
}

process.once('exit', removeEverythingNow);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    removeEverythingNow();
    process.exit(signal === 'SIGINT' ? 130 : 143);
  });
}

/**
 * When the file runs on its own (no TEST_PG_ADMIN_URL from the runner), starts ONE embedded
 * PostgreSQL for the whole file and points createTestDatabase() at it, so each test gets a fresh
 * database without paying for a server start. Under the runner this does nothing.
 */
export async function useOneServerForThisFile(): Promise<void> {
  if (process.env.TEST_PG_ADMIN_URL !== undefined && filePg === null) return;
  if (filePgStarting !== null) return filePgStarting;
  filePgStarting = (async () => {
    const scratch = await startScratchPg('transfer-crash-pg-');
    liveDirs.add(scratch.dir);
    filePg = scratch;
    process.env.TEST_PG_ADMIN_URL = scratch.pg.url('postgres');
  })();
  return filePgStarting;
}

/** Removes everything still registered: for the suite's `after` hook. Never throws. */
export async function cleanupAll(): Promise<void> {
  for (const h of [...liveHarnesses]) await h.cleanup().catch(() => undefined);
  for (const child of [...liveChildren]) signalChild(child, 'SIGKILL');
  if (filePg !== null) {
    const scratch = filePg;
    filePg = null;
    filePgStarting = null;
    delete process.env.TEST_PG_ADMIN_URL;
    await scratch.stop().catch(() => undefined);
    liveDirs.delete(scratch.dir);
  }
}

// ---------------------------------------------------------------------------------------------

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
      cleaned ??= (async () => {
        const errors: unknown[] = [];
        const attempt = async (step: () => Promise<unknown>) => {
          try {
            await step();
          } catch (error) {
            errors.push(error);
          }
        };
        // SIGKILL: the test is over, nothing left to flush, and a stuck child must not hang us.
        for (const child of children) if (child.exited() === null) await attempt(() => child.kill9());
        await attempt(() => sql.end({ timeout: 5 }));
        await attempt(() => db.drop());
        await attempt(() => fs.rm(dataDir, { recursive: true, force: true }));
        liveDirs.delete(dataDir);
        liveHarnesses.delete(harness);
        if (errors.length > 0) throw new Error(`cleanup: ${errors.map(String).join('; ')}`);
      })();
      return cleaned;
    },
  };
  liveHarnesses.add(harness);
  return harness;
}

// ---------------------------------------------------------------------------------------------
// A server of the harness's own (modes `embedded` and `external`).

const OWN_PG_START_ATTEMPTS_MAX = 40;
const OWN_PG_START_RETRY_MS = 250;

/**
 * `embedded`: initialises the cluster the service will start itself, in DATA_DIR/postgres (the
 * directory opened to the `postgres` user, so nothing is relocated), creates its database and
 * stops the server again: the harness then knows the URL before the service starts. `external`:
 * a server in a directory of its own, left running, given to the service as DATABASE_URL.
 */
async function startOwnPg(
  mode: 'embedded' | 'external',
  dataDir: string,
): Promise<{ pg: OwnPg; db: TestDatabase; env: Record<string, string> }> {
  await fs.chmod(dataDir, 0o755);
  const dir = mode === 'embedded' ? path.join(dataDir, 'postgres') : await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-own-pg-'));
  if (mode === 'external') {
    liveDirs.add(dir);
    await fs.chmod(dir, 0o755);
  }
  const port = await freePort();
  let server: EmbeddedPg = await startEmbeddedPg({ dir, port, sharedBuffersMb: 32, log: () => undefined });
  const location = await fs.readFile(path.join(dir, CLUSTER_LOCATION_FILE), 'utf8').catch(() => null);
  const pgData = path.join(location?.trim() ?? dir, 'pg');
  livePgData.add(pgData);
  await ensureDatabase(server, DATABASE_NAME);
  if (mode === 'embedded') await server.stop();
  const pg: OwnPg = {
    mode,
    port,
    pgData,
    postmasterPid: () => livePostmasterPid(pgData),
    start: async () => {
      if (mode !== 'external') throw new Error('the service starts its embedded server itself');
      // Backends orphaned by a killed postmaster hold its shared memory for a moment: retry.
      for (let attempt = 1; ; attempt++) {
        const error = await startEmbeddedPg({ dir, port, sharedBuffersMb: 32, log: () => undefined }).then(
          (s) => {
            server = s;
            return null;
          },
          (e: unknown) => e,
        );
        if (error === null) return;
        if (attempt >= OWN_PG_START_ATTEMPTS_MAX) throw error;
        await sleep(OWN_PG_START_RETRY_MS);
      }
    },
  };
  const db: TestDatabase = {
    url: server.url(DATABASE_NAME),
    // Whichever server runs in the directory now (the service's, or one started again) is stopped.
    drop: async () => {
      await server.stop();
      livePgData.delete(pgData);
      if (mode === 'external') {
        await fs.rm(dir, { recursive: true, force: true });
        liveDirs.delete(dir);
      }
    },
  };
  const env: Record<string, string> = mode === 'embedded' ? { EMBEDDED_PG_PORT: String(port), EMBEDDED_PG_SHARED_BUFFERS_MB: '32' } : {};
  return { pg, db, env };
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

// ---------------------------------------------------------------------------------------------

async function startChild(opts: {
  dataDir: string;
  databaseUrl: string | null;
  env: Record<string, string>;
  mayExit?: boolean;
  viaMake?: boolean;
}): Promise<ChildService> {
  const port = await freePort();
  const env: Record<string, string> = {
    ...baseEnv(),
    DATA_DIR: opts.dataDir,
    ...(opts.databaseUrl === null ? {} : { DATABASE_URL: opts.databaseUrl }),
    PORT: String(port),
    HOST: '127.0.0.1',
    JWT_SECRET: TEST_JWT_SECRET,
    PRINT_BANNER: '0',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'error',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
    ...opts.env,
  };
  const viaMake = opts.viaMake === true;
  // make finds node on PATH: the one running the tests comes first.
  if (viaMake) env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}`;
  const proc = viaMake
    ? spawn('make', ['--no-print-directory', 'run'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    : spawn(process.execPath, [MAIN_JS], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(proc);
  if (viaMake) groupLeaders.add(proc);
  let stderr = '';
  let stdout = '';
  proc.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-TAIL_CHARS);
  });
  proc.stdout?.on('data', (chunk: Buffer) => {
    stdout = (stdout + chunk.toString()).slice(-TAIL_CHARS);
  });
  let exitInfo: ExitInfo | null = null;
  const exitPromise = new Promise<ExitInfo>((resolve) => {
    proc.once('exit', (code, signal) => {
      exitInfo = { code, signal };
      liveChildren.delete(proc);
      resolve(exitInfo);
    });
    proc.once('error', (error) => {
      stderr += `\nspawn error: ${error.message}`;
      exitInfo ??= { code: null, signal: null };
      liveChildren.delete(proc);
      resolve(exitInfo);
    });
  });
  const base = `http://127.0.0.1:${port}`;
  const tail = () => `${stderr}${stdout === '' ? '' : `\n[stdout]\n${stdout}`}`.slice(-16_000);

  const waitForExit = async (timeoutMs = STOP_TIMEOUT_MS): Promise<ExitInfo> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    const result = await Promise.race([exitPromise, timeout]);
    clearTimeout(timer);
    if (result === null) throw new Error(`service pid ${proc.pid} did not exit within ${timeoutMs} ms; stderr tail:\n${tail()}`);
    return result;
  };

  const child: ChildService = {
    pid: proc.pid ?? -1,
    port,
    base,
    env: { ...opts.env },
    call: (method, urlPath, callOpts = {}) => httpCall(base, method, urlPath, callOpts),
    waitForExit,
    exited: () => exitInfo,
    kill9: async () => {
      if (exitInfo === null) signalChild(proc, 'SIGKILL');
      return waitForExit();
    },
    stop: async () => {
      if (exitInfo !== null) return exitInfo;
      signalChild(proc, 'SIGTERM');
      try {
        return await waitForExit(STOP_TIMEOUT_MS);
      } catch (error) {
        signalChild(proc, 'SIGKILL');
        await waitForExit(5_000);
        throw error;
      }
    },
    stderrTail: tail,
    signalGroup: (signal) => {
      if (proc.pid !== undefined) process.kill(-proc.pid, signal);
    },
  };

  // Ready when GET /healthz answers 200; bounded, and a child that dies first fails at once.
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (exitInfo !== null) {
      if (opts.mayExit === true) return child;
      const { code, signal } = exitInfo;
      throw new Error(`service exited before it was ready (code ${code}, signal ${signal}); stderr tail:\n${tail()}`);
    }
    const ok = await httpCall(base, 'GET', '/healthz', { timeoutMs: 1_000 }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return child;
    if (Date.now() > deadline) {
      await child.kill9().catch(() => undefined);
      throw new Error(`service not ready within ${READY_TIMEOUT_MS} ms (GET /healthz); stderr tail:\n${tail()}`);
    }
    await sleep(READY_POLL_MS);
  }
}

/** Only what node needs from the parent: no service variable (CRASH_POINT, PORT, ...) leaks in. */
function baseEnv(): Record<string, string> {
  const keep = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ'];
  const env: Record<string, string> = {};
  for (const key of keep) {
    const value = process.env[key];
    if (value !== undefined) env[key] = value;
  }
  return env;
}

async function httpCall(base: string, method: string, urlPath: string, opts: CallOptions): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  const init: RequestInit = { method, headers, signal: AbortSignal.timeout(opts.timeoutMs ?? CALL_TIMEOUT_MS) };
  if (opts.body !== undefined) init.body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  const response = await fetch(base + urlPath, init);
  const text = await response.text();
  let body: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    body =
      typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { value: parsed };
  } catch {
    body = { unparsed: text };
  }
  return { status: response.status, body };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Polls `probe` every `intervalMs` until it returns a value other than undefined, or fails after
 * `timeoutMs` with `describe()` (the last thing seen) in the message.
 */
export async function pollUntil<T>(
  probe: () => Promise<T | undefined>,
  opts: { timeoutMs: number; intervalMs?: number; describe: () => string },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not reached within ${opts.timeoutMs} ms: ${opts.describe()}`);
    await sleep(opts.intervalMs ?? 50);
  }
}
