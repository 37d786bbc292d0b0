// Drives POST /api/v1/internal_transfer, closed loop with autocannon or open loop at a fixed rate:
// each request a random seeded user's token, a random direction, asset and amount. Committed
// transfers are counted in PostgreSQL, not from the answers, since a 202 answer still commits a
// moment later; what they cost (CPU, statements, write transactions) is measured over the same
// window, from just before the load until every transfer it started is final.

import type autocannon from 'autocannon';
import type { Sql } from '../../src/db/sql.js';
import { STATE_IDS } from '../../src/domain/fsm.js';
import { measureCpu, type CpuShares } from '../meters/cpu-share.js';
import { runFixedRate, type FixedRateFigures, type FixedRateRequest } from './fixed-rate.js';
import { round1, runLoad, type LoadFigures } from './closed-loop.js';
import { sampleActivity, type PgActivity } from '../meters/pg-activity.js';
import { walBytes } from '../meters/pg-growth.js';
import { countStatements, type StatementCounts } from '../meters/pg-statements.js';
import { spotLogWindow, ubsSyncCounters, type SpotLogWindow, type UbsSyncCounters } from '../meters/spot-log-wait.js';
import { BENCH_ASSETS, type BenchUser } from '../support/seed.js';
import { SERVICE_DATABASE, SERVICE_ROLE, type BenchService } from '../support/service-child.js';

/** After the load stops, how long to wait for transfers answered 202 to become final. */
const SETTLE_MS_MAX = 30_000;
const SETTLE_POLL_MS = 100;
/** Amounts in hundredths of a coin: 0.01 to 9.99, tiny against the seeded balances. */
const AMOUNT_CENTS_MAX = 999;
const TRANSFER_PATH = '/api/v1/internal_transfer';

/** What one measured window did, counted from the stores, and what it cost per committed transfer. */
export type WindowFigures = {
  readonly committed: number;
  /**
   * Committed over the load's own duration: autocannon's run, or the open loop's until its last
   * answer (the settle wait after either is not counted).
   */
  readonly committedPerSecond: number;
  readonly failed: number;
  readonly rolledBack: number;
  /** Transfers still not final when the settle wait ended (0 expected). */
  readonly unfinished: number;
  /** PostgreSQL write transactions (transaction ids assigned) per committed transfer. */
  readonly pgWriteTxnsPerCommitted: number | null;
  /** PostgreSQL WAL bytes written (pg_stat_wal) per committed transfer. */
  readonly pgWalBytesPerCommitted: number | null;
  /** Statements the service ran (pg_stat_statements, BEGIN/COMMIT left out) per committed transfer; null when not counted. */
  readonly pgStatementsPerCommitted: number | null;
  /** CPU of every PostgreSQL process, and of the service process (all threads), per committed transfer, in ms. */
  readonly postgresCpuMsPerCommitted: number | null;
  readonly serviceCpuMsPerCommitted: number | null;
  /** UBSCore commands per WAL batch during the window (one sync per batch), from /metrics. */
  readonly ubsCommandsPerBatch: number | null;
  /** transfer_fsm_transitions_total (spec 004's fsm_state_count) moves during the window, by "FROM→TO", from /metrics. */
  readonly transitions: Readonly<Record<string, number>>;
  /** UBSCore's waits for LMDB and for PostgreSQL's spot_log, and the log's share of PostgreSQL's work; null with SPOT_LOG=off. */
  readonly spotLog: SpotLogWindow | null;
  readonly statements: StatementCounts | null;
  readonly cpu: CpuShares;
  readonly pgActivity: PgActivity;
};

export type TransferLevel = LoadFigures & WindowFigures;
export type FixedRateLevel = FixedRateFigures & WindowFigures;

export type Counts = { committed: number; failed: number; rolledBack: number };

function pick<T>(xs: readonly T[]): T {
  return xs[Math.floor(Math.random() * xs.length)] as T;
}

/** One transfer request: a random user, direction, asset and amount. */
export function randomTransfer(users: readonly BenchUser[]): FixedRateRequest {
  const user = pick(users);
  const from = Math.random() < 0.5 ? 'FUNDING' : 'SPOT';
  const cents = 1 + Math.floor(Math.random() * AMOUNT_CENTS_MAX);
  const amount = `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;
  return {
    path: TRANSFER_PATH,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}` },
    body: JSON.stringify({ from, to: from === 'FUNDING' ? 'SPOT' : 'FUNDING', asset: pick(BENCH_ASSETS), amount }),
  };
}

export function transferRequests(users: readonly BenchUser[]): autocannon.RequestSpec[] {
  return [
    {
      method: 'POST',
      path: TRANSFER_PATH,
      setupRequest: (request) => {
        const r = randomTransfer(users);
        request.headers = { ...request.headers, ...r.headers };
        request.body = r.body;
        return request;
      },
    },
  ];
}

/** Closed loop: `connections` clients, each sending its next request when answered, for `durationS`. */
export async function driveTransfers(
  svc: BenchService,
  users: readonly BenchUser[],
  connections: number,
  durationS: number,
): Promise<TransferLevel> {
  return measureWindow(svc, () => runLoad({ url: svc.base, connections, durationS, requests: transferRequests(users) }));
}

/** Open loop: `ratePerSecond` requests evenly spaced for `durationS`, whatever the answers. */
export async function driveFixedRate(
  svc: BenchService,
  users: readonly BenchUser[],
  ratePerSecond: number,
  durationS: number,
): Promise<FixedRateLevel> {
  return measureWindow(svc, () => runFixedRate({ url: svc.base, ratePerSecond, durationS, request: () => randomTransfer(users) }));
}

