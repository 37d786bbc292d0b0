// The failover drill's PostgreSQL: a scratch embedded server of its own (src/db/embedded-pg.ts, as
// the service starts one) in a temporary directory on a free port, which the drill can restart
// (a fast stop, then a start on the same data directory and port) and pause as a whole (SIGSTOP
// to the postmaster and every process it forked, then SIGCONT), or the empty database DATABASE_URL names,
// which is someone else's server: the PostgreSQL faults cannot be run on it.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPg, type EmbeddedPg } from '../../src/db/embedded-pg.js';
import { openSql } from '../../src/db/sql.js';
import { freePort } from '../support/ports.js';

/** What the drill can do to its PostgreSQL; `restart` and `pause` are null on a DATABASE_URL server. */
export type DrillPg = {
  /** The drill's database on that server. */
  readonly url: string;
  /** Stops the server (`pg_ctl stop -m fast`: every session ended) and starts it again on the same directory and port. */
  readonly restart: (() => Promise<void>) | null;
  /** SIGSTOP to the postmaster and every process it forked (every backend); resolves the pids stopped. */
  readonly pause: (() => Promise<number[]>) | null;
  /** SIGCONT to every process `pause` stopped; harmless when nothing is paused. */
  readonly resume: () => void;
  readonly close: () => Promise<void>;
};

const DATABASE = 'failover';

/** DATABASE_URL (an empty database of its own, no PostgreSQL faults), else a scratch embedded server the drill owns. */
export async function drillPg(log: (line: string) => void): Promise<DrillPg> {
  const given = givenDatabaseUrl();
  if (given !== null) return { url: given, restart: null, pause: null, resume: () => undefined, close: async () => undefined };
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-failover-pg-'));
  // The server runs as an unprivileged user when the drill runs as root: it must reach the dir.
  await fs.chmod(dir, 0o755);
  const port = await freePort();
  const start = () => startEmbeddedPg({ dir, port, log: () => undefined });
  let pg: EmbeddedPg;
  try {
    pg = await start();
    await createDatabase(pg);
  } catch (error) {
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  }
  let paused: number[] = [];
  const resume = (): void => {
    for (const pid of paused) signal(pid, 'SIGCONT');
    paused = [];
  };
  return {
    url: pg.url(DATABASE),
    restart: async () => {
      await pg.stop();
      pg = await start();
      log(`PostgreSQL restarted on port ${port}`);
    },
    pause: async () => {
      const postmaster = await pg.postmasterPid();
      if (postmaster === null) throw new Error('the drill PostgreSQL has no live postmaster to pause');
      // Filled as each is stopped: a failure half-way still resumes what was stopped.
      paused = [];
      await stopAll(postmaster, paused);
      return [...paused];
    },
    resume,
    close: async () => {
      resume();
      try {
        await pg.stop();
      } finally {
        await fs.rm(dir, { recursive: true, force: true });
      }
    },
  };
}

/** DATABASE_URL when given (not empty): the drill then runs on that server, which it cannot restart or pause. */
export function givenDatabaseUrl(): string | null {
  const given = process.env.DATABASE_URL;
  return given === undefined || given === '' ? null : given;
}

async function createDatabase(pg: EmbeddedPg): Promise<void> {
  const admin = openSql(pg.url('postgres'), { max: 1, application: `failover-drill-${randomBytes(3).toString('hex')}` });
  try {
    await admin.unsafe(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

/**
 * Stops PostgreSQL as a whole: the postmaster first (it forks nothing more), then every process it
 * forked (backends, checkpointer, WAL writer), found by their parent pid: each child of the
 * postmaster leads a process group of its own, so the postmaster's group holds it alone, and
 * SIGSTOP to the postmaster alone would leave the backends of open sessions answering.
 */
async function stopAll(postmaster: number, stopped: number[]): Promise<void> {
  stopped.push(postmaster);
  signal(postmaster, 'SIGSTOP');
  for (const entry of await fs.readdir('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || (await parentOf(pid)) !== postmaster) continue;
    stopped.push(pid);
    signal(pid, 'SIGSTOP');
  }
}

/** The parent pid of `pid` (field 4 of /proc/<pid>/stat), or null when it is gone. */
async function parentOf(pid: number): Promise<number | null> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  // The command name (field 2) is in parentheses and may hold spaces: read after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[1]);
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // gone meanwhile
  }
}
