// The cost bound: committed transfers/s at the main level with UBSCore's log in PostgreSQL
// (SPOT_LOG=postgres, the default: the service phase's own level) against a service started the
// same way, in the same run, with SPOT_LOG=off (LMDB only). The target is a ratio of at least
// SPOT_LOG_RATIO_MIN; beside it, what the log costs PostgreSQL per committed transfer.

import { runLoad } from '../load/closed-loop.js';
import { driveTransfers, transferRequests } from '../load/transfer-load.js';
import type { BenchOptions } from '../options.js';
import { ratio, TARGETS, type ServiceLevel, type SpotLogCost, type LevelCost } from '../report/report.js';
import { seedUsers } from '../support/seed.js';
import { startBenchService } from '../support/service-child.js';

/** With the log on, at least this share of the committed/s without it. */
export const SPOT_LOG_RATIO_MIN = 0.85;

export function costOf(level: ServiceLevel): LevelCost {
  return {
    committedPerSecond: level.committedPerSecond,
    latencyP99Ms: level.latencyMs.p99,
    pgWriteTxnsPerCommitted: level.pgWriteTxnsPerCommitted,
    postgresCpuMsPerCommitted: level.postgresCpuMsPerCommitted,
    serviceCpuMsPerCommitted: level.serviceCpuMsPerCommitted,
  };
}

/**
 * The service started again on a fresh DATA_DIR with `env` over the defaults, seeded and warmed
 * as in the service phase, and loaded at `connections` for the phase's duration; stopped after.
 * pg_stat_statements is on as in the service phase, so both runs pay the same for being counted.
 */
export async function serviceLevelWith(
  env: Readonly<Record<string, string>>,
  connections: number,
  opts: BenchOptions,
): Promise<ServiceLevel> {
  const svc = await startBenchService({ statementStats: true, env });
  try {
    const users = await seedUsers(svc, opts.users, opts.seedConcurrency);
    if (opts.warmupS > 0) await runLoad({ url: svc.base, connections, durationS: opts.warmupS, requests: transferRequests(users) });
    return await driveTransfers(svc, users, connections, opts.durationS);
  } finally {
    await svc.stop();
  }
}

/** `withLog`: the service phase's level at TARGETS.mainConnections. Starts, loads and stops the SPOT_LOG=off service. */
export async function spotLogCost(withLog: ServiceLevel | undefined, opts: BenchOptions): Promise<SpotLogCost> {
  const connections = TARGETS.mainConnections;
  if (withLog === undefined) throw new Error(`the service phase ran no level at ${connections} connections (BENCH_LEVELS)`);
  const off = await serviceLevelWith({ SPOT_LOG: 'off' }, connections, opts);
  const r = ratio(withLog.committedPerSecond, off.committedPerSecond);
  return {
    connections,
    postgres: costOf(withLog),
    off: costOf(off),
    ratio: r,
    ratioMin: SPOT_LOG_RATIO_MIN,
    met: r === null ? null : r >= SPOT_LOG_RATIO_MIN,
  };
}
