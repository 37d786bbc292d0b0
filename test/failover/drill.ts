// `make failover-drill`: a primary and a hot standby on two DATA_DIRs and two ports, one
// PostgreSQL of the drill's own outside both (pg.ts: a scratch embedded server it can restart and
// pause, or DATABASE_URL's), 16 clients sending transfers both ways through a load balancer.
// FAILOVER_CYCLES times (default 5) a fault is made under load, each cycle's kind from a rotation
// (schedule.ts; FAILOVER_KINDS picks it, by default every kind in this order):
//   1. sigkill: the primary killed (SIGKILL), its DATA_DIR deleted on the 1st, 3rd, ... sigkill;
//   2. sigstop: the primary paused (SIGSTOP) past its lease, then resumed: it must have exited;
//   3. stale-primary: the primary killed, the new owner serves SPOT deposits and transfers, stops
//      cleanly and archives its SPOT log; the old primary starts on its old DATA_DIR and must
//      serve everything the new owner acknowledged (stale-cycle.ts);
//   4. pg-restart: PostgreSQL restarted while the standby waits, then the primary killed;
//   5. pg-pause: the standby stopped, every PostgreSQL process paused 5 s: the sole primary must
//      survive and serve again (pg-cycles.ts);
// then the rotation again (FAILOVER_CYCLES=2, CI: a SIGKILL and a SIGSTOP; 8: every kind, then a
// SIGKILL, a SIGSTOP and a second stale-primary). Every promotion is timed (at most 5 s) and the
// former primary comes back as the standby. At the end make drill's checks run on the stores.
// Prints each cycle and a JSON report (each cycle's kind, promotion, errors clients saw during
// the fault, the fault's own numbers); exits non-zero on any violation, any promotion over 5 s,
// or a cycle it could not run.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql } from '../../src/db/sql.js';
import type { Violation } from '../drill/checks.js';
import { seed, userIds } from '../drill/drill.js';
import { freePort } from '../support/ports.js';
import { type CycleContext, type CycleKind, type CycleReport, PROMOTION_MS_MAX } from './cycles.js';
import { Balancer, type Instance } from './lb.js';
import { type Load, newTally, startLoad, type LoadTally } from './load.js';
import { drillPg, givenDatabaseUrl } from './pg.js';
import { type Machine, type Role, type Running, serviceEnv, startService, stopService, waitCaughtUp, waitReady } from './processes.js';
import { rotation, runCycle } from './schedule.js';
import { verifyFailover } from './verify.js';

const START_TIMEOUT_MS = 60_000;
const STOP_WAIT_MS = 10_000;

export type FailoverOptions = {
  readonly cycles: number;
  /** FAILOVER_KINDS: the rotation of cycle kinds (schedule.ts); undefined for every kind. */
  readonly kinds: string | undefined;
  readonly users: number;
  readonly clients: number;
  /** Each cycle runs the load for a random time in [min, max] before its signal. */
  readonly loadMsMin: number;
  readonly loadMsMax: number;
  readonly log: (line: string) => void;
};

export type FailoverReport = {
  readonly rotation: readonly CycleKind[];
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
  const kinds = rotation(opts.kinds, givenDatabaseUrl() === null);
  const db = await drillPg(opts.log);
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-failover-'));
  await fs.chmod(root, 0o755);
  const live: Running[] = [];
  const sql = openSql(db.url, { max: 2, application: 'failover drill' });
  let load: Load | null = null;
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
    const tally = newTally();
    // The clients start at once, before the context they route by exists: the primary until then.
    let routed: CycleContext | null = null;
    const lb = new Balancer(() => (routed === null ? [primary.instance] : instances(routed)));
    load = startLoad(lb, users, opts.clients, tally);
    const ctx: CycleContext = {
      sql,
      lb,
      violations,
      log: opts.log,
      start,
      loadMsMin: opts.loadMsMin,
      loadMsMax: opts.loadMsMax,
      load,
      pg: db,
      users,
      pair: { primary, standby },
    };
    routed = ctx;
    const cycles = await runCycles(ctx, opts, kinds);
    if (ctx.pair.primary.ended() !== null) load.abandon();
    await load.stop();
    const verified = await verifyFailover(sql, ctx.pair.primary, users, tally);
    violations.push(...verified.violations);
    return report(kinds, cycles, verified.transfers, tally, ctx, violations);
  } finally {
    // A cycle that threw may leave the clients held or PostgreSQL paused.
    load?.abandon();
    await load?.stop();
    db.resume();
    await sql.end({ timeout: 5 });
    await stopAll(live);
    await db.close();
    await fs.rm(root, { recursive: true, force: true });
  }
}

