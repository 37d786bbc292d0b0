// Judges each target from what the run measured (never from a guess), and names the bottleneck
// from the same figures: commits per transfer, where the CPU went, and the profile.

import { figuresOf, TARGETS, type BenchReport, type LevelRow, type Target } from './report.js';

type Judged = Pick<
  BenchReport,
  'levels' | 'fixedRate' | 'memory' | 'conservation' | 'ubscore' | 'restart' | 'recovery' | 'rebuild' | 'chain' | 'disk'
>;

/** Busy cores at or above this share of the machine count as CPU-bound. */
const MACHINE_SATURATED_SHARE = 0.9;

const fmt = (x: number): string => x.toLocaleString('en-US', { maximumFractionDigits: 1 });

function atLeast(id: string, goal: string, measured: number | null, min: number, what: string): Target {
  if (measured === null) return { id, goal, measured: 'not measured', ratio: null, met: null };
  return { id, goal, measured: what, ratio: Math.round((measured / min) * 1000) / 1000, met: measured >= min };
}

function atMost(id: string, goal: string, measured: number | null, max: number, what: string): Target {
  if (measured === null) return { id, goal, measured: 'not measured', ratio: null, met: null };
  return { id, goal, measured: what, ratio: measured > 0 ? Math.round((max / measured) * 1000) / 1000 : null, met: measured <= max };
}

/** committed/s over baseline (a) at this level: at least pgRatioMinMain at the main level, pgRatioMinOther elsewhere. */
function throughputTarget(row: LevelRow): Target {
  const c = row.connections;
  const min = c === TARGETS.mainConnections ? TARGETS.pgRatioMinMain : (TARGETS.pgRatioMinAt[c] ?? TARGETS.pgRatioMinOther);
  const pg = row.pg?.postgresJs.perSecond ?? null;
  const pgbench = row.ratioToPgbench === null ? '' : `; pgbench ${row.ratioToPgbench} × (information)`;
  return atLeast(
    `pg-ceiling-${c}`,
    `committed/s ≥ ${min} × (a) at ${c} connections`,
    row.ratioToPostgresJs,
    min,
    `${fmt(row.service.committedPerSecond)} vs ${pg === null ? '?' : fmt(pg)} txn/s = ${row.ratioToPostgresJs ?? '?'} ×${pgbench}`,
  );
}

function fixedRateTarget(r: Judged): Target {
  const goal = `fixed rate: p99 ≤ ${TARGETS.fixedRateP99MsMax} ms at ${fmt(TARGETS.fixedRatePerSecond)} transfers/s offered, every request answered 2xx`;
  const f = figuresOf(r.fixedRate);
  if (f === null) return { id: 'fixed-rate-p99', goal, measured: 'not measured', ratio: null, met: null };
  const what =
    `p99 ${fmt(f.latencyMs.p99)} ms (p50 ${fmt(f.latencyMs.p50)}, p99.9 ${fmt(f.latencyMs.p99_9)}); ${fmt(f.achievedPerSecond)} of ${fmt(f.ratePerSecond)}/s answered 2xx; ` +
    `${f.errors} errors, ${f.timeouts} timeouts, ${f.non2xx} non-2xx`;
  if (f.ratePerSecond !== TARGETS.fixedRatePerSecond)
    return { id: 'fixed-rate-p99', goal, measured: `${what} — offered ${fmt(f.ratePerSecond)}/s, not judged`, ratio: null, met: null };
  const clean = f.errors === 0 && f.non2xx === 0;
  const t = atMost('fixed-rate-p99', goal, f.latencyMs.p99, TARGETS.fixedRateP99MsMax, what);
  return { ...t, met: t.met === true && clean };
}

/**
 * What a committed transfer costs PostgreSQL: CPU at the main level behind HTTP and in (f), the
 * chain alone with its loops started together, and the bytes its tables and indexes grew by over
 * the load levels.
 */
