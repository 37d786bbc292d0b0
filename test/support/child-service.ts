// One real service as a child process (`node dist/actors/main.js`, or `make run`), started on a
// given data directory and database and answered once GET /healthz says it is ready: what the
// harness of process.ts starts, kills and starts again.

import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { groupLeaders, liveChildren, signalChild } from './leftovers.js';
import { sleep } from './polling.js';
import { freePort } from './ports.js';
import { TEST_JWT_SECRET, type Reply } from './service.js';

/** The project root: this file compiles to <root>/dist/test/support/child-service.js. */
export const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'actors', 'main.js');

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

export type ChildOptions = {
  dataDir: string;
  databaseUrl: string | null;
  env: Record<string, string>;
  mayExit?: boolean;
  viaMake?: boolean;
};

/** What is seen of a running child: its output's tail, and its exit once it comes. */
type Watched = { readonly tail: () => string; readonly exitPromise: Promise<ExitInfo>; readonly exited: () => ExitInfo | null };

/** Starts a service and answers once it is ready (or, with `mayExit`, once it has exited, whichever comes first). */
export async function startChild(opts: ChildOptions): Promise<ChildService> {
  const port = await freePort();
  const viaMake = opts.viaMake === true;
  const proc = spawnService(childEnv(opts, port, viaMake), viaMake);
  const child = serviceHandle(proc, port, opts.env, watchService(proc));
  return untilReady(child, opts.mayExit === true);
}

function childEnv(opts: ChildOptions, port: number, viaMake: boolean): Record<string, string> {
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
  // make finds node on PATH: the one running the tests comes first.
  if (viaMake) env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}`;
  return env;
}

function spawnService(env: Record<string, string>, viaMake: boolean): ChildProcess {
  const proc = viaMake
    ? spawn('make', ['--no-print-directory', 'run'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    : spawn(process.execPath, [MAIN_JS], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  liveChildren.add(proc);
  if (viaMake) groupLeaders.add(proc);
  return proc;
}

function watchService(proc: ChildProcess): Watched {
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
  const tail = () => `${stderr}${stdout === '' ? '' : `\n[stdout]\n${stdout}`}`.slice(-16_000);
  return { tail, exitPromise, exited: () => exitInfo };
}

function serviceHandle(proc: ChildProcess, port: number, env: Record<string, string>, watched: Watched): ChildService {
  const base = `http://127.0.0.1:${port}`;
  const waitForExit = async (timeoutMs = STOP_TIMEOUT_MS): Promise<ExitInfo> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), timeoutMs);
    });
    const result = await Promise.race([watched.exitPromise, timeout]);
    clearTimeout(timer);
    if (result === null) throw new Error(`service pid ${proc.pid} did not exit within ${timeoutMs} ms; stderr tail:\n${watched.tail()}`);
    return result;
  };
  return {
    pid: proc.pid ?? -1,
    port,
    base,
    env: { ...env },
    call: (method, urlPath, callOpts = {}) => httpCall(base, method, urlPath, callOpts),
    waitForExit,
    exited: watched.exited,
    kill9: async () => {
      if (watched.exited() === null) signalChild(proc, 'SIGKILL');
      return waitForExit();
    },
    stop: async () => {
      const exitInfo = watched.exited();
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
    stderrTail: watched.tail,
    signalGroup: (signal) => {
      if (proc.pid !== undefined) process.kill(-proc.pid, signal);
    },
  };
}

/** Ready when GET /healthz answers 200; bounded, and a child that dies first fails at once. */
async function untilReady(child: ChildService, mayExit: boolean): Promise<ChildService> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const exitInfo = child.exited();
    if (exitInfo !== null) {
      if (mayExit) return child;
      const { code, signal } = exitInfo;
      throw new Error(`service exited before it was ready (code ${code}, signal ${signal}); stderr tail:\n${child.stderrTail()}`);
    }
    const ok = await httpCall(child.base, 'GET', '/healthz', { timeoutMs: 1_000 }).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return child;
    if (Date.now() > deadline) {
      await child.kill9().catch(() => undefined);
      throw new Error(`service not ready within ${READY_TIMEOUT_MS} ms (GET /healthz); stderr tail:\n${child.stderrTail()}`);
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