/** The cycles in order; the drill stops cycling when no standby is left to promote or no primary serves. */
async function runCycles(ctx: CycleContext, opts: FailoverOptions, kinds: readonly CycleKind[]): Promise<CycleReport[]> {
  const cycles: CycleReport[] = [];
  for (let cycle = 1; cycle <= opts.cycles; cycle++) {
    if (ctx.pair.standby === null || ctx.pair.primary.ended() !== null) {
      const why = ctx.pair.standby === null ? 'no standby is left to promote' : 'no instance owns the ledger';
      ctx.violations.push({ check: 'cycles', detail: `the drill stopped before cycle ${cycle} of ${opts.cycles}: ${why}` });
      break;
    }
    const done = await runCycle(ctx, cycle, kinds);
    cycles.push(done);
    const promotion = done.promotionMs === null ? 'none' : `${done.promotionMs} ms`;
    const caughtUp = done.catchUpMs !== null ? `in ${done.catchUpMs} ms` : done.promotionMs === null ? 'not restarted' : 'never';
    const errors = done.clientErrors;
    const seen =
      errors === undefined ? '' : `; clients saw ${errors.status503} x 503, ${errors.status500} x 500, ${errors.noAnswer} without answer`;
    opts.log(
      `cycle ${cycle}/${opts.cycles} ${done.kind}${done.dataDirDeleted ? ' (DATA_DIR deleted)' : ''} of ${done.primary} after ${done.loadMs} ms of load: promotion ${promotion}, new standby ${done.promotionMs === null ? '' : 'caught up '}${caughtUp}${seen}`,
    );
  }
  return cycles;
}

function instances(ctx: CycleContext): Instance[] {
  const { primary, standby } = ctx.pair;
  return [primary, standby].filter((r): r is Running => r !== null && r.ended() === null).map((r) => r.instance);
}

function report(
  kinds: readonly CycleKind[],
  cycles: CycleReport[],
  transfers: number,
  tally: LoadTally,
  ctx: CycleContext,
  violations: Violation[],
): FailoverReport {
  const { committed: _committed, anomalies: _anomalies, ...load } = tally;
  return {
    rotation: kinds,
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

async function machine(root: string, name: string): Promise<Machine> {
  const dataDir = path.join(root, name);
  await fs.mkdir(dataDir);
  await fs.chmod(dataDir, 0o755);
  return { name, dataDir, port: await freePort() };
}

/** Every process the drill started is stopped: resumed if paused, SIGTERM, then SIGKILL after STOP_WAIT_MS. */
async function stopAll(live: readonly Running[]): Promise<void> {
  await Promise.all(live.map((r) => stopService(r, STOP_WAIT_MS)));
}

async function main(): Promise<void> {
  const cycles = Number(process.env.FAILOVER_CYCLES ?? 5);
  if (!Number.isInteger(cycles) || cycles < 1) throw new Error('FAILOVER_CYCLES must be a positive whole number');
  const log = (l: string) => process.stdout.write(`${l}\n`);
  const kinds = process.env.FAILOVER_KINDS;
  const report = await runFailoverDrill({ cycles, kinds, users: 50, clients: 16, loadMsMin: 1_000, loadMsMax: 3_000, log });
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
