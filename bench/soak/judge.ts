// The soak's verdict and its growth rates. Flat is judged as the memory run
// judges it (bench/meters/memory.ts): the last quarter's mean at most 10 % above the second
// quarter's, the first quarter left out as warm-up (and, with the retention built, as the first
// retention period). The p99 of the last quarter's answers may be at most 1.5 × the second's.
// All three are judged only in runs long enough for the restarted process to level.

import { memoryFigures, MEMORY_FLAT_GROWTH_MAX } from '../meters/memory.js';
import type { Conservation } from '../report/report.js';
import { toMiB } from './sample.js';
import type { SoakWindows } from './windows.js';
import type { GrowthRates, Judgement, SoakSample } from './report.js';

/** The last quarter's p99 over the second quarter's, at most. */
export const P99_GROWTH_MAX = 1.5;
/**
 * The shortest run whose memory, directory and p99 are judged. Memory and the directory ramp for
 * minutes before they level: V8's heap, and UBSCore's LMDB file, which holds the WAL until a
 * snapshot every UBS_SNAPSHOT_EVERY_RECORDS (100,000: five minutes at 340/s) lets it be pruned.
 * The restarted process ramps again, so in a 3-minute run the last quarter is a process 45 to 90
 * s old set against one that had levelled: a verdict on warm-up, not on growth. Its answers are
 * slower meanwhile too: two 3-minute CI runs on 2 cores had last-quarter p99s of 82 to 102 ms and
 * 33 to 289 ms per 10 s sample against 35 to 72 and 39 to 90 before the kill, the file growing
 * after the restart (6.3 to 8.5 MiB; 9.4 to 11.7) where it had been flat before; the 30-minute
 * soaks, their restart 15 minutes before the end, kept it flat. Shorter runs report the figures
 * and leave the verdict to a long one (a 30-minute soak; bench/README.md).
 */
export const FLAT_JUDGED_RUN_S_MIN = 600;

export type EndState = {
  readonly errorsOutsideRestart: number;
  readonly errorsDuringRestart: number;
  readonly unfinished: number;
  readonly conservation: Conservation | null;
};

/** Quarter `i` (0 to 3) of `n` samples, as [from, to) indices: the split memoryFigures uses. */
function quarter(n: number, i: number): [number, number] {
  return [Math.floor((n * i) / 4), Math.floor((n * (i + 1)) / 4)];
}

function flatness(id: string, what: string, values: readonly (number | null)[], runS: number): Judgement {
  const f = memoryFigures(values.filter((v): v is number => v !== null));
  return judgedInLongRuns(
    {
      id,
      goal: `${what}: last-quarter mean at most ${MEMORY_FLAT_GROWTH_MAX * 100} % above the second quarter's`,
      measured: `${f.secondQuarterMeanMiB} → ${f.lastQuarterMeanMiB} MiB (${signed(f.growth * 100)} %), ${f.samples} samples`,
      met: f.flat,
    },
    runS,
  );
}

function p99Growth(second: number | null, last: number | null, runS: number): Judgement {
  return judgedInLongRuns(
    {
      id: 'p99',
      goal: `p99 of the last quarter at most ${P99_GROWTH_MAX} × the second quarter's`,
      measured: `${second ?? '?'} → ${last ?? '?'} ms`,
      met: second !== null && last !== null && last <= P99_GROWTH_MAX * second,
    },
    runS,
  );
}

/** `j` as measured in a run of FLAT_JUDGED_RUN_S_MIN or more; in a shorter one its figures, not judged. */
function judgedInLongRuns(j: Judgement, runS: number): Judgement {
  if (runS >= FLAT_JUDGED_RUN_S_MIN) return j;
  return { ...j, measured: `${j.measured}; a ${runS} s run is shorter than the ${FLAT_JUDGED_RUN_S_MIN} s this needs`, met: null };
}

function signed(x: number): string {
  return `${x >= 0 ? '+' : ''}${Math.round(x * 10) / 10}`;
}

