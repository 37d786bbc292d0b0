// The short markdown summary of a run (bench/results/summary.md): the targets met or not, the
// service beside its baselines at each concurrency, and what the profile says limits it.

import { figuresOf, type BenchReport, type Part } from './report.js';

const n = (x: number | null | undefined, digits = 1): string => (x === null || x === undefined ? '—' : x.toLocaleString('en-US', { maximumFractionDigits: digits }));
const mark = (met: boolean | null): string => (met === null ? 'not measured' : met ? '**met**' : '**not met**');

function partNote<T>(name: string, part: Part<T>): string | null {
  if (part.status === 'skipped') return `${name}: skipped (${part.reason}).`;
  if (part.status === 'failed') return `${name}: FAILED: ${part.error.split('\n')[0] ?? ''}`;
  return null;
}

function header(r: BenchReport): string[] {
  const p = r.parameters;
  return [
    '# Benchmark summary (`make bench`)',
    '',
    `Run ${r.startedAt} on ${r.machine.cpus} CPUs (${r.machine.platform}), Node ${r.machine.node}, commit ${r.machine.commit}; the whole run took ${n(r.elapsedS, 0)} s. ` +
      `Load average at start: ${r.machine.loadAverageAtStart.map((x) => x.toFixed(2)).join(' ')}.`,
    `${n(p.users, 0)} users funded on both sides; ${p.durationS} s per connection level (${p.levels.join(', ')}); memory run ${p.memoryS} s at 64 connections. ` +
      'The load generator (autocannon) shares the machine with everything it measures, for the service and for baseline (b) alike.',
    '',
  ];
}

function targetsTable(r: BenchReport): string[] {
  const rows = r.targets.map((t) => `| ${t.goal} | ${t.measured} | ${t.ratio === null ? '—' : `${t.ratio} ×`} | ${mark(t.met)} |`);
  return ['## Targets', '', '| target | measured | measured / goal | |', '|---|---|---|---|', ...rows, '', 'Ratios are oriented so that 1 or more meets the target (for limits, goal / measured).', ''];
}

function levelsTable(r: BenchReport): string[] {
  const rows = r.levels.map((l) => {
    const s = l.service;
    return (
      `| ${l.connections} | ${n(s.committedPerSecond)} | ${s.latencyMs.p50} / ${s.latencyMs.p99} / ${s.latencyMs.p99_9} | ${s.errors} / ${s.timeouts} / ${s.non2xx} | ${n(s.statusCodes['202'] ?? 0, 0)} of ${n(s.responses, 0)} | ` +
      `${n(l.pg?.postgresJs.perSecond)} (${l.ratioToPostgresJs ?? '—'} ×) | ${n(l.pg?.pgbench?.tps)} (${l.ratioToPgbench ?? '—'} ×) | ${n(l.http?.responsesPerSecond)} (${l.ratioToHttp ?? '—'} ×) | ` +
      `${s.pgWriteTxnsPerCommitted ?? '—'} | ${s.ubsCommandsPerBatch ?? '—'} | ${s.cpu.serviceCores} / ${s.cpu.postgresCores} / ${s.cpu.loadGeneratorCores} / ${s.cpu.machineCores} |`
    );
  });
  return [
    '## The service beside the machine\'s limits',
    '',
    '| conn. | committed/s | latency p50 / p99 / p99.9 ms | errors / timeouts / non-2xx | answered 202 (not final within the happy-path deadline) | (a) postgres.js txn/s (ratio) | (a) pgbench tps (ratio) | (b) HTTP req/s (ratio) | PG write txns per transfer | UBSCore cmds per WAL batch | CPU cores: service / PG / load gen / machine |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    '(a) is one PostgreSQL transaction per operation (balance UPDATE + INSERT) on the same server, capped at 64 connections. (b) is Hono + @hono/node-server answering a trivial JSON POST with the same request bytes.',
    '',
  ];
}

