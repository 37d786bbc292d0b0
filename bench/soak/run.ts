// `make soak`: the service on a fresh DATA_DIR at a fixed rate of transfers both
// ways for SOAK_MINUTES, killed with SIGKILL once in the middle and restarted, sampled every
// SOAK_SAMPLE_S, and judged at the end: memory and UBSCore's directory flat, p99 steady, no error
// outside the restart, funds conserved, every transfer final. A measurement first: should
// UBSCore's directory grow (the processed set's retention not keeping up), the run says so,
// and its verdict fails (exit 1).

import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { runFixedRate, type FixedRateFigures } from '../load/fixed-rate.js';
import { counts, driveTransfers, randomTransfer, settle } from '../load/transfer-load.js';
import { conservationCheck } from '../meters/conservation.js';
import { machineInfo } from '../run.js';
import { cleanupAll } from '../support/cleanup.js';
import { seedUsers, type BenchUser } from '../support/seed.js';
import { startBenchService, type BenchService } from '../support/service-child.js';
import { growthPerMinute, judgeSoak } from './judge.js';
import { CALIBRATION_CONNECTIONS, CALIBRATION_S, calibratedRate, soakOptions, type SoakOptions } from './options.js';
import { sampleLine, verdict, writeSoakResults, type SoakReport, type SoakSample } from './report.js';
import { CommittedCount, readStores } from './sample.js';
import { SoakWindows } from './windows.js';

/** After the load, how long the transfers it left unfinished may take to become final. */
const SETTLE_END_MS_MAX = 120_000;

export type SoakResult = { readonly report: SoakReport; readonly files: { readonly json: string; readonly markdown: string } };

type LoadPhase = {
  readonly load: FixedRateFigures;
  readonly samples: readonly SoakSample[];
  readonly windows: SoakWindows;
  readonly restart: SoakReport['restart'];
};

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const secondsSince = (t0: number): number => Math.round((performance.now() - t0) / 100) / 10;

/** Closes the answers' window first, then reads the stores, so a slow reading never moves answers into the next window. */
async function takeSample(svc: BenchService, windows: SoakWindows, t0: number, committed: CommittedCount): Promise<SoakSample> {
  const atS = secondsSince(t0);
  const window = windows.take();
  return { atS, ...(await readStores(svc, committed)), ...window };
}

/** The SIGKILL at `atS` into the load, and the restart; the load keeps its schedule meanwhile. */
async function killInTheMiddle(
  svc: BenchService,
  windows: SoakWindows,
  t0: number,
  atS: number,
  log: (line: string) => void,
): Promise<SoakReport['restart']> {
  await sleep(t0 + atS * 1000 - performance.now());
  const at = secondsSince(t0);
  log(`t=${at}s: SIGKILL to the service (pid ${svc.pid}), then a restart on the same DATA_DIR`);
  windows.restartBegins(performance.now());
  try {
    const readyMs = await svc.killAndRestart();
    windows.restartEnds(performance.now());
    log(`t=${secondsSince(t0)}s: restarted (pid ${svc.pid}), /readyz 200 after ${readyMs} ms`);
    return { atS: at, readyMs };
  } catch (error) {
    // Every error after this counts as the steady state's: a service that does not come back fails the soak.
    windows.restartEnds(performance.now());
    log(`the restart failed: ${String(error)}`);
    return { atS: at, error: error instanceof Error ? error.message : String(error) };
  }
}

type RatedOptions = SoakOptions & { readonly ratePerSecond: number };

/** The options with their rate: SOAK_RATE's, or a share of a short closed loop's on this service (options.ts). */
async function withRate(svc: BenchService, users: readonly BenchUser[], opts: SoakOptions): Promise<RatedOptions> {
  if (opts.ratePerSecond !== null) return { ...opts, ratePerSecond: opts.ratePerSecond };
  opts.log(`calibration: a closed loop of ${CALIBRATION_CONNECTIONS} clients for ${CALIBRATION_S} s`);
  const level = await driveTransfers(svc, users, CALIBRATION_CONNECTIONS, CALIBRATION_S);
  const rate = calibratedRate(level.committedPerSecond);
  opts.log(`calibration: ${level.committedPerSecond} committed/s (p50 ${level.latencyMs.p50} ms): the soak offers ${rate.perSecond}/s`);
  return { ...opts, ratePerSecond: rate.perSecond, rateSource: rate.source };
}

async function loadPhase(svc: BenchService, users: readonly BenchUser[], opts: RatedOptions): Promise<LoadPhase> {
  const windows = new SoakWindows();
  const t0 = performance.now();
  const load = runFixedRate({
    url: svc.base,
    ratePerSecond: opts.ratePerSecond,
    durationS: opts.durationS,
    request: () => randomTransfer(users),
    onSettle: windows.onSettle,
  });
  const finished = load.then(() => true);
  const restart = killInTheMiddle(svc, windows, t0, opts.durationS / 2, opts.log);
  const samples: SoakSample[] = [];
  const committed = new CommittedCount();
  for (let k = 1; ; k++) {
    const last = await Promise.race([sleep(t0 + k * opts.sampleS * 1000 - performance.now()).then(() => false), finished]);
    const sample = await takeSample(svc, windows, t0, committed);
    samples.push(sample);
    opts.log(sampleLine(sample));
    if (last) break;
  }
  return { load: await load, samples, windows, restart: await restart };
}

