// The benchmark's report: its shape, the targets judged from measured figures only, and the two
// files a run leaves (the full JSON and a short markdown summary).

import fs from 'node:fs/promises';
import path from 'node:path';
import type { HttpCeiling, HttpCeilings, PgCeiling } from '../baselines/ceilings.js';
import type { RestartFigures } from '../parts/ubscore-restart-run.js';
import type { ThreadProfile } from '../meters/cpu-profile.js';
import type { CpuShares } from '../meters/cpu-share.js';
import type { MemoryFigures } from '../meters/memory.js';
import type { RecoveryReport } from '../parts/recovery.js';
import type { FixedRateLevel, TransferLevel } from '../load/transfer-load.js';
import type { UbsThroughput } from '../parts/ubscore-throughput.js';
import type { ChainLevel } from '../baselines/chain-alone.js';
import type { BatchPlans } from '../parts/explain-batch.js';
import type { DiskUse } from '../meters/disk-use.js';
import type { RebuildFigures } from '../parts/rebuild.js';
import type { StandbyLagFigures } from '../parts/standby-lag.js';
import { REBUILD_ACCOUNTS, REBUILD_MS_MAX, REBUILD_RECORDS } from '../parts/rebuild-ledger.js';

/** A part of the run: measured, deliberately skipped (with why), or failed (with the error). */
export type Part<T> =
  | { readonly status: 'measured'; readonly figures: T }
  | { readonly status: 'skipped'; readonly reason: string }
  | { readonly status: 'failed'; readonly error: string };

/** One closed-loop level: autocannon's figures and what the window cost, per committed transfer. */
export type ServiceLevel = TransferLevel;

/** The open-loop run: requests offered at a fixed rate, measured the same way. */
export type FixedRateRun = FixedRateLevel;

export type LevelRow = {
  readonly connections: number;
  readonly service: ServiceLevel;
  readonly pg: PgCeiling | null;
  readonly http: HttpCeiling | null;
  /** Committed transfers/s over baseline (a) through postgres.js at the same concurrency. */
  readonly ratioToPostgresJs: number | null;
  /** The same over pgbench's tps with the same script. */
  readonly ratioToPgbench: number | null;
  /** Committed transfers/s over baseline (b)'s answers/s at the same concurrency (reported, not a target). */
  readonly ratioToHttp: number | null;
  /** PostgreSQL CPU per committed transfer over baseline (a)'s per transaction. */
  readonly pgCpuRatioToPostgresJs: number | null;
  /** The whole machine's CPU (service, PostgreSQL, load generator, the rest) per committed transfer, ms. */
  readonly machineCpuMsPerCommitted: number | null;
};

export type Conservation = {
  readonly ok: boolean;
  readonly differences: number;
  readonly accountsChecked: number;
  readonly transfersExamined: number;
  readonly walSeq: number;
  readonly halted: boolean;
};

export type MemoryRun = MemoryFigures & {
  readonly connections: number;
  readonly committedPerSecond: number;
  readonly latencyP99Ms: number;
};

export type ProfileRun = {
  readonly connections: number;
  readonly durationS: number;
  readonly committedPerSecond: number;
  readonly cpu: CpuShares;
  readonly threads: readonly ThreadProfile[];
};

export type Target = {
  readonly id: string;
  readonly goal: string;
  readonly measured: string;
  /** Measured over goal, oriented so that 1 or more means met. */
  readonly ratio: number | null;
  /** null when the run did not measure it. */
  readonly met: boolean | null;
};

export type BenchParameters = {
  readonly levels: readonly number[];
  readonly durationS: number;
  readonly warmupS: number;
  readonly memoryS: number;
  readonly users: number;
  readonly seedConcurrency: number;
  readonly ubsCommands: number;
  readonly ubsInFlight: number;
  /** Commands UBSCore alone answers before the timed ones (JIT warm-up, as `warmupS` is for the service). */
  readonly ubsWarmupCommands: number;
  readonly restart: { readonly accounts: number; readonly records: number } | null;
  readonly recovery: { readonly stuck: number; readonly deadlineMs: number } | null;
  /** (g): the SPOT ledger rebuilt from PostgreSQL into an empty DATA_DIR (bench/parts/rebuild.ts). */
  readonly rebuild: { readonly accounts: number; readonly records: number; readonly blockRecords: number } | null;
  readonly profile: 'auto' | 'always' | 'never';
  readonly profileS: number;
  /** Transfers offered per second in the open-loop run (for `durationS`); 0 skips it. */
  readonly fixedRatePerSecond: number;
};

/** One level's figures beside another run's: with or without the PostgreSQL log, with one shard or four. */
export type LevelCost = {
  readonly committedPerSecond: number;
  readonly latencyP99Ms: number;
  readonly pgWriteTxnsPerCommitted: number | null;
  readonly postgresCpuMsPerCommitted: number | null;
  readonly serviceCpuMsPerCommitted: number | null;
};

export type SpotLogCost = {
  readonly connections: number;
  readonly postgres: LevelCost;
  readonly off: LevelCost;
  /** postgres committed/s over off's. */
  readonly ratio: number | null;
  readonly ratioMin: number;
  readonly met: boolean | null;
};

