// What `make soak` runs: its length (SOAK_MINUTES, or SOAK_SECONDS for a short one), its rate
// (SOAK_RATE, else half of what the newest `make bench` result committed at 64 connections), how
// often it samples (SOAK_SAMPLE_S), and the processed set's retention it would ask for.

import fs from 'node:fs/promises';
import path from 'node:path';
import { ROOT } from '../support/service-child.js';

export const SOAK_MINUTES_DEFAULT = 30;
export const SOAK_SAMPLE_S_DEFAULT = 10;
/** Used only when no `make bench` result names a rate at 64 connections: about a third of this machine's usual figure. */
export const SOAK_RATE_FALLBACK_PER_SECOND = 500;
/** The bench level whose committed/s sets the default rate, and the share of it offered. */
const RATE_LEVEL_CONNECTIONS = 64;
const RATE_SHARE = 0.5;
/**
 * The processed set's retention for the soak (PROCESSED_RETENTION_S, SOAK_RETENTION_S overrides
 * it): short, so pruning runs many times in one run, and over well within the first quarter (the
 * judgements leave it out as the first retention period); a pass every SOAK_PRUNE_INTERVAL_S.
 */
export const SOAK_RETENTION_S_DEFAULT = 120;
export const SOAK_PRUNE_INTERVAL_S_DEFAULT = 5;
const SOAK_USERS = 2_000;
const SOAK_SEED_CONCURRENCY = 64;

export type SoakOptions = {
  readonly durationS: number;
  readonly ratePerSecond: number;
  /** Where the rate came from, in words, for the report. */
  readonly rateSource: string;
  readonly sampleS: number;
  readonly users: number;
  readonly seedConcurrency: number;
  /** PROCESSED_RETENTION_S and PROCESSED_PRUNE_INTERVAL_S as passed to the service. */
  readonly retentionS: number;
  readonly pruneIntervalS: number;
  readonly outDir: string;
  readonly log: (line: string) => void;
};

/** The soak `make soak` runs, from the environment. */
export async function soakOptions(env: NodeJS.ProcessEnv, log: (line: string) => void): Promise<SoakOptions> {
  const positive = (name: string, fallback: number): number => {
    const value = Number(env[name] ?? fallback);
    if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${env[name]}`);
    return value;
  };
  const durationS =
    env.SOAK_SECONDS !== undefined ? positive('SOAK_SECONDS', 0) : Math.round(positive('SOAK_MINUTES', SOAK_MINUTES_DEFAULT) * 60);
  const rate =
    env.SOAK_RATE !== undefined
      ? { perSecond: positive('SOAK_RATE', 0), source: 'SOAK_RATE' }
      : await rateFromBench(path.join(ROOT, 'bench', 'results'));
  return {
    durationS,
    ratePerSecond: rate.perSecond,
    rateSource: rate.source,
    sampleS: positive('SOAK_SAMPLE_S', SOAK_SAMPLE_S_DEFAULT),
    users: SOAK_USERS,
    seedConcurrency: SOAK_SEED_CONCURRENCY,
    retentionS: positive('SOAK_RETENTION_S', SOAK_RETENTION_S_DEFAULT),
    pruneIntervalS: positive('SOAK_PRUNE_INTERVAL_S', SOAK_PRUNE_INTERVAL_S_DEFAULT),
    outDir: path.join(ROOT, 'bench', 'results'),
    log,
  };
}

/**
 * Half of the committed/s the newest `make bench` result measured at 64 connections. Bench
 * results are named by their start time (`2026-11-27T09-49-07.534Z.json`), so the newest sorts
 * last; the soak's own `soak-*.json` are left out.
 */
export async function rateFromBench(dir: string): Promise<{ perSecond: number; source: string }> {
  const fallback = {
    perSecond: SOAK_RATE_FALLBACK_PER_SECOND,
    source: `no bench result at ${RATE_LEVEL_CONNECTIONS} connections: the fallback`,
  };
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const newestFirst = names
    .filter((n) => /^\d{4}-\d\d-\d\dT.*\.json$/.test(n))
    .sort()
    .reverse();
  for (const name of newestFirst) {
    const report = JSON.parse(await fs.readFile(path.join(dir, name), 'utf8')) as {
      levels?: { connections?: unknown; service?: { committedPerSecond?: unknown } }[];
    };
    const level = report.levels?.find((l) => l.connections === RATE_LEVEL_CONNECTIONS);
    const committed = Number(level?.service?.committedPerSecond);
    if (Number.isFinite(committed) && committed > 0)
      return {
        perSecond: Math.round(committed * RATE_SHARE),
        source: `half of ${committed} committed/s at ${RATE_LEVEL_CONNECTIONS} connections in bench/results/${name}`,
      };
  }
  return fallback;
}
