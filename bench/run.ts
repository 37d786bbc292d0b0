// `make bench`: the service's throughput, latency and memory under load side by side with the
// machine's limits measured in the same run (PostgreSQL, HTTP, UBSCore alone, restart, recovery),
// the conservation check at the end, and a profile naming the bottleneck when a target is missed.
// Writes bench/results/<ISO timestamp>.json and bench/results/summary.md.

import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { httpCeilings, pgCeilings, type HttpCeiling, type PgCeiling } from './baselines/ceilings.js';
import { benchRestart, type RestartFigures } from './parts/ubscore-restart-run.js';
import { benchChain, type ChainLevel } from './baselines/chain-alone.js';
import { cleanupAll } from './support/cleanup.js';
import { conservationCheck } from './meters/conservation.js';
import { measureDiskUse, type DiskUse } from './meters/disk-use.js';
import { readPg } from './meters/pg-growth.js';
import { monotonicUs, summariseProfiles } from './meters/cpu-profile.js';
import { runLoad } from './load/closed-loop.js';
import { memoryRun } from './parts/memory-run.js';
import { standbyLine, withStandby, type StandbyLagFigures } from './parts/standby-lag.js';
import { benchRecovery, type RecoveryReport } from './parts/recovery.js';
import { benchRebuild, rebuildLine, type RebuildFigures } from './parts/rebuild.js';
import { explainBatch, type BatchPlans } from './parts/explain-batch.js';
import {
  figuresOf,
  ratio,
  TARGETS,
  writeResults,
  type BenchReport,
  type Conservation,
  type FixedRateRun,
  type LevelRow,
  type MemoryRun,
  type Part,
  type ProfileRun,
  type ServiceLevel,
} from './report/report.js';
import { defaultOptions, paramsOf, type BenchOptions } from './options.js';
import { seedUsers, type BenchUser } from './support/seed.js';
import { pgUrl, ROOT, startBenchService, type BenchService } from './support/service-child.js';
import { renderSummary } from './report/summary.js';
import { bottleneckLines, judgeTargets, serviceTargetMissed } from './report/targets.js';
import { driveFixedRate, driveTransfers, transferRequests } from './load/transfer-load.js';
import { benchUbsCore } from './parts/ubscore-throughput.js';
import { spotLogCost } from './parts/spot-log-cost.js';
import { shardCost } from './parts/shard-cost.js';

const run = promisify(execFile);
const PROFILE_CONNECTIONS = 64;
/** The batch explained: about the mean batch of the writer at 64 connections (12 to 18 items in the runs of bench/README.md). */
const EXPLAIN_BATCH_ITEMS = 15;

export type BenchResult = { readonly report: BenchReport; readonly files: { readonly json: string; readonly summary: string } };

async function attempt<T>(what: string, log: (line: string) => void, fn: () => Promise<T>): Promise<Part<T>> {
  try {
    return { status: 'measured', figures: await fn() };
  } catch (error) {
    const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
    log(`${what} failed: ${message}`);
    return { status: 'failed', error: message };
  }
}

export async function machineInfo(): Promise<BenchReport['machine']> {
  const commit = await run('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).then(
    (r) => r.stdout.trim(),
    () => 'unknown',
  );
  return {
    cpus: os.availableParallelism(),
    node: process.version,
    commit,
    platform: `${os.platform()} ${os.arch()}`,
    loadAverageAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
  };
}

type ServicePhase = {
  users: BenchUser[];
  service: ServiceLevel[];
  fixedRate: Part<FixedRateRun>;
  disk: Part<DiskUse>;
  memory: Part<MemoryRun>;
  standby: Part<StandbyLagFigures>;
  conservation: Part<Conservation>;
  pgCeiling: Part<readonly PgCeiling[]>;
  chain: Part<readonly ChainLevel[]>;
  batchPlans: Part<BatchPlans>;
  rebuild: Part<RebuildFigures>;
};

async function fixedRateRun(
  svc: BenchService,
  users: readonly BenchUser[],
  ratePerSecond: number,
  durationS: number,
  log: (line: string) => void,
): Promise<FixedRateRun> {
  log(`fixed rate: ${ratePerSecond} transfers/s offered for ${durationS} s (open loop)`);
  const run = await driveFixedRate(svc, users, ratePerSecond, durationS);
  log(
    `  fixed rate: ${run.achievedPerSecond}/s answered 2xx, ${run.committedPerSecond} committed/s, p50 ${run.latencyMs.p50} / p99 ${run.latencyMs.p99} / p99.9 ${run.latencyMs.p99_9} ms, ${run.errors} errors, ${run.non2xx} non-2xx, send lag p99 ${run.sendLagMs.p99} ms`,
  );
  return run;
}

