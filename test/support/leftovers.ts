// What the child-process harness (process.ts) started and has not removed yet: its children, temp
// dirs, PostgreSQL data directories, harnesses and the file-local PostgreSQL. Whatever is still
// alive when the file ends (or the process exits) is removed.

import type { ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { quitPostmaster } from '../../src/db/embedded-pg.js';
import { startScratchPg, type ScratchPg } from './database.js';

export const liveChildren = new Set<ChildProcess>();
/** Children that lead a process group (`make run`): signalled as a group, so the service under make goes too. */
export const groupLeaders = new WeakSet<ChildProcess>();

export function signalChild(proc: ChildProcess, signal: NodeJS.Signals): void {
  if (groupLeaders.has(proc) && proc.pid !== undefined) {
    try {
      process.kill(-proc.pid, signal);
    } catch {
      // the whole group is gone already
    }
  } else proc.kill(signal);
}
/** The harnesses not cleaned up yet (process.ts's Harness; only its cleanup is needed here). */
export const liveHarnesses = new Set<{ readonly cleanup: () => Promise<void> }>();
export const liveDirs = new Set<string>();
/** Data directories of servers the harnesses (or their services) started: stopped at exit. */
export const livePgData = new Set<string>();
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
