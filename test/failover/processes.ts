// The failover drill's service processes: `node dist/actors/main.js` on a DATA_DIR and a port of its
// own, as a primary or a standby, all on one PostgreSQL (DATABASE_URL). Each start is a new process
// with a new pid; the drill kills, stops and resumes them by signal.

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SECRET } from '../drill/drill.js';
import type { Instance } from './lb.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const STDERR_TAIL_CHARS = 4_000;
const POLL_MS = 20;

/** Where one of the two machines of the drill keeps its state: a name, its DATA_DIR and its port. */
export type Machine = { readonly name: string; readonly dataDir: string; readonly port: number };

export type Role = 'primary' | 'standby';

/** How a process ended: its exit code, or the signal that ended it. */
export type Ended = { readonly code: number | null; readonly signal: NodeJS.Signals | null };

export type Running = {
  readonly machine: Machine;
  readonly role: Role;
  readonly instance: Instance;
  readonly exited: Promise<Ended>;
  /** How it ended, or null while it runs. */
  readonly ended: () => Ended | null;
  readonly stderrTail: () => string;
  readonly signal: (signal: NodeJS.Signals) => void;
};

/** What /readyz answers: its status and JSON body (a standby's carries role and lag_records). */
export type Readiness = { readonly status: number; readonly body: Record<string, unknown> };

/** The environment every service of the drill shares; LEASE_* short, so a hung owner loses the lease quickly. */
/** The lease the drills' service processes hold: a standby may take over once it passed. */
export const DRILL_LEASE_MS = 1_500;

export function serviceEnv(databaseUrl: string): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: databaseUrl,
    JWT_SECRET: SECRET,
    PRINT_BANNER: '0',
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
    RETRY_BASE_MS: '50',
    RETRY_CAP_MS: '1000',
    LEASE_MS: String(DRILL_LEASE_MS),
    LEASE_RENEW_MS: '300',
    STANDBY_POLL_MS: '50',
  };
}

/**
 * Starts the service on `machine` as `role`; resolves once it answers /healthz (a standby's small
 * listener does too). With `logPath`, every line the process writes to stderr is appended there too.
 */
export async function startService(
  machine: Machine,
  role: Role,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  logPath?: string,
): Promise<Running> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'actors', 'main.js')], {
    env: { ...env, DATA_DIR: machine.dataDir, PORT: String(machine.port), ROLE: role },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (logPath !== undefined) child.stderr?.pipe(createWriteStream(logPath, { flags: 'a' }));
  const running = watch(child, machine, role);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await fetch(`${running.instance.base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return running;
    if (running.ended() !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${role} on ${machine.name} did not start: ${running.stderrTail()}`);
    }
    await sleep(100);
  }
}

function watch(child: ChildProcess, machine: Machine, role: Role): Running {
  let stderr = '';
  let ended: Ended | null = null;
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-STDERR_TAIL_CHARS)));
  const exited = new Promise<Ended>((resolve) =>
    child.on('exit', (code, signal) => {
      ended = { code, signal };
      resolve(ended);
    }),
  );
  if (child.pid === undefined) throw new Error(`the service on ${machine.name} could not be spawned`);
  return {
    machine,
    role,
    instance: { name: machine.name, base: `http://127.0.0.1:${machine.port}`, pid: child.pid },
    exited,
    ended: () => ended,
    stderrTail: () => stderr,
    signal: (signal) => {
      if (ended === null) child.kill(signal);
    },
  };
}

export async function readiness(base: string): Promise<Readiness | null> {
  try {
    const r = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(1_000) });
    return { status: r.status, body: (await r.json()) as Record<string, unknown> };
  } catch {
    return null;
  }
}

/** Resolves the time /readyz first answered 200, or null when the process ended or `timeoutMs` passed first. */
export async function waitReady(svc: Running, timeoutMs: number): Promise<number | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && svc.ended() === null) {
    if ((await readiness(svc.instance.base))?.status === 200) return Date.now();
    await sleep(POLL_MS);
  }
  return null;
}

/** Resolves true once a standby's /readyz says it is 0 records behind the owner; false if it ended or `timeoutMs` passed. */
export async function waitCaughtUp(svc: Running, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && svc.ended() === null) {
    const r = await readiness(svc.instance.base);
    if (r !== null && r.body.role === 'standby' && r.body.lag_records === 0) return true;
    await sleep(POLL_MS);
  }
  return false;
}

/** How the process ended within `ms`, or null while it still runs. */
export async function endedWithin(svc: Running, ms: number): Promise<Ended | null> {
  return Promise.race([svc.exited, sleep(ms).then(() => svc.ended())]);
}

/** SIGTERM (SIGCONT first, in case it is paused), then SIGKILL once `ms` passed: how it ended, and whether it had to be killed. */
export async function stopService(svc: Running, ms: number): Promise<{ readonly ended: Ended; readonly killed: boolean }> {
  svc.signal('SIGCONT');
  svc.signal('SIGTERM');
  const ended = await endedWithin(svc, ms);
  if (ended !== null) return { ended, killed: false };
  svc.signal('SIGKILL');
  return { ended: await svc.exited, killed: true };
}

/** The machine is lost: its DATA_DIR is deleted and an empty one put in its place. */
export async function wipeDataDir(machine: Machine): Promise<void> {
  await fs.rm(machine.dataDir, { recursive: true, force: true });
  await fs.mkdir(machine.dataDir);
  await fs.chmod(machine.dataDir, 0o755);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
