// `make drill`: the restart-from-WAL recovery drill. Starts the real service (its embedded
// PostgreSQL, its UBSCore WAL), drives a mixed load of transfers in both directions from many
// users, kills the whole process with SIGKILL at random moments, restarts it, waits for
// recovery, and at the end verifies: every transfer terminal, funds conserved exactly per user
// and asset, every (req_id, op) applied once, every COMMITTED a client saw still COMMITTED.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql, type Sql } from '../../src/db/sql.js';
import { TERMINAL_STATE_IDS } from '../../src/domain/fsm.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { freePort } from '../support/ports.js';
import { verifyDrill, type Violation } from './checks.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The JWT secret of the drills' services: test/failover/ signs its clients' tokens with it too. */
export const SECRET = 'drill-secret-drill-secret-drill-secret-0000';
const READY_TIMEOUT_MS = 60_000;
const RECOVERY_TIMEOUT_MS = 120_000;
export const ASSETS = ['USDT', 'BTC'] as const;
const SEED_WHOLE = 1_000n;

export type DrillOptions = {
  readonly cycles: number;
  readonly users: number;
  readonly concurrency: number;
  /** Each cycle runs load for a random time in [min, max] before the kill. */
  readonly killAfterMsMin: number;
  readonly killAfterMsMax: number;
  readonly log: (line: string) => void;
};

export type DrillReport = {
  readonly cycles: number;
  readonly transfers: number;
  readonly committedSeenByClients: number;
  readonly recoveryMs: readonly number[];
  readonly violations: readonly Violation[];
};

type Service = { child: ChildProcess; base: string; exited: Promise<NodeJS.Signals | number | null> };

