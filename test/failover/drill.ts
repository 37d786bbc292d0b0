// `make failover-drill` (issue 26): a primary and a hot standby on two DATA_DIRs and two ports, one
// PostgreSQL of the drill's own outside both, 16 clients sending transfers both ways through a
// load balancer. FAILOVER_CYCLES times (default 5) the primary is killed under load (SIGKILL, its
// DATA_DIR deleted on alternate cycles; the 2nd cycle pauses it with SIGSTOP past its lease
// instead), the promotion is timed and the former primary comes back as the standby. At the end
// make drill's checks run on the stores. Prints each promotion time and a JSON report; exits
// non-zero on any violation or any promotion over 5 s.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql } from '../../src/db/sql.js';
import type { Violation } from '../drill/checks.js';
import { seed, userIds } from '../drill/drill.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/ports.js';
import { type CycleContext, type CycleReport, killCycle, PROMOTION_MS_MAX, stopCycle } from './cycles.js';
import { Balancer, type Instance } from './lb.js';
import { newTally, startLoad, type LoadTally } from './load.js';
import { endedWithin, type Machine, type Role, type Running, serviceEnv, startService, waitCaughtUp, waitReady } from './processes.js';
import { verifyFailover } from './verify.js';

const START_TIMEOUT_MS = 60_000;
const STOP_WAIT_MS = 10_000;

export type FailoverOptions = {
  readonly cycles: number;
  readonly users: number;
  readonly clients: number;
  /** Each cycle runs the load for a random time in [min, max] before its signal. */
  readonly loadMsMin: number;
  readonly loadMsMax: number;
  readonly log: (line: string) => void;
};

export type FailoverReport = {
  readonly cycles: readonly CycleReport[];
  readonly promotionMs: readonly (number | null)[];
  readonly promotionMsMax: number;
  readonly transfers: number;
  readonly committedSeenByClients: number;
  readonly load: Omit<LoadTally, 'committed' | 'anomalies'>;
  readonly answersRecorded: number;
  readonly violations: readonly Violation[];
};

export async function runFailoverDrill(opts: FailoverOptions): Promise<FailoverReport> {
  const db = await drillDatabase();
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-failover-'));
  await fs.chmod(root, 0o755);
  const live: Running[] = [];
  const sql = openSql(db.url, { max: 2, application: 'failover drill' });
  try {
    const [a, b] = [await machine(root, 'a'), await machine(root, 'b')];
    const env = serviceEnv(db.url);
    const start = async (m: Machine, role: Role): Promise<Running> => {
      const running = await startService(m, role, env, START_TIMEOUT_MS);
      live.push(running);
      return running;
    };
    const primary = await start(a, 'primary');
    if ((await waitReady(primary, START_TIMEOUT_MS)) === null) throw new Error(`the primary did not get ready: ${primary.stderrTail()}`);
    const users = userIds(opts.users);
    await seed(primary.instance.base, opts.users);
    const standby = await start(b, 'standby');
    if (!(await waitCaughtUp(standby, START_TIMEOUT_MS))) throw new Error(`the standby did not catch up: ${standby.stderrTail()}`);
    const violations: Violation[] = [];
    const ctx: CycleContext = {
      sql,
      lb: new Balancer(() => instances(ctx)),
      violations,
      log: opts.log,
      start,
      loadMsMin: opts.loadMsMin,
      loadMsMax: opts.loadMsMax,
      pair: { primary, standby },
    };
    const tally = newTally();
    const load = startLoad(ctx.lb, users, opts.clients, tally);
    const cycles = await runCycles(ctx, opts);
    if (ctx.pair.primary.ended() !== null) load.abandon();
    await load.stop();
    const verified = await verifyFailover(sql, ctx.pair.primary, users, tally);
    violations.push(...verified.violations);
    return report(cycles, verified.transfers, tally, ctx, violations);
  } finally {
    await sql.end({ timeout: 5 });
    await stopAll(live);
    await db.drop();
    await fs.rm(root, { recursive: true, force: true });
  }
}

