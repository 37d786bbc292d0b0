// The processes a test file leaves running: services, their embedded PostgreSQL servers, CLIs,
// Patroni and etcd. The runner asks after each file; what a file started and left alive holds
// what later files reuse (a port, a database, or a deleted DATA_DIR whose inode the next
// temporary directory gets), so it fails the file and is killed.
//
// A process counts as the suite's when its command is one the suite starts and its command line
// or working directory is in the checkout or a `transfer-` temporary directory: a PostgreSQL
// backend shows neither in its command line, but runs in its data directory.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const SUITE_COMMANDS = new Set(['node', 'postgres', 'patroni', 'etcd', 'python3']);

export type SuiteProcess = { readonly pid: number; readonly command: string };

/**
 * The suite's processes now running, other than this process, its ancestors and whatever runs in
 * `keep` (the runner's own PostgreSQL server).
 */
export async function suiteProcesses(root: string, keep: string | null): Promise<SuiteProcess[]> {
  spared ??= ancestors();
  const mine = await spared;
  const scratch = `${path.join(os.tmpdir(), 'transfer-')}`;
  const found: SuiteProcess[] = [];
  for (const entry of await fs.readdir('/proc').catch(() => [] as string[])) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || mine.has(pid)) continue;
    const comm = (await fs.readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim();
    if (!SUITE_COMMANDS.has(comm)) continue;
    const command = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replaceAll('\0', ' ').trim();
    const cwd = await fs.readlink(`/proc/${pid}/cwd`).catch(() => '');
    const places = [command, cwd];
    if (keep !== null && places.some((p) => p.includes(keep))) continue;
    if (cwd === root || places.some((p) => p.includes(`${root}/`) || p.includes(scratch))) found.push({ pid, command });
  }
  return found;
}

/**
 * The processes `now` finds that were not in `before`, once given `graceMs` to end on their own;
 * whatever is still there then is SIGKILLed and returned.
 */
export async function endLeftovers(
  before: ReadonlySet<number>,
  now: () => Promise<SuiteProcess[]>,
  graceMs: number,
  pollMs: number,
): Promise<SuiteProcess[]> {
  const deadline = Date.now() + graceMs;
  for (;;) {
    const left = (await now()).filter((p) => !before.has(p.pid));
    if (left.length === 0) return [];
    if (Date.now() >= deadline) {
      for (const p of left) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // It ended between the look and the kill.
        }
      }
      return left;
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}

/** This process and those above it: they do not change while it runs, so they are read once. */
let spared: Promise<Set<number>> | null = null;

/** This process and every process above it. */
async function ancestors(): Promise<Set<number>> {
  const pids = new Set<number>();
  for (let pid = process.pid; pid > 1 && !pids.has(pid); ) {
    pids.add(pid);
    const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
    if (stat === null) break;
    pid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return pids;
}
