// The service's resident memory under sustained load, read from /proc/<pid>/status once a second.
// "Flat" is judged on RssAnon, the anonymous memory (heaps, buffers, caches the process owns),
// and compares the last quarter of the run with the second: the first quarter is left out because
// heaps, JIT code and pools grow while the process warms up. VmRSS also counts RssFile, the pages
// of memory-mapped files the process touched; UBSCore's LMDB environment is one, and its WAL and
// snapshots grow with every transfer, so VmRSS rises with the data written (page cache the
// kernel can reclaim), not with what the process holds. The last VmRSS and RssFile are reported.

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
  /** VmRSS and RssFile at the last sample, in MiB (null before any sample). */
  readonly lastVmRssMiB: number | null;
  readonly lastRssFileMiB: number | null;
};

export type Status = { readonly anonKiB: number; readonly vmRssKiB: number; readonly fileKiB: number };

/** The process's RssAnon, VmRSS and RssFile in KiB, or null when it is gone. */
export async function readStatus(pid: number): Promise<Status | null> {
  const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => null);
  if (status === null) return null;
  const kib = (field: string): number | null => {
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
    return m?.[1] === undefined ? null : Number(m[1]);
  };
  const anonKiB = kib('RssAnon');
  const vmRssKiB = kib('VmRSS');
  const fileKiB = kib('RssFile');
  return anonKiB === null || vmRssKiB === null || fileKiB === null ? null : { anonKiB, vmRssKiB, fileKiB };
}

const mib = (kib: number): number => Math.round((kib / 1024) * 10) / 10;

/** Samples `pid` every second until `stop` is called; the result holds every RssAnon sample in MiB. */
export function sampleRss(pid: number): { stop: () => Promise<MemoryFigures> } {
  const samples: number[] = [];
  let last: Status | null = null;
  let pendingRead: Promise<void> = Promise.resolve();
  const take = (): void => {
    pendingRead = readStatus(pid).then((status) => {
      if (status === null) return;
      samples.push(mib(status.anonKiB));
      last = status;
    });
  };
  take();
  const timer = setInterval(take, SAMPLE_INTERVAL_MS);
  return {
    stop: async () => {
      clearInterval(timer);
      await pendingRead;
      const seen = last as Status | null;
      return {
        ...memoryFigures(samples),
        lastVmRssMiB: seen === null ? null : mib(seen.vmRssKiB),
        lastRssFileMiB: seen === null ? null : mib(seen.fileKiB),
      };
    },
  };
}

export function memoryFigures(samples: readonly number[]): Omit<MemoryFigures, 'lastVmRssMiB' | 'lastRssFileMiB'> {
  const quarter = (i: number): readonly number[] =>
    samples.slice(Math.floor((samples.length * i) / 4), Math.floor((samples.length * (i + 1)) / 4));
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