/** The cycles in order; the drill stops cycling when no standby is left to promote or no primary serves. */
async function runCycles(ctx: CycleContext, opts: FailoverOptions): Promise<CycleReport[]> {
  const cycles: CycleReport[] = [];
  for (let cycle = 1; cycle <= opts.cycles; cycle++) {
    if (ctx.pair.standby === null || ctx.pair.primary.ended() !== null) {
      const why = ctx.pair.standby === null ? 'no standby is left to promote' : 'no instance owns the ledger';
      ctx.violations.push({ check: 'cycles', detail: `the drill stopped before cycle ${cycle} of ${opts.cycles}: ${why}` });
      break;
    }
    const done = cycle === 2 ? await stopCycle(ctx, cycle) : await killCycle(ctx, cycle, cycle % 2 === 1);
    cycles.push(done);
    const promotion = done.promotionMs === null ? 'none' : `${done.promotionMs} ms`;
    const caughtUp = done.catchUpMs !== null ? `in ${done.catchUpMs} ms` : done.promotionMs === null ? 'not restarted' : 'never';
    opts.log(
      `cycle ${cycle}/${opts.cycles} ${done.kind}${done.dataDirDeleted ? ' (DATA_DIR deleted)' : ''} of ${done.primary} after ${done.loadMs} ms of load: promotion ${promotion}, new standby ${done.promotionMs === null ? '' : 'caught up '}${caughtUp}`,
    );
  }
  return cycles;
}

function instances(ctx: CycleContext): Instance[] {
  const { primary, standby } = ctx.pair;
  return [primary, standby].filter((r): r is Running => r !== null && r.ended() === null).map((r) => r.instance);
}

function report(cycles: CycleReport[], transfers: number, tally: LoadTally, ctx: CycleContext, violations: Violation[]): FailoverReport {
  const { committed: _committed, anomalies: _anomalies, ...load } = tally;
  return {
    cycles,
    promotionMs: cycles.map((c) => c.promotionMs),
    promotionMsMax: PROMOTION_MS_MAX,
    transfers,
    committedSeenByClients: tally.committed.size,
    load,
    answersRecorded: ctx.lb.recorded.length,
    violations,
  };
}

/** DATABASE_URL (an empty database of its own), else a fresh database on TEST_PG_ADMIN_URL's server or on a scratch embedded server. */
async function drillDatabase(): Promise<TestDatabase> {
  const given = process.env.DATABASE_URL;
  if (given !== undefined && given !== '') return { url: given, drop: async () => undefined };
  return createTestDatabase();
}

async function machine(root: string, name: string): Promise<Machine> {
  const dataDir = path.join(root, name);
  await fs.mkdir(dataDir);
  await fs.chmod(dataDir, 0o755);
  return { name, dataDir, port: await freePort() };
}

/** Every process the drill started is stopped: resumed if paused, SIGTERM, then SIGKILL after STOP_WAIT_MS. */
async function stopAll(live: readonly Running[]): Promise<void> {
  await Promise.all(
    live.map(async (r) => {
      r.signal('SIGCONT');
      r.signal('SIGTERM');
      if ((await endedWithin(r, STOP_WAIT_MS)) === null) r.signal('SIGKILL');
      await r.exited;
    }),
  );
}

async function main(): Promise<void> {
  const cycles = Number(process.env.FAILOVER_CYCLES ?? 5);
  if (!Number.isInteger(cycles) || cycles < 1) throw new Error('FAILOVER_CYCLES must be a positive whole number');
  const log = (l: string) => process.stdout.write(`${l}\n`);
  const report = await runFailoverDrill({ cycles, users: 50, clients: 16, loadMsMin: 1_000, loadMsMax: 3_000, log });
  process.stdout.write(`\n${JSON.stringify(report, null, 2)}\n`);
  const times = report.promotionMs.map((ms, i) => `cycle ${i + 1} ${ms === null ? 'none' : `${ms} ms`}`).join(', ');
  process.stdout.write(
    `\nfailover drill: ${report.cycles.length}/${cycles} cycles, promotions ${times}; ${report.transfers} transfers, ${report.committedSeenByClients} commits seen by clients, ${report.violations.length} violations\n`,
  );
  process.exit(report.violations.length === 0 && report.cycles.length === cycles ? 0 : 1);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`failover drill failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  });
}