async function servicePhase(opts: BenchOptions): Promise<ServicePhase> {
  const log = opts.log;
  log('starting the service on a fresh DATA_DIR with its embedded PostgreSQL');
  // pg_stat_statements counts the service's statements; loading it restarts the service once.
  const svc = await startBenchService({ statementStats: true });
  try {
    const users = await timed(log, `seeding ${opts.users} users on both sides`, () => seedUsers(svc, opts.users, opts.seedConcurrency));
    // PostgreSQL's relations before any transfer: the disk reading after the levels is their growth.
    const pgBefore = await readPg(svc.sql);
    if (opts.warmupS > 0)
      await runLoad({ url: svc.base, connections: opts.levels[0] ?? 16, durationS: opts.warmupS, requests: transferRequests(users) });
    const service: ServiceLevel[] = [];
    for (const connections of opts.levels) {
      const level = await driveTransfers(svc, users, connections, opts.durationS);
      log(
        `  service at ${connections} connections: ${level.committedPerSecond} committed/s, p50 ${level.latencyMs.p50} / p99 ${level.latencyMs.p99} / p99.9 ${level.latencyMs.p99_9} ms, ${level.errors} errors, ${level.non2xx} non-2xx; ` +
          `per transfer: ${level.pgWriteTxnsPerCommitted ?? '?'} write txns, ${level.pgStatementsPerCommitted ?? '?'} statements, PostgreSQL ${level.postgresCpuMsPerCommitted ?? '?'} ms CPU, service ${level.serviceCpuMsPerCommitted ?? '?'} ms CPU`,
      );
      service.push(level);
    }
    const fixedRate =
      opts.fixedRatePerSecond > 0 && opts.durationS > 0
        ? await attempt('fixed-rate run', log, () => fixedRateRun(svc, users, opts.fixedRatePerSecond, opts.durationS, log))
        : skipped<FixedRateRun>(opts.durationS > 0 ? 'BENCH_FIXED_RATE=0' : 'BENCH_DURATION_S=0');
    // A standby follows the service's log during the memory run, and is stopped before the service.
    const { load: memory, standby } =
      opts.memoryS > 0
        ? await withStandby(svc, () => attempt('memory run', log, () => memoryRun(svc, users, opts.memoryS, log)), log)
        : {
            load: skipped<MemoryRun>('BENCH_MEMORY_S=0'),
            standby: skipped<StandbyLagFigures>('BENCH_MEMORY_S=0: it follows during the memory run'),
          };
    if (standby.status === 'measured') log(standbyLine(standby.figures));
    // After the levels: the disk the WAL, the processed set and snapshots took for what committed.
    const disk = await attempt('disk use', log, () => measureDiskUse(svc, pgBefore));
    if (disk.status === 'measured') {
      log(
        `  disk per million committed transfers (bytes): ${JSON.stringify(disk.figures.perMillionTransfers)}; ${disk.figures.committed} committed`,
      );
      log(`  PostgreSQL growth per million committed transfers (bytes): ${JSON.stringify(disk.figures.postgres)}`);
    }
    const conservation = await attempt('conservation check', log, () => conservationCheck(svc.base));
    log(`conservation: ${JSON.stringify(figuresOf(conservation))}`);
    log('(a) PostgreSQL ceiling on the same server, the service idle');
    const pgCeiling = await attempt('(a) PostgreSQL ceiling', log, () => pgCeilings(svc, opts.levels, opts.durationS, opts.users, log));
    log("(f) the transfer's chain alone: the service's PostgreSQL writer and a UBSCore of its own, no HTTP, no coordinator thread");
    const chain = await attempt('(f) chain alone', log, () => benchChain(svc, opts.levels, opts.durationS, opts.users, log));
    log(`one batch of ${EXPLAIN_BATCH_ITEMS} transfers explained (auto_explain, rolled back)`);
    const batchPlans = await attempt('one batch explained', log, () => explainBatch(svc, EXPLAIN_BATCH_ITEMS));
    const rebuild = await rebuildPart(svc, opts);
    return { users, service, fixedRate, disk, memory, standby, conservation, pgCeiling, chain, batchPlans, rebuild };
  } finally {
    log('stopping the service (SIGTERM: HTTP, coordinators, UBSCore, PostgreSQL)');
    await svc.stop();
  }
}

function skipped<T>(reason: string): Part<T> {
  return { status: 'skipped', reason };
}