function componentLines(r: BenchReport): string[] {
  const out = ['## Components', ''];
  const mem = figuresOf(r.memory);
  if (mem !== null) {
    out.push(
      `- Memory (service VmRSS, ${mem.samples} samples over ${r.parameters.memoryS} s at ${mem.connections} connections, ${n(mem.committedPerSecond)} committed/s, p99 ${mem.latencyP99Ms} ms): ` +
        `first ${mem.firstMiB} MiB, last ${mem.lastMiB} MiB, max ${mem.maxMiB} MiB; second-quarter mean ${mem.secondQuarterMeanMiB}, last-quarter mean ${mem.lastQuarterMeanMiB} (${(mem.growth * 100).toFixed(1)}%): ${mem.flat ? 'flat' : 'NOT flat'}.`,
    );
  }
  const ubs = figuresOf(r.ubscore);
  if (ubs !== null) {
    out.push(
      `- (c) UBSCore alone: ${n(ubs.commands, 0)} EXTERNAL_DEPOSIT commands, ${n(ubs.inFlight, 0)} in flight from one UbsClient: ${n(ubs.commandsPerSecond, 0)} durable commands/s, ${ubs.commandsPerBatch} commands per WAL batch (${n(ubs.elapsedMs / Math.max(ubs.walBatches, 1))} ms per batch), ${ubs.notApplied} not applied. ` +
        `CPU meanwhile (cores): ${ubs.cpu.serviceThreads.map((t) => `${t.name} ${t.cores}`).join(', ')}; machine ${ubs.cpu.machineCores}.`,
    );
  }
  const rs = figuresOf(r.restart);
  if (rs !== null) out.push(`- (d) Restart: ${n(rs.accounts, 0)} accounts (snapshot load ${n(rs.snapshotLoadMs, 0)} ms) + ${n(rs.recordsAfterSnapshot, 0)} WAL records (replay ${n(rs.replayMs, 0)} ms, ${n(rs.recordsPerSecond, 0)} records/s): ${n(rs.totalRestartMs, 0)} ms in all.`);
  const rec = figuresOf(r.recovery);
  if (rec !== null) {
    out.push(
      `- (e) Recovery: ${n(rec.finished, 0)} of ${n(rec.stuck, 0)} stuck transfers final in ${n(rec.recoveryMs, 0)} ms (service start ${n(rec.startupMs, 0)} ms, ${n(rec.transfersPerSecond, 0)} transfers/s)` +
        (rec.completed ? '.' : `; stopped at the deadline, projected total ${n(rec.projectedMs, 0)} ms.`),
    );
  }
  const cons = figuresOf(r.conservation);
  if (cons !== null) out.push(`- Conservation (GET /admin/v1/invariant after the load): ok=${cons.ok}, ${cons.differences} differences, ${n(cons.accountsChecked, 0)} accounts, ${n(cons.transfersExamined, 0)} transfers examined, WAL seq ${n(cons.walSeq, 0)}, halted=${cons.halted}.`);
  const notes = [partNote('Memory', r.memory), partNote('(a)', r.pgCeiling), partNote('(b)', r.httpCeiling), partNote('(c)', r.ubscore), partNote('(d)', r.restart), partNote('(e)', r.recovery), partNote('Conservation', r.conservation)];
  for (const note of notes) if (note !== null) out.push(`- ${note}`);
  out.push('');
  return out;
}

function profileLines(r: BenchReport): string[] {
  const prof = figuresOf(r.profile);
  const out = ['## Where the time goes', ''];
  if (prof === null) {
    out.push(partNote('Profile', r.profile) ?? '', '');
  } else {
    out.push(
      `\`node --cpu-prof\` on the service for ${prof.durationS} s at ${prof.connections} connections (${n(prof.committedPerSecond)} committed/s while profiled), samples of the load window only. ` +
        'V8 samples by wall clock, so shares are of each thread\'s wall time: "busy" is time not idle in the event loop, which on a saturated machine includes waiting for a CPU inside the function sampled (a socket write that woke PostgreSQL, for instance). ' +
        `CPU actually used in that run, in cores: service ${prof.cpu.serviceCores} (${prof.cpu.serviceThreads.map((t) => `${t.name}: ${t.cores}`).join(', ')}), PostgreSQL ${prof.cpu.postgresCores}, load generator ${prof.cpu.loadGeneratorCores}; whole machine ${prof.cpu.machineCores}.`,
      '',
    );
    for (const t of prof.threads.slice(0, 4)) {
      const fns = t.topFunctions.slice(0, 5).map((f) => `\`${f.name}\`${f.via === undefined || f.name.includes(f.via) ? '' : ` (from ${f.via})`} ${(f.share * 100).toFixed(1)}%`).join(', ');
      const mods = t.topModules.slice(0, 5).map((m) => `${m.name} ${(m.share * 100).toFixed(1)}%`).join(', ');
      out.push(`- **${t.thread}**: busy ${(t.busyShare * 100).toFixed(0)}%. Modules: ${mods}. Functions: ${fns}.`);
    }
    out.push('');
  }
  out.push('### Bottleneck', '', ...r.bottleneck.map((l) => `- ${l}`), '');
  return out;
}

/** Modules (not V8's own buckets) that hold the most self time on a thread, from the profile. */
function topModules(r: BenchReport, threadPrefix: string): string {
  const t = figuresOf(r.profile)?.threads.find((x) => x.thread.startsWith(threadPrefix));
  const mods = t?.topModules.filter((m) => !m.name.startsWith('(')).slice(0, 3) ?? [];
  return mods.length === 0 ? 'not profiled' : mods.map((m) => `${m.name} ${(m.share * 100).toFixed(0)}%`).join(', ');
}

/** What would move the number: the design's levers, stated against this run's figures. */
function leverLines(r: BenchReport): string[] {
  const row = r.levels.find((l) => l.connections === 64) ?? r.levels[r.levels.length - 1];
  const k = row?.service.pgWriteTxnsPerCommitted;
  return [
    '### What would move the number',
    '',
    `- Sharing the remaining commits: state changes, reads and Funding operations already travel in batches (${k ?? '?'} PostgreSQL write transactions per committed transfer here, against one per operation in baseline (a)), but at this load the batches are small and each transfer's creation is still its own commit; the waits of the coordinators' connections above are mostly WAL flushes.`,
    '- Fewer statements per transfer: the Funding adapter\'s operation and the state change after it in one transaction (spec 003 §4.3 allows INIT → SOURCE_DONE when the source call shares the transaction), at the price of the crash points between them.',
    `- CPU per request: on ${r.machine.cpus} cores the service, PostgreSQL and the load generator compete. The main thread\'s largest modules were ${topModules(r, 'main')}; a coordinator\'s ${topModules(r, 'coordinator')}. Fewer, larger messages and statements per transfer cut both.`,
    '',
  ];
}

export function renderSummary(r: BenchReport): string {
  return [...header(r), ...targetsTable(r), ...levelsTable(r), ...componentLines(r), ...profileLines(r), ...leverLines(r)].join('\n');
}
