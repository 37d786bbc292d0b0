// The machine's limits the service is measured against, each on this machine and in this run:
// (a) PostgreSQL: one transaction per operation (a balance UPDATE plus an INSERT) through
//     postgres.js, and through pgbench with the same script, on the service's own server;
// (b) HTTP: the same Hono + @hono/node-server stack answering a trivial JSON POST, closed loop
//     and at the open loop's fixed rate;
// (c), UBSCore alone, is bench/parts/ubscore-throughput.ts; (d), UBSCore restart with 1M accounts and
// 1M WAL records, is bench/parts/ubscore-restart-run.ts; (e), start-up recovery, is bench/parts/recovery.ts.

import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { openSql, type Sql } from '../../src/db/sql.js';
import { registerCleanup } from '../support/cleanup.js';
import { measureCpu } from '../meters/cpu-share.js';
import { runFixedRate, type FixedRateFigures } from '../load/fixed-rate.js';
import { round1, runLoad, type LoadFigures } from '../load/closed-loop.js';
import { countStatements } from '../meters/pg-statements.js';
import { walBytes } from '../meters/pg-growth.js';
import type { BenchUser } from '../support/seed.js';
import { pgUrl, ROOT, SERVICE_DATABASE, SERVICE_ROLE, type BenchService } from '../support/service-child.js';
import { randomTransfer, transferRequests } from '../load/transfer-load.js';

const run = promisify(execFile);

/** PostgreSQL allows about 100 connections and the idle service holds some: pools stop here. */
export const PG_CEILING_CONNECTIONS_MAX = 64;
export const PGBENCH_PATH = '/usr/bin/pgbench';
const PGBENCH_THREADS_MAX = 2;
/** Beyond its own duration, how long pgbench may take to connect and finish. */
const PGBENCH_SLACK_MS = 60_000;

export type PgCeiling = {
  readonly connections: number;
  /** Connections actually used: `connections` capped at PG_CEILING_CONNECTIONS_MAX. */
  readonly poolConnections: number;
  /**
   * `postgresCores`: CPU PostgreSQL used meanwhile, in cores; `postgresCpuMsPerOp` the same per
   * transaction, to set against the service's per transfer; `statementsPerOp` counted by
   * pg_stat_statements the way the service's are (BEGIN/COMMIT left out: 2 expected), null when
   * not counted.
   */
  readonly postgresJs: {
    readonly transactions: number;
    readonly durationS: number;
    readonly perSecond: number;
    readonly postgresCores: number;
    readonly postgresCpuMsPerOp: number | null;
    readonly statementsPerOp: number | null;
    /** WAL bytes written (pg_stat_wal) per transaction. */
    readonly walBytesPerOp: number | null;
  };
  readonly pgbench: { readonly tps: number; readonly transactions: number } | null;
};

/** Scratch tables in the service's database, shaped like a balance row and an operation record. */
async function createScratch(sql: Sql, accounts: number): Promise<void> {
  await sql`DROP TABLE IF EXISTS bench_ceiling_ops, bench_ceiling_accounts`;
  await sql`CREATE TABLE bench_ceiling_accounts (id INTEGER PRIMARY KEY, balance BIGINT NOT NULL CHECK (balance >= 0), updated_at TIMESTAMPTZ NOT NULL DEFAULT now())`;
  await sql`CREATE TABLE bench_ceiling_ops (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, account_id INTEGER NOT NULL, amount BIGINT NOT NULL, at TIMESTAMPTZ NOT NULL DEFAULT now())`;
  await sql`INSERT INTO bench_ceiling_accounts (id, balance) SELECT g, 1000000000 FROM generate_series(1, ${accounts}::int) AS g`;
  await sql`VACUUM ANALYZE bench_ceiling_accounts`;
}

