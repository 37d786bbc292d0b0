// The chaos run's report: the seed, the faults applied by kind, the time to ready after each (max,
// p50), what the clients saw go wrong, and the checker's violations; printed as JSON, and with
// CHAOS_REPORT=1 written to bench/results/chaos-<time>.json and .md.

import fs from 'node:fs';
import path from 'node:path';
import type { Violation } from '../drill/checks.js';
import { PROJECT_ROOT } from '../support/process.js';
import type { ClientCounts } from './clients.js';
import type { FaultRecord } from './nemesis.js';
import type { Target } from './targets.js';

export type ChaosReport = {
  readonly seed: number;
  readonly seconds: number;
  readonly startedAt: string;
  readonly faultsApplied: number;
  readonly faultsSkipped: number;
  readonly byKind: Record<string, { count: number; readyMaxMs: number | null; readyP50Ms: number | null; notReady: number }>;
  readonly readyAfterHeal: { maxMs: number | null; p50Ms: number | null };
  readonly clients: ClientCounts;
  readonly probes: ClientCounts;
  readonly historyEntries: number;
  readonly transfers: number;
  readonly serviceRestarts: Record<string, number>;
  readonly faults: readonly FaultRecord[];
  readonly violations: readonly Violation[];
  /** The timing and count targets (targets.ts); one with met false fails the run as a violation does. */
  readonly targets: readonly Target[];
};

export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export function summarize(
  faults: readonly FaultRecord[],
): Pick<ChaosReport, 'faultsApplied' | 'faultsSkipped' | 'byKind' | 'readyAfterHeal'> {
  const applied = faults.filter((f) => f.skipped === undefined);
  const byKind: ChaosReport['byKind'] = {};
  for (const f of applied) {
    const k = kindOf(f);
    const entry = byKind[k] ?? { count: 0, readyMaxMs: null, readyP50Ms: null, notReady: 0 };
    entry.count++;
    if (f.readyAfterHealMs === null) entry.notReady++;
    byKind[k] = entry;
  }
  for (const [k, entry] of Object.entries(byKind)) {
    const times = applied.filter((f) => kindOf(f) === k && f.readyAfterHealMs !== null).map((f) => f.readyAfterHealMs as number);
    entry.readyMaxMs = times.length === 0 ? null : Math.max(...times);
    entry.readyP50Ms = percentile(times, 50);
  }
  const all = applied.filter((f) => f.readyAfterHealMs !== null).map((f) => f.readyAfterHealMs as number);
  return {
    faultsApplied: applied.length,
    faultsSkipped: faults.length - applied.length,
    byKind,
    readyAfterHeal: { maxMs: all.length === 0 ? null : Math.max(...all), p50Ms: percentile(all, 50) },
  };
}

const kindOf = (f: FaultRecord): string => `${f.kind} ${f.role}`;

/** Writes bench/results/chaos-<time>.json and .md; returns the two paths. */
export function writeReport(report: ChaosReport): string[] {
  const dir = path.join(PROJECT_ROOT, 'bench', 'results');
  fs.mkdirSync(dir, { recursive: true });
  const stem = path.join(dir, `chaos-${report.startedAt.replace(/[:.]/g, '-')}`);
  fs.writeFileSync(`${stem}.json`, `${JSON.stringify(report, null, 2)}\n`);
  fs.writeFileSync(`${stem}.md`, markdown(report));
  return [`${stem}.json`, `${stem}.md`];
}

function markdown(r: ChaosReport): string {
  const rows = Object.entries(r.byKind).map(
    ([k, v]) => `| ${k} | ${v.count} | ${v.readyP50Ms ?? '-'} | ${v.readyMaxMs ?? '-'} | ${v.notReady} |`,
  );
  const violations = r.violations.length === 0 ? ['none'] : r.violations.slice(0, 50).map((v) => `- ${v.check}: ${v.detail}`);
  return [
    `# make chaos, ${r.startedAt}`,
    '',
    `Seed ${r.seed} (replay: \`CHAOS_SEED=${r.seed} CHAOS_SECONDS=${r.seconds} make chaos\`), ${r.seconds} s, ${r.faultsApplied} faults applied (${r.faultsSkipped} skipped), ${r.transfers} transfers, ${r.historyEntries} history entries.`,
    '',
    `Time to ready after the heal (a probe transfer COMMITTED through a ready instance): p50 ${r.readyAfterHeal.p50Ms ?? '-'} ms, max ${r.readyAfterHeal.maxMs ?? '-'} ms.`,
    '',
    '| fault | count | ready p50 ms | ready max ms | not ready |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `Clients: ${r.clients.sent} requests, ${r.clients.attempts} attempts, ${r.clients.noAnswer} without answer, ${r.clients.status5xx} answered 500/503, ${r.clients.givenUp} given up. Service processes started again: ${JSON.stringify(r.serviceRestarts)}.`,
    '',
    '## Targets',
    '',
    ...r.targets.map((t) => `- ${t.met === null ? 'not judged' : t.met ? 'met' : 'MISSED'}: ${t.name}: ${t.detail}`),
    '',
    '## Violations',
    '',
    ...violations,
    '',
  ].join('\n');
}
