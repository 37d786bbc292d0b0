// What `make soak` runs: its length (SOAK_MINUTES, or SOAK_SECONDS for a short one), its rate
// (SOAK_RATE, else a share of what the service commits on this machine in a short closed loop
// measured first), how often it samples (SOAK_SAMPLE_S), and the processed set's retention it
// would ask for.

import path from 'node:path';
import { ROOT } from '../support/service-child.js';

export const SOAK_MINUTES_DEFAULT = 30;
export const SOAK_SAMPLE_S_DEFAULT = 10;
/**
 * Without SOAK_RATE the soak measures the machine it runs on before its load: a closed loop of
 * CALIBRATION_CONNECTIONS clients for CALIBRATION_S, and offers RATE_SHARE of what that committed
 * per second. A rate taken from a bench result recorded elsewhere overloads a slower machine (a
 * CI runner committed 1,100/s where this one commits 3,200/s at 64 connections): the open loop's
 * queue then grows without end, and the soak judges a backlog instead of the service. An open
 * loop batches less than a closed loop of 64 and costs more per transfer, hence a third.
 */
export const CALIBRATION_CONNECTIONS = 64;
export const CALIBRATION_S = 10;
export const RATE_SHARE = 1 / 3;
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
  /** The offered rate, or null: measured on this machine first (`calibratedRate`). */
  readonly ratePerSecond: number | null;
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
export function soakOptions(env: NodeJS.ProcessEnv, log: (line: string) => void): SoakOptions {
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
      : { perSecond: null, source: 'measured on this machine first' };
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

/** The rate offered after a calibration that committed `committedPerSecond`, and its source in words. */
export function calibratedRate(committedPerSecond: number): { perSecond: number; source: string } {
  if (!Number.isFinite(committedPerSecond) || committedPerSecond <= 0)
    throw new Error(`the calibration committed nothing (${committedPerSecond}/s): the service cannot take load`);
  return {
    perSecond: Math.max(1, Math.round(committedPerSecond * RATE_SHARE)),
    source: `a third of ${committedPerSecond} committed/s in a ${CALIBRATION_S} s closed loop of ${CALIBRATION_CONNECTIONS} clients on this machine`,
  };
}
