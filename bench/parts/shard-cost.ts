// More coordinator shards must not make each transfer dearer for PostgreSQL.
// The service started again with COORDINATORS=TARGETS.fourShards, loaded at the main level, and
// its PostgreSQL CPU per committed transfer set over the one-shard run's of the service phase
// (the default configuration): the target is a ratio of at most TARGETS.fourShardPgCpuRatioMax.
// A run without that level (a shortened one) compares at its last level instead, not judged.

import type { BenchOptions } from '../options.js';
import { ratio, TARGETS, type ServiceLevel, type ShardCost } from '../report/report.js';
import { costOf, serviceLevelWith } from './spot-log-cost.js';

/** `levels`: the service phase's, with one shard. Starts, loads and stops the four-shard service. */
export async function shardCost(levels: readonly ServiceLevel[], opts: BenchOptions): Promise<ShardCost> {
  const one = levels.find((l) => l.connections === TARGETS.mainConnections) ?? levels[levels.length - 1];
  if (one === undefined) throw new Error('the service phase ran no level');
  const connections = one.connections;
  const shards = TARGETS.fourShards;
  const four = await serviceLevelWith({ COORDINATORS: String(shards) }, connections, opts);
  const r =
    one.postgresCpuMsPerCommitted === null || four.postgresCpuMsPerCommitted === null
      ? null
      : ratio(four.postgresCpuMsPerCommitted, one.postgresCpuMsPerCommitted);
  return {
    connections,
    shards,
    one: costOf(one),
    four: costOf(four),
    pgCpuRatio: r,
    pgCpuRatioMax: TARGETS.fourShardPgCpuRatioMax,
    met: r === null || connections !== TARGETS.mainConnections ? null : r <= TARGETS.fourShardPgCpuRatioMax,
  };
}
