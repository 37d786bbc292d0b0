// The real service as a child process for the benchmark: a fresh DATA_DIR with its embedded
// PostgreSQL, the limits that would throttle a load test switched off, and a stop that always
// goes through the service's graceful SIGTERM (so its PostgreSQL stops too) before anything harsher.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql, type Sql } from '../../src/db/sql.js';
import { freePort } from '../../test/support/ports.js';
import { registerCleanup } from './cleanup.js';

export { freePort };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const BENCH_JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0000';
const READY_TIMEOUT_MS = 120_000;
/** How long a SIGTERM may take (it flushes UBSCore's WAL and stops PostgreSQL) before SIGKILL. */
const STOP_TIMEOUT_MS = 60_000;
const STDERR_TAIL_CHARS_MAX = 8_000;

/** The environment of every benchmarked service: no rate, daily or frequency limits, no periodic check, quiet logs. */
const BENCH_ENV: Readonly<Record<string, string>> = {
  RATE_LIMIT_PER_SECOND: '0',
  DAILY_TRANSFER_LIMIT: '0',
  ABNORMAL_TRANSFERS_PER_MINUTE: '0',
  INVARIANT_INTERVAL_MS: '0',
  LOG_LEVEL: 'warn',
  LOG_FORMAT: 'json',
  PRINT_BANNER: '0',
};

/** The database and role the service uses on its embedded PostgreSQL. */
export const SERVICE_DATABASE = 'transfer';
export const SERVICE_ROLE = 'postgres';
/**
 * The benchmark's own connections log in as this role when statements are counted, so that
 * pg_stat_statements (which keys its counters by role and database) tells them from the service's.
 */
export const OBSERVER_ROLE = 'bench_observer';

export type BenchService = {
  /** The service process's id: a new one after `killAndRestart`. */
  readonly pid: number;
  readonly base: string;
  readonly dataDir: string;
  readonly pgPort: number;
  readonly pgPassword: string;
  /** A small pool of the benchmark's own on the service's database, closed by `stop`. */
  readonly sql: Sql;
  /**
   * With `statementStats`: a connection to the server's `postgres` database, where
   * pg_stat_statements is installed, as OBSERVER_ROLE; else null.
   */
  readonly stats: Sql | null;
  /** The last lines the service wrote to stderr, for error messages. */
  readonly stderrTail: () => string;
  /**
   * A crash and its recovery (the soak's): SIGKILL, as a dead machine would, leaving its embedded
   * PostgreSQL running for the next start to stop; then the service again on the same DATA_DIR and
   * ports. Answers the milliseconds from the kill until /readyz answered 200.
   */
  readonly killAndRestart: () => Promise<number>;
  readonly stop: () => Promise<void>;
};

type Running = { readonly child: ChildProcess; readonly exited: Promise<void>; readonly stderr: () => string };

function spawnService(args: readonly string[], env: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL_CHARS_MAX)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return { child, exited, stderr: () => stderr };
}

/**
 * Starts the service on a new temporary DATA_DIR and waits until it answers /readyz.
 * `cpuProfileDir` adds `--cpu-prof` so every thread writes a V8 CPU profile there on exit.
 * `statementStats` loads pg_stat_statements into this server only: the library must be loaded
 * when PostgreSQL starts, so the service is started once (its PostgreSQL initialised), the
 * setting written with ALTER SYSTEM, and the service restarted on the same DATA_DIR.
 */
export async function startBenchService(opts: {
  readonly cpuProfileDir?: string;
  readonly statementStats?: boolean;
  /** Variables set for this service beside the bench's own (SPOT_LOG=off for the log's comparison). */
  readonly env?: Readonly<Record<string, string>>;
}): Promise<BenchService> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-bench-'));
  // The embedded PostgreSQL runs as the `postgres` user when we are root: it must reach the directory.
  await fs.chmod(dataDir, 0o755);
  const port = await freePort();
  const pgPort = await freePort();
  const env = serviceEnv(dataDir, port, pgPort, opts.env);
  const profileArgs = opts.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfileDir}`];
  const args = [...profileArgs, path.join(ROOT, 'dist', 'actors', 'main.js')];
  let running = spawnService(args, env);
  const pools: Sql[] = [];
  const stop = registerCleanup(async () => {
    for (const pool of pools) await pool.end({ timeout: 5 }).catch(() => undefined);
    await stopChild(running.child, running.exited, dataDir);
    await fs.rm(dataDir, { recursive: true, force: true });
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitReady(base, running);
    const pgPassword = (await fs.readFile(path.join(dataDir, 'postgres', 'pg-password'), 'utf8')).trim();
    let stats: Sql | null = null;
    if (opts.statementStats === true) {
      await preloadStatementStats(pgPort, pgPassword);
      await stopChild(running.child, running.exited, dataDir);
      running = spawnService(args, env);
      await waitReady(base, running);
      stats = await openStatementStats(pgPort, pgPassword);
      pools.push(stats);
    }
    const sql = openSql(pgUrl(pgPort, pgPassword, { user: stats === null ? SERVICE_ROLE : OBSERVER_ROLE }), {
      max: 2,
      application: 'bench',
    });
    pools.push(sql);
    const killAndRestart = async (): Promise<number> => {
      const killedAt = Date.now();
      running.child.kill('SIGKILL');
      await running.exited;
      running = spawnService(args, env);
      await waitReady(base, running);
      return Date.now() - killedAt;
    };
    return {
      // Read through `running`, which a restart replaces.
      get pid(): number {
        return running.child.pid ?? 0;
      },
      base,
      dataDir,
      pgPort,
      pgPassword,
      sql,
      stats,
      stderrTail: () => running.stderr(),
      killAndRestart,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A bench service's environment: its own DATA_DIR and ports, the bench's settings, then the caller's. */
function serviceEnv(dataDir: string, port: number, pgPort: number, extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...BENCH_ENV,
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_PG_PORT: String(pgPort),
    JWT_SECRET: BENCH_JWT_SECRET,
    ...extra,
  };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  return env;
}

/** Written before the restart: the library to load at start, and the observer role. */
async function preloadStatementStats(pgPort: number, pgPassword: string): Promise<void> {
  const admin = openSql(pgUrl(pgPort, pgPassword, { database: 'postgres' }), { max: 1, application: 'bench' });
  try {
    await admin`ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`;
    await admin.unsafe(`CREATE ROLE ${OBSERVER_ROLE} LOGIN SUPERUSER PASSWORD '${pgPassword.replace(/'/g, "''")}'`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/** After the restart: the extension's view, in the `postgres` database so the service's own stays untouched. */