export async function runDrill(opts: DrillOptions): Promise<DrillReport> {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-drill-'));
  await fs.chmod(dataDir, 0o755);
  const port = await freePort();
  const pgPort = await freePort();
  const env = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    EMBEDDED_PG_PORT: String(pgPort),
    JWT_SECRET: SECRET,
    PRINT_BANNER: '0',
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
    RETRY_BASE_MS: '50',
    RETRY_CAP_MS: '1000',
    // The processed set's retention runs through the kills: the shortest retention, a
    // pass every second, so that past the first half minute every start prunes, and a kill may land
    // inside a pass. Given in the environment, the caller's values win.
    PROCESSED_RETENTION_S: process.env.PROCESSED_RETENTION_S ?? '30',
    PROCESSED_PRUNE_INTERVAL_S: process.env.PROCESSED_PRUNE_INTERVAL_S ?? '1',
  };
  // With DATABASE_URL (an empty database of its own: `make test-external`) the drill runs on that
  // server, which outlives every kill; without it, on the service's embedded PostgreSQL.
  const databaseUrl = process.env.DATABASE_URL === '' ? undefined : process.env.DATABASE_URL;
  if (databaseUrl === undefined) delete (env as Record<string, string | undefined>).DATABASE_URL;
  const storesUrl = async (): Promise<string> => databaseUrl ?? (await embeddedUrl(dataDir, pgPort));
  const committed = new Set<string>();
  const recoveryMs: number[] = [];
  let svc = await start(env, port);
  let sql: Sql | null = null;
  try {
    await seed(svc.base, opts.users);
    for (let cycle = 1; cycle <= opts.cycles; cycle++) {
      const runFor = opts.killAfterMsMin + Math.random() * (opts.killAfterMsMax - opts.killAfterMsMin);
      const users = userIds(opts.users);
      const load = drive(opts.concurrency, () => sendDirect(svc.base, users, committed));
      await new Promise((r) => setTimeout(r, runFor));
      svc.child.kill('SIGKILL');
      await svc.exited;
      await load.stop();
      const started = Date.now();
      svc = await start(env, port);
      sql ??= openSql(await storesUrl(), { max: 2, application: 'drill' });
      await waitAllTerminal(sql);
      recoveryMs.push(Date.now() - started);
      opts.log(
        `cycle ${cycle}/${opts.cycles}: killed after ${Math.round(runFor)} ms, recovered in ${recoveryMs[recoveryMs.length - 1]} ms, ${committed.size} commits seen`,
      );
    }
    sql ??= openSql(await storesUrl(), { max: 2, application: 'drill' });
    const violations = await verifyDrill({
      sql,
      base: svc.base,
      token: (u) => token(u),
      adminToken: token('admin'),
      users: userIds(opts.users),
      assets: ASSETS,
      committed,
    });
    const transfers = Number((await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb`)[0]?.n ?? 0);
    return { cycles: opts.cycles, transfers, committedSeenByClients: committed.size, recoveryMs, violations };
  } finally {
    await sql?.end({ timeout: 5 });
    svc.child.kill('SIGTERM');
    await svc.exited;
    await fs.rm(dataDir, { recursive: true, force: true });
  }
}

export function userIds(n: number): bigint[] {
  return Array.from({ length: n }, (_, i) => BigInt(1_000 + i));
}

export function token(userId: bigint | 'admin'): string {
  const exp = Math.floor(Date.now() / 1000) + 3_600;
  return userId === 'admin' ? signJwt({ sub: '1', exp, role: 'admin' }, SECRET) : signJwt({ sub: userId.toString(), exp }, SECRET);
}

async function start(env: NodeJS.ProcessEnv, port: number): Promise<Service> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'actors', 'main.js')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4_000)));
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.on('exit', (code, signal) => resolve(signal ?? code)));
  const base = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ok = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return { child, base, exited };
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`service did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Deposits SEED_WHOLE of every asset on both sides of every user, through `base`. */
export async function seed(base: string, users: number): Promise<void> {
  for (const userId of userIds(users)) {
    for (const asset of ASSETS) {
      for (const account of ['FUNDING', 'SPOT']) {
        const body = {
          user_id: userId.toString(),
          account,
          asset,
          amount: SEED_WHOLE.toString(),
          ref: `drill-${userId}-${asset}-${account}`,
        };
        const r = await fetch(`${base}/admin/v1/deposit`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token('admin')}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        if (r.status !== 200) throw new Error(`seed deposit failed: ${r.status} ${await r.text()}`);
      }
    }
  }
}

/** A transfer request of the drills: its user, and the body (both directions, both assets). */
export type DrillTransfer = {
  readonly userId: bigint;
  readonly body: { readonly from: string; readonly to: string; readonly asset: string; readonly amount: string };
};

/** One random transfer of one of `users`: either direction, either asset, 1 to 20.99 whole units. */
export function randomTransfer(users: readonly bigint[]): DrillTransfer {
  const userId = users[Math.floor(Math.random() * users.length)] as bigint;
  const from = Math.random() < 0.5 ? 'FUNDING' : 'SPOT';
  const body = {
    from,
    to: from === 'FUNDING' ? 'SPOT' : 'FUNDING',
    asset: ASSETS[Math.floor(Math.random() * ASSETS.length)] as string,
    amount: `${1 + Math.floor(Math.random() * 20)}.${Math.floor(Math.random() * 100)}`,
  };
  return { userId, body };
}

/** `clients` concurrent clients, each calling `one` again and again until stopped; stop waits for the calls under way. */
export function drive(clients: number, one: () => Promise<void>): { stop: () => Promise<void> } {
  let running = true;
  const client = async (): Promise<void> => {
    while (running) await one();
  };
  const all = Array.from({ length: clients }, client);
  return {
    stop: async () => {
      running = false;
      await Promise.all(all);
    },
  };
}

/** One random transfer sent straight to `base`; a COMMITTED answer is remembered. */
async function sendDirect(base: string, users: readonly bigint[], committed: Set<string>): Promise<void> {
  const { userId, body } = randomTransfer(users);
  try {
    const r = await fetch(`${base}/api/v1/internal_transfer`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token(userId)}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await r.json()) as { state?: string; req_id?: string };
    if (json.state === 'COMMITTED' && json.req_id !== undefined) committed.add(json.req_id);
  } catch {
    await new Promise((r) => setTimeout(r, 20)); // the service is down: the drill killed it
  }
}

async function embeddedUrl(dataDir: string, pgPort: number): Promise<string> {
  const password = (await fs.readFile(path.join(dataDir, 'postgres', 'pg-password'), 'utf8')).trim();
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${pgPort}/transfer`;
}

/** Waits until no transfer is unfinished; throws after RECOVERY_TIMEOUT_MS. */
export async function waitAllTerminal(sql: Sql): Promise<void> {
  const deadline = Date.now() + RECOVERY_TIMEOUT_MS;
  for (;;) {
    const open = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN ${sql([...TERMINAL_STATE_IDS])}`;
    if (open[0]?.n === 0) return;
    if (Date.now() > deadline) throw new Error(`${open[0]?.n} transfers still unfinished after ${RECOVERY_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function main(): Promise<void> {
  const cycles = Number(process.env.DRILL_CYCLES ?? 10);
  if (!Number.isInteger(cycles) || cycles < 1) throw new Error('DRILL_CYCLES must be a positive whole number');
  const report = await runDrill({
    cycles,
    users: 50,
    concurrency: 16,
    killAfterMsMin: 1_000,
    killAfterMsMax: 4_000,
    log: (l) => process.stdout.write(`${l}\n`),
  });
  process.stdout.write(`\n${JSON.stringify(report, null, 2)}\n`);
  const mean = report.recoveryMs.reduce((a, b) => a + b, 0) / Math.max(1, report.recoveryMs.length);
  process.stdout.write(
    `\ndrill: ${report.cycles} cycles, ${report.transfers} transfers, ${report.committedSeenByClients} commits seen by clients, recovery mean ${Math.round(mean)} ms, max ${Math.max(...report.recoveryMs)} ms, ${report.violations.length} violations\n`,
  );
  process.exit(report.violations.length === 0 ? 0 : 1);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`drill failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  });
}