/** The samples of each span: before the kill, and after the restarted service was ready. */
function growthOf(samples: readonly SoakSample[], restart: SoakReport['restart']): SoakReport['growthPerMinute'] {
  const readyAtS = restart.atS + ('readyMs' in restart ? restart.readyMs / 1000 : Number.POSITIVE_INFINITY);
  return {
    beforeKill: growthPerMinute(samples.filter((s) => s.atS < restart.atS)),
    afterRestart: growthPerMinute(samples.filter((s) => s.atS > readyAtS)),
    whole: growthPerMinute(samples),
  };
}

async function endOf(svc: BenchService, log: (line: string) => void): Promise<SoakReport['end']> {
  log('load done: waiting for every transfer to be final, then the conservation check');
  const unfinished = await settle(svc.sql, SETTLE_END_MS_MAX);
  const c = await counts(svc.sql);
  const conservation = await conservationCheck(svc.base).catch((error: unknown) => {
    log(`conservation check failed: ${String(error)}`);
    return null;
  });
  return { committed: c.committed, failed: c.failed, rolledBack: c.rolledBack, unfinished, conservation };
}

export async function runSoak(opts: SoakOptions): Promise<SoakResult> {
  const started = Date.now();
  const log = opts.log;
  const machine = await machineInfo();
  const retention = `${opts.retentionS} s (a pass every ${opts.pruneIntervalS} s)`;
  log(
    `soak: ${opts.durationS} s at ${opts.ratePerSecond === null ? 'a rate' : `${opts.ratePerSecond}/s`} (${opts.rateSource}), a sample every ${opts.sampleS} s, retention ${retention}`,
  );
  try {
    const svc = await startBenchService({
      env: { PROCESSED_RETENTION_S: String(opts.retentionS), PROCESSED_PRUNE_INTERVAL_S: String(opts.pruneIntervalS) },
    });
    try {
      log(`service pid ${svc.pid}, DATA_DIR ${svc.dataDir}; seeding ${opts.users} users on both sides`);
      const users = await seedUsers(svc, opts.users, opts.seedConcurrency);
      const rated = await withRate(svc, users, opts);
      const phase = await loadPhase(svc, users, rated);
      const end = await endOf(svc, log);
      const sum = (f: (s: SoakSample) => number): number => phase.samples.reduce((n, s) => n + f(s), 0);
      const errors = { errorsOutsideRestart: sum((s) => s.errors), errorsDuringRestart: sum((s) => s.restartErrors) };
      const judgements = judgeSoak(phase.samples, phase.windows, { ...errors, ...end }, opts.retentionS, opts.durationS);
      const { statusCodes: _codes, ...load } = phase.load;
      const report: SoakReport = {
        startedAt: new Date(started).toISOString(),
        finishedAt: new Date().toISOString(),
        elapsedS: Math.round((Date.now() - started) / 1000),
        machine,
        parameters: paramsOf(rated),
        load: { ...load, outcomes: phase.windows.outcomes, ...errors },
        restart: phase.restart,
        samples: phase.samples,
        growthPerMinute: growthOf(phase.samples, phase.restart),
        end,
        judgements,
        passed: judgements.every((j) => j.met !== false),
      };
      const files = await writeSoakResults(opts.outDir, report);
      log(`results: ${files.json} and ${files.markdown}`);
      return { report, files };
    } finally {
      await svc.stop();
    }
  } finally {
    await cleanupAll(log);
  }
}

function paramsOf(opts: RatedOptions): SoakReport['parameters'] {
  const { durationS, ratePerSecond, rateSource, sampleS, users, retentionS, pruneIntervalS } = opts;
  return { durationS, ratePerSecond, rateSource, sampleS, users, retentionS, pruneIntervalS };
}

async function main(): Promise<void> {
  const log = (line: string): void => {
    process.stdout.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
  };
  const stopOnSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping everything the soak started`);
    void cleanupAll(log).finally(() => process.exit(130));
  };
  process.once('SIGINT', stopOnSignal);
  process.once('SIGTERM', stopOnSignal);
  const { report } = await runSoak(soakOptions(process.env, log));
  for (const j of report.judgements) log(`  ${verdict(j.met).padEnd(10)}  ${j.goal}: ${j.measured}`);
  log(`soak ${report.passed ? 'passed' : 'FAILED'} in ${report.elapsedS} s`);
  process.exitCode = report.passed ? 0 : 1;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch(async (error: unknown) => {
    process.stderr.write(`soak failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    await cleanupAll((line) => process.stderr.write(`${line}\n`));
    process.exit(1);
  });
}
