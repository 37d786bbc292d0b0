// What `make bench` runs and for how long: the full run's parameters, a few of them read from the
// environment (BENCH_DURATION_S, BENCH_MEMORY_S, BENCH_PROFILE, BENCH_PROFILE_S, BENCH_FIXED_RATE,
// BENCH_REBUILD_ACCOUNTS, BENCH_REBUILD_RECORDS, BENCH_REBUILD_BLOCK_RECORDS), and where the results go.

import path from 'node:path';
import { REBUILD_BLOCK_RECORDS_DEFAULT } from './parts/rebuild-ledger.js';
import { TARGETS, type BenchParameters } from './report/report.js';
import { ROOT } from './support/service-child.js';

export type BenchOptions = BenchParameters & { readonly outDir: string; readonly log: (line: string) => void };

/** The full run `make bench` does; BENCH_DURATION_S and BENCH_MEMORY_S shorten or lengthen it. */
export function defaultOptions(env: NodeJS.ProcessEnv, log: (line: string) => void): BenchOptions {
  const seconds = (name: string, fallback: number): number => {
    const value = Number(env[name] ?? fallback);
    if (!Number.isFinite(value) || value < 0) throw new Error(`${name} must be a number of seconds, got ${env[name]}`);
    return value;
  };
  const profile = env.BENCH_PROFILE === '1' ? 'always' : env.BENCH_PROFILE === '0' ? 'never' : 'auto';
  const count = (name: string, fallback: number): number => {
    const value = Number(env[name] ?? fallback);
    if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a whole number, got ${env[name]}`);
    return value;
  };
  const rate = Number(env.BENCH_FIXED_RATE ?? TARGETS.fixedRatePerSecond);
  if (!Number.isFinite(rate) || rate < 0)
    throw new Error(`BENCH_FIXED_RATE must be a number of transfers per second, got ${env.BENCH_FIXED_RATE}`);
  return {
    levels: [16, 64, 256],
    durationS: seconds('BENCH_DURATION_S', 15),
    warmupS: 3,
    memoryS: seconds('BENCH_MEMORY_S', 60),
    users: 2_000,
    seedConcurrency: 64,
    ubsCommands: 200_000,
    ubsInFlight: 8_192,
    ubsWarmupCommands: 50_000,
    restart: { accounts: 1_000_000, records: 1_000_000 },
    recovery: { stuck: 100_000, deadlineMs: 60_000 },
    // BENCH_REBUILD_ACCOUNTS=0 skips (g).
    rebuild:
      count('BENCH_REBUILD_ACCOUNTS', TARGETS.rebuildAccounts) === 0
        ? null
        : {
            accounts: count('BENCH_REBUILD_ACCOUNTS', TARGETS.rebuildAccounts),
            records: count('BENCH_REBUILD_RECORDS', TARGETS.rebuildRecords),
            blockRecords: count('BENCH_REBUILD_BLOCK_RECORDS', REBUILD_BLOCK_RECORDS_DEFAULT),
          },
    profile,
    profileS: seconds('BENCH_PROFILE_S', 15),
    fixedRatePerSecond: rate,
    outDir: path.join(ROOT, 'bench', 'results'),
    log,
  };
}

export function paramsOf(opts: BenchOptions): BenchParameters {
  const { outDir: _outDir, log: _log, ...params } = opts;
  return params;
}