/**
 * Runs `load` inside a measured window. The table counts and /metrics reads happen outside it;
 * inside, the benchmark only polls transfers_active (as its own role) and samples
 * pg_stat_activity, so what the window costs is the service's work.
 */
async function measureWindow<L extends { readonly durationS: number }>(
  svc: BenchService,
  load: () => Promise<L>,
): Promise<L & WindowFigures> {
  const before = await counts(svc.sql);
  const metricsBefore = await serviceCounters(svc.base);
  const xidBefore = await currentXid(svc.sql);
  const walBefore = await walBytes(svc.sql);
  const statements = await countStatements(svc.stats, { role: SERVICE_ROLE, database: SERVICE_DATABASE });
  const cpu = await measureCpu(svc.pid, svc.dataDir);
  const activity = sampleActivity(svc.sql);
  const figures = await load();
  const unfinished = await settle(svc.sql);
  const cpuShares = await cpu.stop();
  const statementCounts = await statements.stop();
  const xidAfter = await currentXid(svc.sql);
  const walAfter = await walBytes(svc.sql);
  const pgActivity = await activity.stop();
  const after = await counts(svc.sql);
  const metricsAfter = await serviceCounters(svc.base);
  const committed = after.committed - before.committed;
  const perCommitted = (x: number | null, digits = 2): number | null =>
    x === null || committed <= 0 ? null : Math.round((x / committed) * 10 ** digits) / 10 ** digits;
  const batches = metricsAfter.ubsBatches - metricsBefore.ubsBatches;
  const writeTxns = xidAfter - xidBefore;
  return {
    ...figures,
    committed,
    committedPerSecond: round1(committed / Math.max(figures.durationS, 0.001)),
    failed: after.failed - before.failed,
    rolledBack: after.rolledBack - before.rolledBack,
    unfinished,
    pgWriteTxnsPerCommitted: perCommitted(writeTxns),
    pgWalBytesPerCommitted: perCommitted(walAfter - walBefore, 0),
    pgStatementsPerCommitted: statementCounts === null || statementCounts.evicted ? null : perCommitted(statementCounts.statements),
    postgresCpuMsPerCommitted: perCommitted(cpuShares.postgresCpuS * 1000, 3),
    serviceCpuMsPerCommitted: perCommitted(cpuShares.serviceCpuS * 1000, 3),
    ubsCommandsPerBatch: batches > 0 ? round1((metricsAfter.ubsCommands - metricsBefore.ubsCommands) / batches) : null,
    transitions: difference(metricsBefore.transitions, metricsAfter.transitions),
    spotLog: spotLogWindow(metricsBefore.sync, metricsAfter.sync, { committed, writeTxns, statements: statementCounts }),
    statements: statementCounts,
    cpu: cpuShares,
    pgActivity,
  };
}

/** Terminal counts by a scan of transfers_tb: taken outside the measured window only. */
export async function counts(sql: Sql): Promise<Counts> {
  const rows = await sql<{ committed: number; failed: number; rolled_back: number }[]>`
    SELECT count(*) FILTER (WHERE state = ${STATE_IDS.COMMITTED})::int AS committed,
           count(*) FILTER (WHERE state = ${STATE_IDS.FAILED})::int AS failed,
           count(*) FILTER (WHERE state = ${STATE_IDS.ROLLED_BACK})::int AS rolled_back
      FROM transfers_tb`;
  const r = rows[0];
  return { committed: r?.committed ?? 0, failed: r?.failed ?? 0, rolledBack: r?.rolled_back ?? 0 };
}

/** Waits (bounded) until no transfer is unfinished, polling transfers_active (which lists exactly them); answers how many are left. */
export async function settle(sql: Sql, maxMs = SETTLE_MS_MAX): Promise<number> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const rows = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_active`;
    const open = rows[0]?.n ?? 0;
    if (open === 0 || Date.now() > deadline) return open;
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  }
}

/** Each call assigns one transaction id itself; against thousands per run that is noise. */
export async function currentXid(sql: Sql): Promise<number> {
  const rows = await sql<{ xid: string }[]>`SELECT pg_current_xact_id()::text AS xid`;
  return Number(rows[0]?.xid ?? 0);
}

function difference(before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [key, value] of after) {
    const d = value - (before.get(key) ?? 0);
    if (d > 0) out[key] = d;
  }
  return out;
}

type ServiceCounters = { ubsCommands: number; ubsBatches: number; transitions: Map<string, number>; sync: UbsSyncCounters };

/** UBSCore's command and WAL batch counters, its group commit's waits, and the FSM transition counts, from the service's /metrics. */
async function serviceCounters(base: string): Promise<ServiceCounters> {
  const text = await fetch(`${base}/metrics`).then(
    (r) => (r.ok ? r.text() : ''),
    () => '',
  );
  const read = (name: string): number => Number(new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+([0-9.eE+]+)\\s*$`, 'm').exec(text)?.[1] ?? 0);
  const transitions = new Map<string, number>();
  // One series per shard (and thread): summed by from and to.
  for (const m of text.matchAll(/^transfer_fsm_transitions_total\{([^}]*)\}\s+([0-9.eE+]+)\s*$/gm)) {
    const from = /from="([A-Z_]+)"/.exec(m[1] ?? '')?.[1];
    const to = /to="([A-Z_]+)"/.exec(m[1] ?? '')?.[1];
    if (from !== undefined && to !== undefined) transitions.set(`${from}→${to}`, (transitions.get(`${from}→${to}`) ?? 0) + Number(m[2]));
  }
  return {
    ubsCommands: read('transfer_ubscore_commands_total'),
    ubsBatches: read('transfer_ubscore_wal_batches_total'),
    transitions,
    sync: ubsSyncCounters(text),
  };
}
