// The service's resident memory under sustained load, read from /proc/<pid>/status (VmRSS)
// once a second. "Flat" compares the last quarter of the run with the second: the first quarter
// is left out because heaps, JIT code and pools grow while the process warms up.

import fs from 'node:fs/promises';

const SAMPLE_INTERVAL_MS = 1_000;
/** The last quarter's mean may exceed the second quarter's by at most this share (growth, not a fall). */
export const MEMORY_FLAT_GROWTH_MAX = 0.1;

export type MemoryFigures = {
  readonly samples: number;
  readonly firstMiB: number;
  readonly lastMiB: number;
  readonly maxMiB: number;
  readonly secondQuarterMeanMiB: number;
  readonly lastQuarterMeanMiB: number;
  /** lastQuarterMean / secondQuarterMean - 1. */
  readonly growth: number;
  readonly flat: boolean;
  readonly samplesMiB: readonly number[];
};

export async function readRssKiB(pid: number): Promise<number | null> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => null);
  const m = status === null ? null : /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  return m?.[1] === undefined ? null : Number(m[1]);
}

/** Samples `pid` every second until `stop` is called; the result holds every sample in MiB. */
export function sampleRss(pid: number): { stop: () => Promise<MemoryFigures> } {
  const samples: number[] = [];
  let pendingRead: Promise<void> = Promise.resolve();
  const take = (): void => {
    pendingRead = readRssKiB(pid).then((kib) => {
      if (kib !== null) samples.push(Math.round((kib / 1024) * 10) / 10);
    });
  };
  take();
  const timer = setInterval(take, SAMPLE_INTERVAL_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      await pendingRead;
      return memoryFigures(samples);
    },
  };
}

export function memoryFigures(samples: readonly number[]): MemoryFigures {
  const quarter = (i: number): readonly number[] => samples.slice(Math.floor((samples.length * i) / 4), Math.floor((samples.length * (i + 1)) / 4));
  const mean = (xs: readonly number[]): number => (xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length);
  const second = mean(quarter(1));
  const last = mean(quarter(3));
  const growth = second > 0 ? last / second - 1 : 0;
  return {
    samples: samples.length,
    firstMiB: samples[0] ?? 0,
    lastMiB: samples[samples.length - 1] ?? 0,
    maxMiB: samples.length === 0 ? 0 : Math.max(...samples),
    secondQuarterMeanMiB: Math.round(second * 10) / 10,
    lastQuarterMeanMiB: Math.round(last * 10) / 10,
    growth: Math.round(growth * 1000) / 1000,
    // Flat means no growth with the requests served: a fall (a GC returning memory) is flat too.
    flat: samples.length >= 4 && growth <= MEMORY_FLAT_GROWTH_MAX,
    samplesMiB: samples,
  };
}
