// One child process of the replicated PostgreSQL (etcd, a Patroni node): run as the `postgres`
// user when this runs as root (PostgreSQL refuses root, and Patroni runs it), its output appended
// to a log file, its pid exposed so a test or a nemesis can kill, stop and resume it by signal.

import { execFileSync, spawn } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';

const LOG_TAIL_BYTES = 6_000;

export type Ended = { readonly code: number | null; readonly signal: NodeJS.Signals | null };

export type Proc = {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** How it ended, or null while it runs. */
  readonly ended: () => Ended | null;
  readonly exited: Promise<Ended>;
  /** Sends `signal` while it runs; a no-op once it ended. */
  readonly signal: (signal: NodeJS.Signals) => void;
  /** The last few kilobytes of its log, for a failure message. */
  readonly logTail: () => string;
};

/** The uid and gid to run servers as: the `postgres` user when this process is root, else none (ourselves). */
export type RunAs = { readonly uid: number; readonly gid: number } | null;

export function runAsFor(): RunAs {
  if (process.getuid?.() !== 0) return null;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

/** Makes `dir` (and what is in it) the server user's, so the server can write there. */
export function giveTo(runAs: RunAs, dir: string): void {
  if (runAs === null) return;
  fs.chownSync(dir, runAs.uid, runAs.gid);
  for (const entry of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) fs.chownSync(`${dir}/${entry}`, runAs.uid, runAs.gid);
}

/** The scheduling priority (nice) of etcd, Patroni and PostgreSQL when the tests run as root. */
const HA_PRIORITY = -10;

export function startProc(
  name: string,
  command: string,
  args: readonly string[],
  opts: { runAs: RunAs; logFile: string; cwd: string },
): Proc {
  const log = fs.openSync(opts.logFile, 'a');
  const child = spawn(command, [...args], {
    cwd: opts.cwd,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: opts.cwd, LANG: 'C.UTF-8', ETCDCTL_API: '3' },
    stdio: ['ignore', log, log],
    ...(opts.runAs === null ? {} : { uid: opts.runAs.uid, gid: opts.runAs.gid }),
  });
  fs.closeSync(log);
  if (child.pid === undefined) throw new Error(`${name} could not be spawned (${command})`);
  // In production etcd and each Patroni node have machines of their own; here they share two cores
  // with both service processes and the clients. Their loops renew the leader key every loop_wait
  // (1 s) within retry_timeout (2 s): starved of CPU, a leader loses its key and is demoted
  // although nothing failed. A higher priority (root only; PostgreSQL, forked by Patroni,
  // inherits it) keeps their timing what it would be on their own machines.
  if (opts.runAs !== null) os.setPriority(child.pid, HA_PRIORITY);
  let ended: Ended | null = null;
  const exited = new Promise<Ended>((resolve) =>
    child.on('exit', (code, signal) => {
      ended = { code, signal };
      resolve(ended);
    }),
  );
  return {
    name,
    pid: child.pid,
    logFile: opts.logFile,
    ended: () => ended,
    exited,
    signal: (signal) => {
      if (ended === null) child.kill(signal);
    },
    logTail: () => tail(opts.logFile),
  };
}

/** Ends `proc`: SIGCONT (it may be paused), SIGTERM, then SIGKILL after `graceMs`. */
export async function endProc(proc: Proc, graceMs: number): Promise<void> {
  proc.signal('SIGCONT');
  proc.signal('SIGTERM');
  const timer = setTimeout(() => proc.signal('SIGKILL'), graceMs);
  await proc.exited;
  clearTimeout(timer);
}

/** The pid in the first line of a postmaster.pid file, or null when there is none. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const pid = Number(fs.readFileSync(`${dataDir}/postmaster.pid`, 'utf8').split('\n')[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Sends `signal` to `pid`; false when no such process exists any more. */
export function signalPid(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function tail(file: string): string {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.slice(-LOG_TAIL_BYTES);
  } catch {
    return '';
  }
}