function postgresTargets(r: Judged): Target[] {
  const c = TARGETS.mainConnections;
  const main = r.levels.find((l) => l.connections === c);
  const pgMs = main?.service.postgresCpuMsPerCommitted ?? null;
  const pgPerOp = main?.pg?.postgresJs.postgresCpuMsPerOp ?? null;
  const chain = figuresOf(r.chain)?.find((l) => l.connections === c && l.starts === 'together');
  const chainMs = chain?.postgresCpuMsPerCommitted ?? null;
  const growth = figuresOf(r.disk)?.postgres ?? null;
  const mib = growth === null ? null : Math.round((growth.totalPerMillionTransfers / (1024 * 1024)) * 10) / 10;
  return [
    atMost(
      `pg-cpu-${c}`,
      `PostgreSQL CPU per committed transfer ≤ ${TARGETS.pgCpuMsPerTransferMax} ms at ${c} connections`,
      pgMs,
      TARGETS.pgCpuMsPerTransferMax,
      `${pgMs ?? '?'} ms ((a): ${pgPerOp ?? '?'} ms per transaction)`,
    ),
    atMost(
      `pg-cpu-chain-${c}`,
      `PostgreSQL CPU per committed transfer ≤ ${TARGETS.chainPgCpuMsPerTransferMax} ms in (f), the chain alone, at ${c} connections`,
      chainMs,
      TARGETS.chainPgCpuMsPerTransferMax,
      `${chainMs ?? '?'} ms`,
    ),
    atMost(
      'pg-bytes',
      `PostgreSQL tables and indexes ≤ ${TARGETS.pgMiBPerMillionTransfersMax} MiB per million committed transfers`,
      mib,
      TARGETS.pgMiBPerMillionTransfersMax,
      growth === null ? '?' : `${fmt(mib ?? 0)} MiB (grown over the load levels, ${fmt(growth.committed)} transfers committed)`,
    ),
  ];
}

/** The light level's target: p50 of the closed loop. */
function lightTargets(r: Judged): Target[] {
  const c = TARGETS.lightConnections;
  const row = r.levels.find((l) => l.connections === c);
  const p50 = row?.service.latencyMs.p50 ?? null;
  return [
    atMost(
      `p50-${c}`,
      `p50 ≤ ${TARGETS.lightP50MsMax} ms at ${c} connections (closed loop)`,
      p50,
      TARGETS.lightP50MsMax,
      `${p50 ?? '?'} ms`,
    ),
  ];
}

export function judgeTargets(r: Judged): Target[] {
  const targets = r.levels.map(throughputTarget);
  targets.push(...lightTargets(r));
  targets.push(fixedRateTarget(r));
  targets.push(...postgresTargets(r));
  const ubs = figuresOf(r.ubscore);
  targets.push(
    atLeast(
      'ubscore',
      `UBSCore ≥ ${fmt(TARGETS.ubsCommandsPerSecondMin)} durable commands/s`,
      ubs?.commandsPerSecond ?? null,
      TARGETS.ubsCommandsPerSecondMin,
      `${fmt(ubs?.commandsPerSecond ?? 0)} commands/s`,
    ),
  );
  targets.push(...startTargets(r));
  const mem = figuresOf(r.memory);
  targets.push(
    mem === null
      ? {
          id: 'memory-flat',
          goal: 'memory flat (last-quarter mean at most 10% above the second-quarter mean)',
          measured: 'not measured',
          ratio: null,
          met: null,
        }
      : {
          id: 'memory-flat',
          goal: 'memory flat (last-quarter mean at most 10% above the second-quarter mean)',
          measured: `${mem.secondQuarterMeanMiB} → ${mem.lastQuarterMeanMiB} MiB (${(mem.growth * 100).toFixed(1)}%)`,
          ratio: null,
          met: mem.flat,
        },
  );
  const cons = figuresOf(r.conservation);
  targets.push(
    cons === null
      ? { id: 'conservation', goal: 'conservation: zero differences', measured: 'not measured', ratio: null, met: null }
      : {
          id: 'conservation',
          goal: 'conservation: zero differences',
          measured: `${cons.differences} differences over ${fmt(cons.accountsChecked)} accounts`,
          ratio: null,
          met: cons.ok && cons.differences === 0,
        },
  );
  return targets;
}