/** More shards must not make each transfer dearer for PostgreSQL (bench/parts/shard-cost.ts): the main level with COORDINATORS=TARGETS.fourShards beside one shard's. */
export type ShardCost = {
  readonly connections: number;
  readonly shards: number;
  readonly one: LevelCost;
  readonly four: LevelCost;
  /** Four shards' PostgreSQL CPU per committed transfer over one shard's. */
  readonly pgCpuRatio: number | null;
  readonly pgCpuRatioMax: number;
  readonly met: boolean | null;
};

export type BenchReport = {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly elapsedS: number;
  readonly machine: {
    readonly cpus: number;
    readonly node: string;
    readonly commit: string;
    readonly platform: string;
    readonly loadAverageAtStart: readonly number[];
  };
  readonly parameters: BenchParameters;
  readonly levels: readonly LevelRow[];
  readonly fixedRate: Part<FixedRateRun>;
  readonly memory: Part<MemoryRun>;
  readonly conservation: Part<Conservation>;
  /** Disk bytes of UBSCore's LMDB parts per million committed transfers, after the load levels. */
  readonly disk: Part<DiskUse>;
  readonly pgCeiling: Part<readonly PgCeiling[]>;
  readonly httpCeiling: Part<HttpCeilings>;
  readonly ubscore: Part<UbsThroughput>;
  /** (f): the transfer's three durable commits alone, at each level (bench/baselines/chain-alone.ts). */
  readonly chain: Part<readonly ChainLevel[]>;
  /** One creating and one completing batch of the writer, every statement inside it explained (bench/parts/explain-batch.ts). */
  readonly batchPlans?: Part<BatchPlans>;
  readonly restart: Part<RestartFigures>;
  readonly recovery: Part<RecoveryReport>;
  /** Committed/s at the main level with UBSCore's log in PostgreSQL and without it (bench/parts/spot-log-cost.ts). */
  readonly spotLog: Part<SpotLogCost>;
  /** The main level with four coordinator shards, beside the one-shard run's (bench/parts/shard-cost.ts). */
  readonly shards: Part<ShardCost>;
  /** A ROLE=standby process's lag behind the service during the memory run (bench/parts/standby-lag.ts). */
  readonly standby: Part<StandbyLagFigures>;
  readonly rebuild: Part<RebuildFigures>;
  readonly profile: Part<ProfileRun>;
  readonly targets: readonly Target[];
  readonly bottleneck: readonly string[];
};

export const TARGETS = {
  /** The level most targets are judged at. */
  mainConnections: 64,
  /** Committed/s over baseline (a) at the main level. */
  pgRatioMinMain: 0.8,
  /** Committed/s over (a) at the other levels (16: 0.35, 256: 1.1); a level not named here, 0.8. */
  pgRatioMinAt: { 16: 0.35, 256: 1.1 } as Readonly<Record<number, number>>,
  pgRatioMinOther: 0.8,
  /** At `lightConnections`, where latency matters more than throughput: p50. */
  lightConnections: 16,
  lightP50MsMax: 7,
  /** COORDINATORS for the shard comparison, and its bound on PostgreSQL CPU per transfer over one shard's (reported with it, not a target of the table). */
  fourShards: 4,
  fourShardPgCpuRatioMax: 1.2,
  /** Open loop: p99 at this offered rate. */
  fixedRatePerSecond: 1_000,
  fixedRateP99MsMax: 20,
  /** PostgreSQL CPU per committed transfer at the main level, behind HTTP and in (f), the chain alone (its loops started together). */
  pgCpuMsPerTransferMax: 0.13,
  chainPgCpuMsPerTransferMax: 0.09,
  /** PostgreSQL's tables and indexes, grown over the load levels, per million committed transfers. */
  pgMiBPerMillionTransfersMax: 500,
  ubsCommandsPerSecondMin: 200_000,
  restartMsMax: 5_000,
  recoveryMsMax: 15_000,
  /** (g): an empty DATA_DIR rebuilt from PostgreSQL and UBSCore opened on it, at 1M accounts + 1M records. */
  rebuildMsMax: REBUILD_MS_MAX,
  rebuildAccounts: REBUILD_ACCOUNTS,
  rebuildRecords: REBUILD_RECORDS,
} as const;

export function ratio(a: number, b: number | null | undefined): number | null {
  return b === null || b === undefined || b <= 0 ? null : Math.round((a / b) * 1000) / 1000;
}

export function figuresOf<T>(part: Part<T>): T | null {
  return part.status === 'measured' ? part.figures : null;
}

/** Writes `<ISO timestamp>.json` and overwrites `summary.md` in `outDir`; answers both paths. */
export async function writeResults(outDir: string, report: BenchReport, summary: string): Promise<{ json: string; summary: string }> {
  await fs.mkdir(outDir, { recursive: true });
  // Colons are legal on Linux but not on every file system a clone may land on.
  const json = path.join(outDir, `${report.startedAt.replace(/:/g, '-')}.json`);
  await fs.writeFile(json, `${JSON.stringify(report, null, 2)}\n`);
  const md = path.join(outDir, 'summary.md');
  await fs.writeFile(md, summary);
  return { json, summary: md };
}
