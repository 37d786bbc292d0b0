// One process per DATA_DIR (rule 7: exactly one owner of a SPOT ledger). A second process must be
// refused before it touches anything: not the embedded PostgreSQL (which it would otherwise stop
// as a leftover), not the WAL. Two layers:
//
// 1. On Linux, the owner listens on an abstract Unix socket named after DATA_DIR's device and
//    inode. The kernel lets one process bind a name and frees it when that process dies, even by
//    SIGKILL, so two processes of one host can never both pass this point and a killed owner
//    leaves nothing stale. A refused process asks the owner over the socket who it is. The owner
//    keeps DATA_DIR open while it holds the name: a directory removed under a live owner keeps
//    its inode until then, so a new directory can never get that inode and be refused by a name
//    that belongs to the removed one (ext4 hands a freed inode to the next directory made).
// 2. DATA_DIR/owner.lock names the owner (pid, host, start). Written only while holding layer 1,
//    by an atomic rename, it also refuses what the socket cannot see: a process on another host
//    (a shared volume) or in another network namespace. A file naming a dead process, or a pid
//    now used by another process (its start time differs), is stale and replaced.
//
// Without layer 1 (other platforms) the file alone decides; two starts racing on a stale lock
// could then both pass it, which is why layer 1 exists.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { OwnershipError } from './errors.js';
import { ASK_OWNER_TIMEOUT_MS, OWNER_INFO_BYTES_MAX } from '../limits.js';

const DATA_DIR_LOCK_FILE = 'owner.lock';
/** The open DATA_DIRs of the locks held: Node closes a FileHandle it collects, which would free the inode early. */
const openDirs = new Set<fs.FileHandle>();

type LockOwner = {
  readonly pid: number;
  readonly host: string;
  readonly startedAt: string;
  /** The process's start time in clock ticks since boot (/proc/<pid>/stat field 22): tells a live owner from a reused pid. */
  readonly procStart: string | null;
};

type DataDirLock = { readonly owner: LockOwner; readonly release: () => Promise<void> };

/** Takes DATA_DIR's lock, or throws OwnershipError naming the live owner. */
export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  await fs.mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, DATA_DIR_LOCK_FILE);
  const me: LockOwner = {
    pid: process.pid,
    host: os.hostname(),
    startedAt: new Date().toISOString(),
    procStart: await procStart(process.pid),
  };
  const dir = await fs.open(dataDir, 'r');
  openDirs.add(dir);
  const closeDir = async (): Promise<void> => {
    openDirs.delete(dir);
    await dir.close();
  };
  let server: net.Server | null = null;
  try {
    server = await holdSocket(dir, dataDir, file, me);
    const held = await readOwner(file);
    if (held !== null && (await isAlive(held))) throw refusal(dataDir, file, held);
    await writeOwner(file, me);
  } catch (error) {
    await closeServer(server);
    await closeDir();
    throw error;
  }
  const bound = server;
  return {
    owner: me,
    // The file goes first: a process that gets the socket after us must not find us named in it.
    // The directory closes last: its inode is the socket's name until the name is free.
    release: async () => {
      await releaseIfMine(file, me);
      await closeServer(bound);
      await closeDir();
    },
  };
}

/** Binds the abstract socket of DATA_DIR, open as `dir` (Linux), or throws OwnershipError naming the process bound to it. */
async function holdSocket(dir: fs.FileHandle, dataDir: string, file: string, me: LockOwner): Promise<net.Server | null> {
  if (process.platform !== 'linux') return null;
  const name = await socketName(dir);
  const server = net.createServer((socket) => {
    socket.on('error', () => undefined);
    socket.end(JSON.stringify(me));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(name, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    const owner = (await askOwner(name)) ?? (await readOwner(file));
    throw refusal(dataDir, file, owner);
  }
  server.on('error', () => undefined);
  server.unref();
  return server;
}

/** The abstract socket's name: DATA_DIR's device and inode, the same through any path or bind mount to it. */
async function socketName(dir: fs.FileHandle): Promise<string> {
  const st = await dir.stat({ bigint: true });
  return `\0transfer-data-dir-owner:${st.dev}:${st.ino}`;
}

/** What the process bound to `name` says it is, or null if it does not answer in time. */
async function askOwner(name: string): Promise<LockOwner | null> {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(name);
    const done = (owner: LockOwner | null): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(owner);
    };
    const timer = setTimeout(() => done(null), ASK_OWNER_TIMEOUT_MS);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      text += chunk;
      if (text.length > OWNER_INFO_BYTES_MAX) done(null);
    });
    socket.on('end', () => done(parseOwner(text)));
    socket.on('error', () => done(null));
  });
}

function refusal(dataDir: string, file: string, owner: LockOwner | null): OwnershipError {
  const who = owner === null ? 'a process that did not say which' : `pid ${owner.pid} on ${owner.host}, started ${owner.startedAt}`;
  return new OwnershipError(
    `DATA_DIR ${dataDir} is owned by another process: ${who} (${file}). ` +
      'Stop it first; two processes on one DATA_DIR would split the SPOT ledger.',
  );
}

/** Replaces the lock file with one naming `me`, whole or not at all. */
async function writeOwner(file: string, me: LockOwner): Promise<void> {
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    const handle = await fs.open(temp, 'wx', 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(me)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } finally {
    await fs.rm(temp, { force: true });
  }
}

async function releaseIfMine(file: string, me: LockOwner): Promise<void> {
  const held = await readOwner(file);
  if (held !== null && held.pid === me.pid && held.startedAt === me.startedAt) await fs.rm(file, { force: true });
}

async function closeServer(server: net.Server | null): Promise<void> {
  if (server === null) return;
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

async function readOwner(file: string): Promise<LockOwner | null> {
  const text = await fs.readFile(file, 'utf8').catch(() => null);
  return text === null ? null : parseOwner(text);
}

function parseOwner(text: string): LockOwner | null {
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid !== 'number' || typeof parsed.host !== 'string' || typeof parsed.startedAt !== 'string') return null;
    return {
      pid: parsed.pid,
      host: parsed.host,
      startedAt: parsed.startedAt,
      procStart: typeof parsed.procStart === 'string' ? parsed.procStart : null,
    };
  } catch {
    return null;
  }
}

/**
 * Whether the process a lock file names still runs. Another host's process cannot be seen from
 * here, so it counts as alive: the operator removes the file once sure it is gone. A zombie
 * (killed, not yet reaped by its parent) is dead.
 */
async function isAlive(owner: LockOwner): Promise<boolean> {
  if (owner.host !== os.hostname()) return true;
  if (owner.pid === process.pid) return false;
  const stat = await procStat(owner.pid);
  if (stat !== null) {
    if (stat.state === 'Z' || stat.state === 'X') return false;
    if (owner.procStart !== null) return stat.start === owner.procStart;
  }
  try {
    process.kill(owner.pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function procStart(pid: number): Promise<string | null> {
  return (await procStat(pid))?.start ?? null;
}

/** A process's state letter and start time from /proc/<pid>/stat, or null where there is no /proc entry. */
async function procStat(pid: number): Promise<{ state: string; start: string | null } | null> {
  const stat = await fs.readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null);
  if (stat === null) return null;
  // The command name in parentheses may hold spaces; the fields after it are plain (field 3 on).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { state: fields[0] ?? '', start: fields[19] ?? null };
}
