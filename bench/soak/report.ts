// What `make soak` reports: a line per sample while it runs, then the whole run as JSON and as a
// markdown summary, bench/results/soak-<start time>.json and .md.

import fs from 'node:fs/promises';
import path from 'node:path';
import type { FixedRateFigures } from '../load/fixed-rate.js';
import type { BenchReport, Conservation } from '../report/report.js';
import { toMiB, type StoreReading } from './sample.js';
import type { WindowFigures } from './windows.js';

/** One sample: the stores' reading, the window's answers, and when (seconds since the load began). */
export type SoakSample = StoreReading & WindowFigures & { readonly atS: number };

export type GrowthRates = {
  readonly vmRssMiB: number | null;
  readonly rssAnonMiB: number | null;
  readonly dataMdbMiB: number | null;
  readonly ubscoreDirMiB: number | null;
  readonly processedEntries: number | null;
  readonly pgDatabaseMiB: number | null;
  readonly committed: number | null;
};

/** `met` null: not judged (a run too short for it, said in `measured`); it neither passes nor fails the soak. */
export type Judgement = { readonly id: string; readonly goal: string; readonly measured: string; readonly met: boolean | null };

/** A judgement's verdict in words. */
export function verdict(met: boolean | null): string {
  return met === null ? 'not judged' : met ? 'met' : 'NOT met';
}

export type SoakReport = {
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly elapsedS: number;
  readonly machine: BenchReport['machine'];
  readonly parameters: {
    readonly durationS: number;
    readonly ratePerSecond: number;
    readonly rateSource: string;
    readonly sampleS: number;
    readonly users: number;
    /** PROCESSED_RETENTION_S and PROCESSED_PRUNE_INTERVAL_S as passed to the service. */
    readonly retentionS: number;
    readonly pruneIntervalS: number;
  };
  readonly load: Omit<FixedRateFigures, 'statusCodes'> & {
    readonly outcomes: Readonly<Record<string, number>>;
    readonly errorsOutsideRestart: number;
    readonly errorsDuringRestart: number;
  };
  /** The SIGKILL: seconds into the load, and milliseconds until /readyz answered 200; null if it failed. */
  readonly restart: { readonly atS: number; readonly readyMs: number } | { readonly atS: number; readonly error: string };
  readonly samples: readonly SoakSample[];
  /** Per minute, between the first and last readings before the kill, after the restart, and over the whole run. */
  readonly growthPerMinute: {
    readonly beforeKill: GrowthRates | null;
    readonly afterRestart: GrowthRates | null;
    readonly whole: GrowthRates | null;
  };
  readonly end: {
    readonly committed: number;
    readonly failed: number;
    readonly rolledBack: number;
    readonly unfinished: number;
    readonly conservation: Conservation | null;
  };
  readonly judgements: readonly Judgement[];
  readonly passed: boolean;
};

const dash = (x: number | null, unit = ''): string => (x === null ? '-' : `${x.toLocaleString('en-US')}${unit}`);

/** The line printed as each sample is taken. */
export function sampleLine(s: SoakSample): string {
  return [
    `t=${s.atS}s`,
    `rss ${dash(s.vmRssMiB)} MiB (anon ${dash(s.rssAnonMiB)})`,
    `data.mdb ${dash(toMiB(s.dataMdbBytes))} MiB on disk / ${dash(toMiB(s.dataMdbApparentBytes))} apparent`,
    `ubscore/ ${dash(toMiB(s.ubscoreDirBytes))} MiB`,
    `processed ${dash(s.processedEntries)} (pruned ${dash(s.prunedTotal)}, oldest ${dash(s.oldestAgeS)} s)`,
    `pg ${dash(toMiB(s.pgDatabaseBytes))} MiB`,
    `p50/p99 ${dash(s.p50Ms)}/${dash(s.p99Ms)} ms`,
    `errors ${s.errors} (+${s.restartErrors} restart)`,
    `committed ${dash(s.committed)}`,
  ].join(' | ');
}

function ratesRow(what: string, r: GrowthRates | null): string {
  if (r === null) return `| ${what} | - | - | - | - | - | - | - |`;
  const cells = [r.vmRssMiB, r.rssAnonMiB, r.dataMdbMiB, r.ubscoreDirMiB, r.processedEntries, r.pgDatabaseMiB, r.committed];
  return `| ${what} | ${cells.map((x) => dash(x)).join(' | ')} |`;
}