async function timed<T>(log: (line: string) => void, what: string, fn: () => Promise<T>): Promise<T> {
  const started = Date.now();
  log(`${what}…`);
  const result = await fn();
  log(`  ${what}: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return result;
}

/**
 * The service again, as `node --cpu-prof`, loaded at PROFILE_CONNECTIONS for `profileS`; only the
 * samples of the load window are counted. A run of its own, so profiling never slows the
 * measured figures.
 */
async function profileRun(opts: BenchOptions): Promise<ProfileRun> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-cpu-prof-'));
  await fs.chmod(dir, 0o755);
  try {
    opts.log(`profile: the service under --cpu-prof, ${opts.profileS} s at ${PROFILE_CONNECTIONS} connections`);
    const svc = await startBenchService({ cpuProfileDir: dir });
    let level: ServiceLevel;
    let window: { fromUs: number; toUs: number };
    try {
      const users = await seedUsers(svc, opts.users, opts.seedConcurrency);
      if (opts.warmupS > 0)
        await runLoad({ url: svc.base, connections: PROFILE_CONNECTIONS, durationS: opts.warmupS, requests: transferRequests(users) });
      const fromUs = monotonicUs();
      level = await driveTransfers(svc, users, PROFILE_CONNECTIONS, opts.profileS);
      window = { fromUs, toUs: monotonicUs() };
    } finally {
      // The profiles are written as each thread exits, so the service must stop before they are read.
      await svc.stop();
    }
    const threads = await summariseProfiles(dir, window);
    if (threads.length === 0) throw new Error('the service wrote no CPU profile');
    return {
      connections: PROFILE_CONNECTIONS,
      durationS: opts.profileS,
      committedPerSecond: level.committedPerSecond,
      cpu: level.cpu,
      threads,
    };
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

function levelRows(service: readonly ServiceLevel[], pg: readonly PgCeiling[] | null, http: readonly HttpCeiling[] | null): LevelRow[] {
  return service.map((s) => {
    const p = pg?.find((x) => x.connections === s.connections) ?? null;
    const h = http?.find((x) => x.connections === s.connections) ?? null;
    return {
      connections: s.connections,
      service: s,
      pg: p,
      http: h,
      ratioToPostgresJs: ratio(s.committedPerSecond, p?.postgresJs.perSecond),
      ratioToPgbench: ratio(s.committedPerSecond, p?.pgbench?.tps),
      ratioToHttp: ratio(s.committedPerSecond, h?.responsesPerSecond),
      pgCpuRatioToPostgresJs:
        s.postgresCpuMsPerCommitted === null ? null : ratio(s.postgresCpuMsPerCommitted, p?.postgresJs.postgresCpuMsPerOp),
      machineCpuMsPerCommitted: ratio(s.cpu.machineCpuS * 1000, s.committed),
    };
  });
}

/** (d), when asked for: UBSCore's restart on a large snapshot and WAL, in a child. */
async function restartPart(opts: BenchOptions): Promise<Part<RestartFigures>> {
  const log = opts.log;
  const restartOpts = opts.restart;
  const restart =
    restartOpts === null
      ? skipped<never>('not asked for')
      : await attempt('(d) restart', log, () =>
          timed(log, `(d) UBSCore restart, ${restartOpts.accounts} accounts + ${restartOpts.records} WAL records`, () =>
            benchRestart(restartOpts.accounts, restartOpts.records),
          ),
        );
  if (restart.status === 'measured')
    log(
      `  (d) restart ${restart.figures.totalRestartMs} ms (snapshot load ${restart.figures.snapshotLoadMs} ms, replay ${restart.figures.replayMs} ms)`,
    );
  return restart;
}

/** (e), when asked for: the real service's start-up recovery of many stuck transfers. */
async function recoveryPart(opts: BenchOptions): Promise<Part<RecoveryReport>> {
  const log = opts.log;
  const recoveryOpts = opts.recovery;
  const recovery =
    recoveryOpts === null
      ? skipped<never>('not asked for')
      : await attempt('(e) recovery', log, () =>
          timed(log, `(e) start-up recovery of ${recoveryOpts.stuck} stuck transfers (deadline ${recoveryOpts.deadlineMs} ms)`, () =>
            benchRecovery(recoveryOpts.stuck, recoveryOpts.deadlineMs),
          ),
        );
  if (recovery.status === 'measured') log(`  (e) ${JSON.stringify(recovery.figures)}`);
  return recovery;
}

/** (g), when asked for: the SPOT ledger rebuilt from a fresh database of the service's PostgreSQL, idle by then. */
async function rebuildPart(svc: BenchService, opts: BenchOptions): Promise<Part<RebuildFigures>> {
  const shape = opts.rebuild;
  if (shape === null) return skipped('not asked for');
  const server = { admin: svc.sql, urlOf: (database: string) => pgUrl(svc.pgPort, svc.pgPassword, { database }) };
  const what = `(g) SPOT ledger rebuilt from PostgreSQL into an empty DATA_DIR, ${shape.accounts} accounts + ${shape.records} records`;
  const rebuild = await attempt('(g) rebuild', opts.log, () => timed(opts.log, what, () => benchRebuild(server, shape, opts.log)));
  if (rebuild.status === 'measured') opts.log(rebuildLine(rebuild.figures));
  return rebuild;
}

/** Runs everything, writes the JSON and the summary into `opts.outDir`, and cleans up even on failure. */
export async function runBench(opts: BenchOptions): Promise<BenchResult> {
  const started = Date.now();
  const startedAt = new Date(started).toISOString();
  const log = opts.log;
  const machine = await machineInfo();
  log(`bench: ${machine.cpus} CPUs, Node ${machine.node}, commit ${machine.commit}, load average ${machine.loadAverageAtStart.join(' ')}`);
  try {
    const phase = await servicePhase(opts);
    log('(b) HTTP ceiling: Hono + @hono/node-server, trivial JSON POST');
    const httpCeiling = await attempt('(b) HTTP ceiling', log, () =>
      httpCeilings(opts.levels, opts.durationS, opts.fixedRatePerSecond, phase.users, log),
    );
    log(
      `(c) UBSCore alone: ${opts.ubsCommands} EXTERNAL_DEPOSIT commands, ${opts.ubsInFlight} in flight, after ${opts.ubsWarmupCommands} not timed`,
    );
    const ubscore = await attempt('(c) UBSCore alone', log, () => benchUbsCore(opts.ubsCommands, opts.ubsInFlight, opts.ubsWarmupCommands));
    log(`  (c) ${JSON.stringify(figuresOf(ubscore))}`);
    const restart = await restartPart(opts);
    const recovery = await recoveryPart(opts);
    log(`SPOT_LOG=off: the service again without UBSCore's PostgreSQL log, ${TARGETS.mainConnections} connections`);
    const withLog = phase.service.find((level) => level.connections === TARGETS.mainConnections);
    const spotLog = await attempt('SPOT_LOG comparison', log, () => spotLogCost(withLog, opts));
    log(`  SPOT_LOG postgres over off: ${JSON.stringify(figuresOf(spotLog))}`);
    log(`COORDINATORS=${TARGETS.fourShards}: the service again with that many shards, ${TARGETS.mainConnections} connections`);
    const shards = await attempt('four-shard comparison', log, () => shardCost(phase.service, opts));
    log(`  ${TARGETS.fourShards} shards over one: ${JSON.stringify(figuresOf(shards))}`);
    const levels = levelRows(phase.service, figuresOf(phase.pgCeiling), figuresOf(httpCeiling)?.levels ?? null);
    const judged = {
      levels,
      fixedRate: phase.fixedRate,
      memory: phase.memory,
      conservation: phase.conservation,
      ubscore,
      restart,
      recovery,
      rebuild: phase.rebuild,
      shards,
      chain: phase.chain,
      disk: phase.disk,
    };
    const targets = judgeTargets(judged);
    const wantProfile = opts.profile === 'always' || (opts.profile === 'auto' && serviceTargetMissed(targets));
    const profile = wantProfile
      ? await attempt('profile', log, () => profileRun(opts))
      : skipped<ProfileRun>(opts.profile === 'never' ? 'BENCH_PROFILE=0' : 'every service target met');
    const finished = Date.now();
    const partial = {
      startedAt,
      finishedAt: new Date(finished).toISOString(),
      elapsedS: Math.round((finished - started) / 1000),
      machine,
      parameters: paramsOf(opts),
      ...judged,
      pgCeiling: phase.pgCeiling,
      batchPlans: phase.batchPlans,
      spotLog,
      standby: phase.standby,
      httpCeiling,
      profile,
      targets,
    };
    const report: BenchReport = { ...partial, bottleneck: bottleneckLines(partial) };
    const files = await writeResults(opts.outDir, report, renderSummary(report));
    log(`results: ${files.json} and ${files.summary}`);
    return { report, files };
  } finally {
    await cleanupAll(log);
  }
}

/** Set once a signal asked the bench to stop: the exit code is then 130 whatever else fails. */
let interrupted = false;

async function main(): Promise<void> {
  const log = (line: string): void => {
    process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  };
  const stopOnSignal = (signal: NodeJS.Signals): void => {
    interrupted = true;
    log(`${signal}: stopping everything the bench started`);
    void cleanupAll(log).finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  const { report } = await runBench(defaultOptions(process.env, log));
  log(`done in ${report.elapsedS} s`);
  for (const t of report.targets) log(`  ${t.met === null ? 'n/a    ' : t.met ? 'met    ' : 'NOT met'}  ${t.goal}: ${t.measured}`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch(async (error: unknown) => {
    if (!interrupted) process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanupAll((line) => process.stderr.write(`${line}\n`));
    process.exit(interrupted ? 130 : 1);
  });
}
