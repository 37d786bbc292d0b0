// The real service as a child process for the benchmark: a fresh DATA_DIR with its embedded
// PostgreSQL, the limits that would throttle a load test switched off, and a stop that always
// goes through the service's graceful SIGTERM (so its PostgreSQL stops too) before anything harsher.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql, type Sql } from '../src/db/sql.js';
import { freePort } from '../test/support/ports.js';
import { registerCleanup } from './cleanup.js';

export { freePort };

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
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

export type BenchService = {
  readonly pid: number;
  readonly base: string;
  readonly dataDir: string;
  readonly pgPort: number;
  readonly pgPassword: string;
  /** A small pool of the benchmark's own on the service's database, closed by `stop`. */
  readonly sql: Sql;
  /** The last lines the service wrote to stderr, for error messages. */
  readonly stderrTail: () => string;
  readonly stop: () => Promise<void>;
};

/**
 * Starts the service on a new temporary DATA_DIR and waits until it answers /readyz.
 * `cpuProfileDir` adds `--cpu-prof` so every thread writes a V8 CPU profile there on exit.
 */
export async function startBenchService(opts: { readonly cpuProfileDir?: string }): Promise<BenchService> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-bench-'));
  // The embedded PostgreSQL runs as the `postgres` user when we are root: it must reach the directory.
  await fs.chmod(dataDir, 0o755);
  const port = await freePort();
  const pgPort = await freePort();
  const env: NodeJS.ProcessEnv = { ...process.env, ...BENCH_ENV, DATA_DIR: dataDir, PORT: String(port), EMBEDDED_PG_PORT: String(pgPort), JWT_SECRET: BENCH_JWT_SECRET };
  delete env.DATABASE_URL;
  delete env.NODE_OPTIONS;
  const profileArgs = opts.cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfileDir}`];
  const child = spawn(process.execPath, [...profileArgs, path.join(ROOT, 'dist', 'src', 'main.js')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL_CHARS_MAX)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let sql: Sql | null = null;
  const stop = registerCleanup(async () => {
    await sql?.end({ timeout: 5 }).catch(() => undefined);
    await stopChild(child, exited, dataDir);
    await fs.rm(dataDir, { recursive: true, force: true });
  });
  try {
    const base = `http://127.0.0.1:${port}`;
    await waitReady(base, child, () => stderr);
    const pgPassword = (await fs.readFile(path.join(dataDir, 'postgres', 'pg-password'), 'utf8')).trim();
    sql = openSql(pgUrl(pgPort, pgPassword), { max: 2, application: 'bench' });
    const pid = child.pid ?? 0;
    return { pid, base, dataDir, pgPort, pgPassword, sql, stderrTail: () => stderr, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

export function pgUrl(pgPort: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/transfer`;
}

async function waitReady(base: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ok = await fetch(`${base}/readyz`).then((r) => r.ok, () => false);
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
  while (Date.now() < deadline && (await fs.access(`/proc/${pid}`).then(() => true, () => false))) await new Promise((r) => setTimeout(r, 100));
}