function restartLine(r: SoakReport['restart']): string {
  return 'readyMs' in r
    ? `SIGKILL at ${r.atS} s; /readyz answered 200 ${r.readyMs} ms later.`
    : `SIGKILL at ${r.atS} s; the restart failed: ${r.error}`;
}

export function renderSoakSummary(r: SoakReport): string {
  const p = r.parameters;
  const retention = `PROCESSED_RETENTION_S=${p.retentionS}, a prune pass every ${p.pruneIntervalS} s.`;
  return [
    `# Soak ${r.startedAt}`,
    '',
    `Commit ${r.machine.commit}, ${r.machine.cpus} CPUs, Node ${r.machine.node}, load average at start ${r.machine.loadAverageAtStart.join(' ')}.`,
    `${p.durationS} s at ${p.ratePerSecond} transfers/s offered (${p.rateSource}), ${p.users} users, a sample every ${p.sampleS} s. ${retention}`,
    `${restartLine(r.restart)} Verdict: ${r.passed ? 'passed' : 'FAILED'}.`,
    '',
    '## Judgements',
    '',
    '| | goal | measured |',
    '|---|---|---|',
    ...r.judgements.map((j) => `| ${verdict(j.met)} | ${j.goal} | ${j.measured} |`),
    '',
    '## Growth per minute',
    '',
    '| span | VmRSS MiB | RssAnon MiB | data.mdb MiB on disk | ubscore/ MiB | processed entries | PostgreSQL MiB | committed |',
    '|---|---|---|---|---|---|---|---|',
    ratesRow('before the kill', r.growthPerMinute.beforeKill),
    ratesRow('after the restart', r.growthPerMinute.afterRestart),
    ratesRow('whole run', r.growthPerMinute.whole),
    '',
    '## The load',
    '',
    `${r.load.scheduled.toLocaleString('en-US')} requests scheduled, ${r.load.answered2xx.toLocaleString('en-US')} answered 2xx (${r.load.achievedPerSecond}/s); p50 ${r.load.latencyMs.p50} / p99 ${r.load.latencyMs.p99} / p99.9 ${r.load.latencyMs.p99_9} ms over the whole run; send lag p99 ${r.load.sendLagMs.p99} ms. Outcomes: ${JSON.stringify(r.load.outcomes)}.`,
    `At the end: ${r.end.committed.toLocaleString('en-US')} committed, ${r.end.failed} failed, ${r.end.rolledBack} rolled back, ${r.end.unfinished} unfinished.`,
    '',
    '## Samples',
    '',
    '| t s | VmRSS MiB | RssAnon MiB | data.mdb MiB (apparent) | ubscore/ MiB | processed entries | filter keys | pruned (since start) | oldest entry s | PostgreSQL MiB | p50 / p99 ms | errors (restart) | committed |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...r.samples.map(
      (s) =>
        `| ${s.atS} | ${dash(s.vmRssMiB)} | ${dash(s.rssAnonMiB)} | ${dash(toMiB(s.dataMdbBytes))} (${dash(toMiB(s.dataMdbApparentBytes))}) | ${dash(toMiB(s.ubscoreDirBytes))} | ${dash(s.processedEntries)} | ${dash(s.filterKeys)} | ${dash(s.prunedTotal)} | ${dash(s.oldestAgeS)} | ${dash(toMiB(s.pgDatabaseBytes))} | ${dash(s.p50Ms)} / ${dash(s.p99Ms)} | ${s.errors} (${s.restartErrors}) | ${dash(s.committed)} |`,
    ),
    '',
  ].join('\n');
}

export async function writeSoakResults(outDir: string, report: SoakReport): Promise<{ json: string; markdown: string }> {
  await fs.mkdir(outDir, { recursive: true });
  // Colons are legal on Linux but not on every file system a clone may land on.
  const stem = path.join(outDir, `soak-${report.startedAt.replace(/:/g, '-')}`);
  await fs.writeFile(`${stem}.json`, `${JSON.stringify(report, null, 2)}\n`);
  await fs.writeFile(`${stem}.md`, renderSoakSummary(report));
  return { json: `${stem}.json`, markdown: `${stem}.md` };
}