async function postgresJsCeiling(
  svc: BenchService,
  connections: number,
  durationS: number,
  accounts: number,
): Promise<PgCeiling['postgresJs']> {
  const pool = Math.min(connections, PG_CEILING_CONNECTIONS_MAX);
  const sql = openSql(pgUrl(svc.pgPort, svc.pgPassword), { max: pool, application: 'bench-ceiling' });
  try {
    // Open every connection before the clock starts, as the service's pools are open before its load.
    await Promise.all(Array.from({ length: pool }, () => sql`SELECT pg_sleep(0.05)`));
    // Measured before the pool closes: its backends, and their CPU times, end with it.
    const statements = await countStatements(svc.stats, { role: SERVICE_ROLE, database: SERVICE_DATABASE });
    const cpu = await measureCpu(svc.pid, svc.dataDir);
    const walBefore = await walBytes(svc.sql);
    let transactions = 0;
    const started = performance.now();
    const end = started + durationS * 1000;
    const client = async (): Promise<void> => {
      while (performance.now() < end) {
        const id = 1 + Math.floor(Math.random() * accounts);
        const amount = 1 + Math.floor(Math.random() * 1000);
        await sql.begin(async (tx) => {
          await tx`UPDATE bench_ceiling_accounts SET balance = balance + ${amount}, updated_at = now() WHERE id = ${id}`;
          await tx`INSERT INTO bench_ceiling_ops (account_id, amount) VALUES (${id}, ${amount})`;
        });
        transactions++;
      }
    };
    await Promise.all(Array.from({ length: connections }, client));
    const elapsedS = (performance.now() - started) / 1000;
    const { postgresCores, postgresCpuS } = await cpu.stop();
    const counted = await statements.stop();
    const walAfter = await walBytes(svc.sql);
    const perOp = (x: number, digits: number): number | null =>
      transactions > 0 ? Math.round((x / transactions) * 10 ** digits) / 10 ** digits : null;
    return {
      transactions,
      durationS: round1(elapsedS),
      perSecond: round1(transactions / elapsedS),
      postgresCores,
      postgresCpuMsPerOp: perOp(postgresCpuS * 1000, 3),
      // The idle service runs on the same role and database (its lease renewals, halt reads, the
      // retention): only the statements on the ceiling's own tables are (a)'s.
      statementsPerOp: counted === null || counted.evicted ? null : perOp(ceilingStatements(counted.byStatement), 2),
      walBytesPerOp: perOp(walAfter - walBefore, 0),
    };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

const PGBENCH_SCRIPT = (accounts: number): string => `\\set aid random(1, ${accounts})
\\set amount random(1, 1000)
BEGIN;
UPDATE bench_ceiling_accounts SET balance = balance + :amount, updated_at = now() WHERE id = :aid;
INSERT INTO bench_ceiling_ops (account_id, amount) VALUES (:aid, :amount);
END;
`;

async function pgbenchCeiling(
  svc: BenchService,
  scriptFile: string,
  connections: number,
  durationS: number,
): Promise<PgCeiling['pgbench']> {
  const args = [
    '-n',
    '-f',
    scriptFile,
    '-c',
    String(connections),
    '-j',
    String(Math.min(PGBENCH_THREADS_MAX, connections)),
    '-T',
    String(durationS),
  ];
  args.push('-h', '127.0.0.1', '-p', String(svc.pgPort), '-U', 'postgres', 'transfer');
  const { stdout } = await run(PGBENCH_PATH, args, {
    env: { ...process.env, PGPASSWORD: svc.pgPassword },
    timeout: durationS * 1000 + PGBENCH_SLACK_MS,
  });
  const tps = /^tps = ([0-9.]+)/m.exec(stdout)?.[1];
  const transactions = /number of transactions actually processed: (\d+)/.exec(stdout)?.[1];
  if (tps === undefined) throw new Error(`pgbench printed no tps: ${stdout}`);
  return { tps: round1(Number(tps)), transactions: Number(transactions ?? 0) };
}

/** (a) at each connection level, on the running service's PostgreSQL while the service is idle. */
export async function pgCeilings(
  svc: BenchService,
  levels: readonly number[],
  durationS: number,
  accounts: number,
  log: (line: string) => void,
): Promise<PgCeiling[]> {
  const scriptDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-pgbench-'));
  const scriptFile = path.join(scriptDir, 'ceiling.sql');
  await fs.writeFile(scriptFile, PGBENCH_SCRIPT(accounts));
  const hasPgbench = await fs.access(PGBENCH_PATH).then(
    () => true,
    () => false,
  );
  try {
    await createScratch(svc.sql, accounts);
    const results: PgCeiling[] = [];
    for (const connections of levels) {
      const poolConnections = Math.min(connections, PG_CEILING_CONNECTIONS_MAX);
      const postgresJs = await postgresJsCeiling(svc, connections, durationS, accounts);
      log(
        `  (a) postgres.js, ${connections} clients on ${poolConnections} connections: ${postgresJs.perSecond} txn/s, PostgreSQL ${postgresJs.postgresCores} cores, ${postgresJs.postgresCpuMsPerOp ?? '?'} ms CPU and ${postgresJs.statementsPerOp ?? '?'} statements per transaction`,
      );
      const pgbench = hasPgbench ? await pgbenchCeiling(svc, scriptFile, poolConnections, durationS) : null;
      if (pgbench !== null) log(`  (a) pgbench -c ${poolConnections}: ${pgbench.tps} tps`);
      results.push({ connections, poolConnections, postgresJs, pgbench });
    }
    return results;
  } finally {
    await svc.sql`DROP TABLE IF EXISTS bench_ceiling_ops, bench_ceiling_accounts`.catch(() => undefined);
    await fs.rm(scriptDir, { recursive: true, force: true });
  }
}

export type HttpCeiling = LoadFigures;

/**
 * (b) at each connection level, and at the open loop's fixed rate (null when `ratePerSecond` is
 * 0): the floor that the load generators and the HTTP stack put under the service's figures.
 */
export type HttpCeilings = { readonly levels: readonly HttpCeiling[]; readonly fixedRate: FixedRateFigures | null };

/** (b): the same requests (headers, token, body) to a server that only parses and answers JSON. */
export async function httpCeilings(
  levels: readonly number[],
  durationS: number,
  ratePerSecond: number,
  users: readonly BenchUser[],
  log: (line: string) => void,
): Promise<HttpCeilings> {
  const server = await startHttpCeilingServer();
  try {
    const requests = transferRequests(users).map((r) => ({ ...r, path: '/echo' }));
    const results: HttpCeiling[] = [];
    for (const connections of levels) {
      const load = await runLoad({ url: server.base, connections, durationS, requests });
      log(
        `  (b) Hono echo at ${connections} connections: ${load.responsesPerSecond} req/s, p99 ${load.latencyMs.p99} ms, ${load.non2xx} non-2xx`,
      );
      results.push(load);
    }
    if (ratePerSecond <= 0 || durationS <= 0) return { levels: results, fixedRate: null };
    const fixedRate = await runFixedRate({
      url: server.base,
      ratePerSecond,
      durationS,
      request: () => ({ ...randomTransfer(users), path: '/echo' }),
    });
    log(
      `  (b) Hono echo at ${ratePerSecond}/s offered: p50 ${fixedRate.latencyMs.p50} / p99 ${fixedRate.latencyMs.p99} / p99.9 ${fixedRate.latencyMs.p99_9} ms, ${fixedRate.errors} errors, send lag p99 ${fixedRate.sendLagMs.p99} ms`,
    );
    return { levels: results, fixedRate };
  } finally {
    await server.stop();
  }
}

async function startHttpCeilingServer(): Promise<{ base: string; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'bench', 'baselines', 'http-ceiling-server.js')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = registerCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /"port":(\d+)/.exec(out);
      if (m?.[1] !== undefined) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`the HTTP ceiling server exited with ${String(code)}`)));
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { base: `http://127.0.0.1:${port}`, stop };
}

/** The calls of the statements that touch the ceiling's own tables (bench_ceiling_*). */
function ceilingStatements(byStatement: readonly { readonly query: string; readonly calls: number }[]): number {
  return byStatement.filter((x) => /\bbench_ceiling_/.test(x.query)).reduce((sum, x) => sum + x.calls, 0);
}