/** The start-up targets: UBSCore's restart (d), recovery of stuck transfers (e), the rebuild from PostgreSQL (g). */
function startTargets(r: Judged): Target[] {
  const restart = figuresOf(r.restart);
  const restartWhat =
    restart === null
      ? ''
      : `${fmt(restart.totalRestartMs)} ms (${fmt(restart.accounts)} accounts, ${fmt(restart.recordsAfterSnapshot)} records)`;
  const rec = figuresOf(r.recovery);
  const recMs = rec === null ? null : rec.completed ? rec.recoveryMs : rec.projectedMs;
  const recWhat = rec === null ? '' : `${fmt(recMs ?? 0)} ms${rec.completed ? '' : ' (projected)'} for ${fmt(rec.stuck)} stuck`;
  return [
    atMost(
      'restart',
      `restart (1M accounts + 1M records) ≤ ${TARGETS.restartMsMax} ms`,
      restart?.totalRestartMs ?? null,
      TARGETS.restartMsMax,
      restartWhat,
    ),
    atMost('recovery', `recovery of 100k stuck transfers ≤ ${TARGETS.recoveryMsMax} ms`, recMs, TARGETS.recoveryMsMax, recWhat),
    rebuildTarget(r),
  ];
}

/**
 * (g): the rebuild and UBSCore's open within the bound, and the rebuilt ledger conserved; judged
 * only at the issue's size (a smaller ledger is reported, not judged).
 */
function rebuildTarget(r: Judged): Target {
  const id = 'rebuild';
  const goal = `empty DATA_DIR rebuilt from PostgreSQL and opened (${fmt(TARGETS.rebuildAccounts)} accounts + ${fmt(TARGETS.rebuildRecords)} records) ≤ ${TARGETS.rebuildMsMax} ms, conservation 0 differences`;
  const g = figuresOf(r.rebuild);
  if (g === null) return { id, goal, measured: 'not measured', ratio: null, met: null };
  const what =
    `${fmt(g.totalMs)} ms (rebuild ${fmt(g.rebuildMs)}, open ${fmt(g.openMs)}; ${fmt(g.accounts)} accounts, ${fmt(g.records)} records), ` +
    `${g.conservation.differences} differences`;
  if (g.accounts < TARGETS.rebuildAccounts || g.records < TARGETS.rebuildRecords)
    return { id, goal, measured: `${what} — a smaller ledger, not judged`, ratio: null, met: null };
  const t = atMost(id, goal, g.totalMs, TARGETS.rebuildMsMax, what);
  return { ...t, met: t.met === true && g.conservation.differences === 0 };
}

/** Whether any target about the service under load (throughput, latency, PostgreSQL's CPU per transfer, memory) was missed. */
export function serviceTargetMissed(targets: readonly Target[]): boolean {
  return targets.some((t) => t.met === false && /^(pg-ceiling|p50|fixed-rate|pg-cpu|memory)/.test(t.id));
}