export function judgeSoak(
  samples: readonly SoakSample[],
  windows: SoakWindows,
  end: EndState,
  retentionS: number,
  runS: number,
): Judgement[] {
  const n = samples.length;
  const p99Second = windows.p99Over(...quarter(n, 1));
  const p99Last = windows.p99Over(...quarter(n, 3));
  const cons = end.conservation;
  return [
    flatness(
      'rss-flat',
      "the service's RSS (VmRSS)",
      samples.map((s) => s.vmRssMiB),
      runS,
    ),
    flatness(
      'ubscore-dir-flat',
      "UBSCore's directory on disk",
      samples.map((s) => toMiB(s.ubscoreDirBytes)),
      runS,
    ),
    p99Growth(p99Second, p99Last, runS),
    {
      id: 'errors',
      goal: '0 errors outside the restart',
      measured: `${end.errorsOutsideRestart} outside the restart (${end.errorsDuringRestart} during it)`,
      met: end.errorsOutsideRestart === 0,
    },
    {
      id: 'conservation',
      goal: 'conservation: 0 differences',
      measured: cons === null ? 'the check failed' : `${cons.differences} differences over ${cons.accountsChecked} accounts`,
      met: cons?.ok === true && cons.differences === 0,
    },
    pruning(samples, retentionS),
    {
      id: 'final',
      goal: 'every transfer final at the end',
      measured: `${end.unfinished} unfinished`,
      met: end.unfinished === 0,
    },
  ];
}

type Series = (s: SoakSample) => number | null;

const SERIES: Readonly<Record<keyof GrowthRates, Series>> = {
  vmRssMiB: (s) => s.vmRssMiB,
  rssAnonMiB: (s) => s.rssAnonMiB,
  dataMdbMiB: (s) => toMiB(s.dataMdbBytes),
  ubscoreDirMiB: (s) => toMiB(s.ubscoreDirBytes),
  processedEntries: (s) => s.processedEntries,
  pgDatabaseMiB: (s) => toMiB(s.pgDatabaseBytes),
  committed: (s) => s.committed,
};

/** Each series' change per minute between its first and last reading in `samples`; null when fewer than two readings. */
export function growthPerMinute(samples: readonly SoakSample[]): GrowthRates | null {
  const rate = (series: Series): number | null => {
    const read = samples.filter((s) => series(s) !== null);
    const first = read[0];
    const last = read[read.length - 1];
    if (first === undefined || last === undefined || last.atS <= first.atS) return null;
    const perMinute = (((series(last) as number) - (series(first) as number)) / (last.atS - first.atS)) * 60;
    return Math.round(perMinute * 10) / 10;
  };
  if (samples.length < 2) return null;
  const out = {} as Record<keyof GrowthRates, number | null>;
  for (const key of Object.keys(SERIES) as (keyof GrowthRates)[]) out[key] = rate(SERIES[key]);
  return out;
}

/**
 * Pruning seen in the metrics: entries pruned by the last sample (the counter starts
 * from 0 at each start, so after the restart too), and the oldest live entry of the last quarter
 * at most twice the retention old, the ProcessedRetentionBehind alert's bound.
 */
function pruning(samples: readonly SoakSample[], retentionS: number): Judgement {
  const last = samples[samples.length - 1];
  const [from, to] = quarter(samples.length, 3);
  const ages = samples
    .slice(from, to)
    .map((s) => s.oldestAgeS)
    .filter((a): a is number => a !== null);
  const oldest = ages.length === 0 ? null : Math.max(...ages);
  const pruned = last?.prunedTotal ?? null;
  return {
    id: 'pruning',
    goal: `pruning seen: entries pruned since the restart, and the oldest live entry of the last quarter at most ${2 * retentionS} s old (2 x PROCESSED_RETENTION_S)`,
    measured: `${pruned ?? '?'} pruned since the restart; oldest live entry ${oldest ?? '?'} s old`,
    met: pruned !== null && pruned > 0 && oldest !== null && oldest <= 2 * retentionS,
  };
}