async function openStatementStats(pgPort: number, pgPassword: string): Promise<Sql> {
  const stats = openSql(pgUrl(pgPort, pgPassword, { user: OBSERVER_ROLE, database: 'postgres' }), { max: 1, application: 'bench-stats' });
  try {
    const loaded = await stats<{ libs: string }[]>`SELECT current_setting('shared_preload_libraries') AS libs`;
    if (!(loaded[0]?.libs ?? '').includes('pg_stat_statements'))
      throw new Error(`pg_stat_statements is not loaded (shared_preload_libraries = '${loaded[0]?.libs ?? ''}')`);
    await stats`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
    return stats;
  } catch (error) {
    await stats.end({ timeout: 5 });
    throw error;
  }
}

export function pgUrl(pgPort: number, password: string, as: { readonly user?: string; readonly database?: string } = {}): string {
  return `postgres://${as.user ?? SERVICE_ROLE}:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/${as.database ?? SERVICE_DATABASE}`;
}

/** A ROLE=standby process beside a bench service, following its ledger's log in spot_log. */
export type BenchStandby = {
  readonly pid: number;
  readonly base: string;
  readonly stderrTail: () => string;
  /** Whether the process has exited (a standby that cannot follow stops itself). */
  readonly exited: () => boolean;
  /** SIGTERM and wait; call it before the primary stops, so the standby never takes the ledger over. */
  readonly stop: () => Promise<void>;
};

/**
 * Starts a standby on `primary`'s PostgreSQL (DATABASE_URL, as the service's role) with a fresh
 * DATA_DIR of its own, which it rebuilds from PostgreSQL, and waits until it answers /healthz
 * (the standby's /readyz answers 503 until it owns the ledger). Registered for cleanup after the
 * primary, so cleanupAll (newest first) stops it first.
 */
export async function startBenchStandby(primary: BenchService): Promise<BenchStandby> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-bench-standby-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...BENCH_ENV,
    ROLE: 'standby',
    DATABASE_URL: pgUrl(primary.pgPort, primary.pgPassword),
    DATA_DIR: dataDir,
    PORT: String(port),
    JWT_SECRET: BENCH_JWT_SECRET,
  };
  delete env.NODE_OPTIONS;
  delete env.EMBEDDED_PG_PORT;
  const running = spawnService([path.join(ROOT, 'dist', 'actors', 'main.js')], env);
  const stop = registerCleanup(async () => {
    await stopChild(running.child, running.exited, dataDir);
    await fs.rm(dataDir, { recursive: true, force: true });
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitReady(base, running, '/healthz');
    const { child } = running;
    const exited = (): boolean => child.exitCode !== null || child.signalCode !== null;
    return { pid: child.pid ?? 0, base, stderrTail: () => running.stderr(), exited, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function waitReady(base: string, running: Running, probe = '/readyz'): Promise<void> {
  const { child, stderr } = running;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ok = await fetch(`${base}${probe}`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return;
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the service exited before it was ready: ${stderr()}`);
    if (Date.now() > deadline) throw new Error(`the service was not ready within ${READY_TIMEOUT_MS} ms: ${stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * SIGTERM lets the service stop its HTTP server, coordinators, UBSCore and PostgreSQL in order.
 * Only if it hangs is it killed, and then its PostgreSQL postmaster is told to quit at once, since
 * nothing else would stop it.
 */
async function stopChild(child: ChildProcess, exited: Promise<void>, dataDir: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill('SIGTERM');
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), STOP_TIMEOUT_MS).unref());
    if ((await Promise.race([exited, timer])) === 'timeout') {
      child.kill('SIGKILL');
      await exited;
    }
  }
  await quitLeftoverPostmaster(dataDir);
}

async function quitLeftoverPostmaster(dataDir: string): Promise<void> {
  const pidText = await fs.readFile(path.join(dataDir, 'postgres', 'pg', 'postmaster.pid'), 'utf8').catch(() => null);
  const pid = Number(pidText?.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0) return;
  const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
  if (!cmdline.includes('postgres')) return;
  process.kill(pid, 'SIGQUIT');
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (
    Date.now() < deadline &&
    (await fs.access(`/proc/${pid}`).then(
      () => true,
      () => false,
    ))
  )
    await new Promise((r) => setTimeout(r, 100));
}