/** A few sentences naming what limits the service, computed from the run's own figures. */
export function bottleneckLines(report: Pick<BenchReport, 'levels' | 'profile' | 'machine'>): string[] {
  const lines: string[] = [];
  const row = report.levels.find((l) => l.connections === TARGETS.mainConnections) ?? report.levels[report.levels.length - 1];
  if (row === undefined) return lines;
  const s = row.service;
  const pg = row.pg?.postgresJs.perSecond;
  if (s.pgWriteTxnsPerCommitted !== null && pg !== undefined) {
    lines.push(
      `Each committed transfer cost ${s.pgWriteTxnsPerCommitted} PostgreSQL write transactions at ${row.connections} connections; ` +
        `at the measured ${fmt(pg)} one-transaction operations/s, PostgreSQL alone caps the service near ${fmt(pg / s.pgWriteTxnsPerCommitted)} transfers/s (measured ${fmt(s.committedPerSecond)}).`,
    );
  }
  const cpu = s.cpu;
  const others = Math.max(0, Math.round((cpu.machineCores - cpu.serviceCores - cpu.postgresCores - cpu.loadGeneratorCores) * 100) / 100);
  const saturated = cpu.machineCores >= report.machine.cpus * MACHINE_SATURATED_SHARE;
  lines.push(
    `CPU during that run (cores busy of ${report.machine.cpus}): service ${cpu.serviceCores}, PostgreSQL ${cpu.postgresCores}, load generator ${cpu.loadGeneratorCores}, other processes ${others}; machine ${cpu.machineCores}` +
      (saturated ? ' — the machine was CPU-bound.' : '.') +
      (cpu.serviceThreads.length > 0
        ? ` Busiest service threads: ${cpu.serviceThreads
            .slice(0, 4)
            .map((t) => `${t.name} ${t.cores}`)
            .join(', ')}.`
        : ''),
  );
  lines.push(...cpuPerTransferLines(row));
  lines.push(...activityLines(row, saturated));
  const prof = figuresOf(report.profile);
  const busiest = prof?.threads[0];
  if (busiest !== undefined) {
    const mods = busiest.topModules
      .slice(0, 4)
      .map((m) => `${m.name} ${(m.share * 100).toFixed(0)}%`)
      .join(', ');
    lines.push(
      `Busiest service thread in the profile: ${busiest.thread}, not idle ${(busiest.busyShare * 100).toFixed(0)}% of its wall time; its self time by module: ${mods}.`,
    );
  }
  return lines;
}

/** What the service's PostgreSQL connections did during the run, and which side that points to. */
function activityLines(row: LevelRow, saturated: boolean): string[] {
  const act = row.service.pgActivity;
  const coord = act.applications.find((a) => a.application === 'coordinator');
  if (coord === undefined || act.samples === 0) return [];
  const states = coord.states
    .slice(0, 5)
    .map((s) => `${s.state} (${s.wait}) ${s.meanConnections}`)
    .join(', ');
  const sum = (pred: (state: string) => boolean): number =>
    coord.states.filter((s) => pred(s.state)).reduce((a, s) => a + s.meanConnections, 0);
  const active = sum((st) => st === 'active');
  const waitingForClient = sum((st) => st.startsWith('idle in transaction'));
  const idle = sum((st) => st === 'idle');
  const verdict =
    active >= waitingForClient + idle
      ? `mostly busy in statements: the database side limits (top wait: ${coord.states.find((s) => s.state === 'active')?.wait ?? '?'}).`
      : `busy in a statement only ${fmt(active)} of ${fmt(coord.meanConnections)} on average; the rest waited for the coordinators (idle in a transaction ${fmt(waitingForClient)}, idle in the pool ${fmt(idle)}). ` +
        (saturated
          ? 'With the machine CPU-bound, that is the coordinator threads waiting for a CPU they share with PostgreSQL, so what limits is the CPU each transfer costs on both sides, not connections or locks.'
          : "With CPU to spare, the limit is on the service's side of the socket: its threads and the sequential round trips of each transfer.");
  return [
    `The coordinators' PostgreSQL connections during the ${row.connections}-connection run (mean over ${act.samples} samples of pg_stat_activity): ${states}. They were ${verdict}`,
  ];
}

/** CPU per committed transfer, set against PostgreSQL's CPU per operation of baseline (a). */
function cpuPerTransferLines(row: LevelRow): string[] {
  const s = row.service;
  if (s.committed <= 0) return [];
  const pgPerOp = row.pg?.postgresJs.postgresCpuMsPerOp ?? null;
  return [
    `CPU per committed transfer: service ${s.serviceCpuMsPerCommitted ?? '?'} ms, PostgreSQL ${s.postgresCpuMsPerCommitted ?? '?'} ms` +
      (pgPerOp === null
        ? '.'
        : `; baseline (a) cost PostgreSQL ${pgPerOp} ms per transaction, so one transfer costs PostgreSQL about ${row.pgCpuRatioToPostgresJs ?? '?'} transactions' worth of CPU.`),
  ];
}
