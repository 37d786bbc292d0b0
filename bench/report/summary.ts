// The short markdown summary of a run (bench/results/summary.md): the targets met or not, the
// service beside its baselines at each concurrency, the open-loop run, what each committed
// transfer cost, and what the profile says limits it.

import { FIXED_RATE_SOCKETS_MAX, FIXED_RATE_TIMEOUT_MS, type FixedRateFigures } from '../load/fixed-rate.js';
import { figuresOf, ratio, TARGETS, type BenchReport, type Part } from './report.js';
import { batchPlanLines } from './batch-plans.js';

const n = (x: number | null | undefined, digits = 1): string =>
  x === null || x === undefined ? '—' : x.toLocaleString('en-US', { maximumFractionDigits: digits });
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
    `${n(p.users, 0)} users funded on both sides; ${p.durationS} s per connection level (${p.levels.join(', ')}); ` +
      `${p.fixedRatePerSecond > 0 ? `${n(p.fixedRatePerSecond, 0)} transfers/s offered for ${p.durationS} s (open loop)` : 'no fixed-rate run'}; memory run ${p.memoryS} s at 64 connections. ` +
      'The load generators (autocannon, and the open-loop client) share the machine with everything they measure, for the service and for baseline (b) alike.',
    '',
  ];
}

function targetsTable(r: BenchReport): string[] {
  const rows = r.targets.map((t) => `| ${t.goal} | ${t.measured} | ${t.ratio === null ? '—' : `${t.ratio} ×`} | ${mark(t.met)} |`);
  return [
    '## Targets',
    '',
    '| target | measured | measured / goal | |',
    '|---|---|---|---|',
    ...rows,
    '',
    'Ratios are oriented so that 1 or more meets the target (for limits, goal / measured).',
    '',
  ];
}

function levelsTable(r: BenchReport): string[] {
  const rows = r.levels.map((l) => {
    const s = l.service;
    return (
      `| ${l.connections} | ${n(s.committedPerSecond)} | ${s.latencyMs.p50} / ${s.latencyMs.p99} / ${s.latencyMs.p99_9} | ${s.errors} / ${s.timeouts} / ${s.non2xx} | ${n(s.statusCodes['202'] ?? 0, 0)} of ${n(s.responses, 0)} | ` +
      `${n(l.pg?.postgresJs.perSecond)} (${l.ratioToPostgresJs ?? '—'} ×) | ${n(l.pg?.pgbench?.tps)} (${l.ratioToPgbench ?? '—'} ×) | ${n(l.http?.responsesPerSecond)} (${l.ratioToHttp ?? '—'} ×) | ` +
      `${s.pgWriteTxnsPerCommitted ?? '—'} | ${s.pgStatementsPerCommitted ?? '—'} | ${n(s.pgWalBytesPerCommitted, 0)} (${n(l.pg?.postgresJs.walBytesPerOp, 0)}) | ${n(s.postgresCpuMsPerCommitted, 3)} (${n(l.pg?.postgresJs.postgresCpuMsPerOp, 3)}; ${l.pgCpuRatioToPostgresJs ?? '—'} ×) | ` +
      `${n(s.serviceCpuMsPerCommitted, 3)} | ${s.ubsCommandsPerBatch ?? '—'} | ${s.cpu.serviceCores} / ${s.cpu.postgresCores} / ${s.cpu.loadGeneratorCores} / ${s.cpu.machineCores} | ${n(l.machineCpuMsPerCommitted, 3)} |`
    );
  });
  return [
    "## The service beside the machine's limits",
    '',
    '| conn. | committed/s | latency p50 / p99 / p99.9 ms | errors / timeouts / non-2xx | answered 202 (not final within the happy-path deadline) | (a) postgres.js txn/s (ratio) | (a) pgbench tps (ratio) | (b) HTTP req/s (ratio) | PG write txns per transfer | PG statements per transfer | PG WAL bytes per transfer ((a) per txn) | PG CPU ms per transfer ((a) per txn; ratio) | service CPU ms per transfer | UBSCore cmds per WAL batch | CPU cores: service / PG / load gen / machine | machine CPU ms per transfer |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    '(a) is one PostgreSQL transaction per operation (balance UPDATE + INSERT) on the same server, capped at 64 connections; the pgbench ratio is information, not a target. ' +
      '(b) is Hono + @hono/node-server answering a trivial JSON POST with the same request bytes: reported, not a target. ' +
      'Each level is one window, from just before the load until every transfer it started is final; a per-transfer figure is what the window cost over the transfers it committed. ' +
      'Write transactions are transaction ids assigned (pg_current_xact_id); WAL bytes are what pg_stat_wal counted over the window, the whole server. ' +
      `Statements are pg_stat_statements' calls by the service's role on its database with BEGIN/COMMIT left out, failed statements not counted (baseline (a) counts ${statementsOfA(r)} per transaction the same way); the benchmark's own queries run as another role. ` +
      "CPU is user + system time from /proc: every PostgreSQL process (the benchmark's few monitoring queries included), and the service process with all its threads.",
    '',
  ];
}

function chainTable(r: BenchReport): string[] {
  const out = ["## The transfer's chain alone (f), and with spread-out starts (f')", ''];
  const chain = figuresOf(r.chain);
  if (chain === null) return [...out, partNote('(f)', r.chain) ?? '', ''];
  const rows = chain.map((c) => {
    const level = r.levels.find((l) => l.connections === c.connections);
    const a = level?.pg?.postgresJs.perSecond;
    const service = level?.service.committedPerSecond;
    const name = c.starts === 'spread' ? `(f') spread over ${c.startSpreadMs} ms` : '(f) together';
    return (
      `| ${c.connections} | ${name} | ${n(c.committedPerSecond)} | ${ratio(c.committedPerSecond, a) ?? '—'} × | ${n(service)} (${ratio(service ?? 0, c.committedPerSecond) ?? '—'} ×) | ` +
      `${c.latencyMs.p50} / ${c.latencyMs.p99} | ${c.stageMs.create} / ${c.stageMs.ubscore} / ${c.stageMs.complete} | ${c.pgWriteTxnsPerCommitted ?? '—'} | ${n(c.pgWalBytesPerCommitted, 0)} | ` +
      `${n(c.postgresCpuMsPerCommitted, 3)} | ${n(c.chainCpuMsPerCommitted, 3)} | ${c.machineCores} |`
    );
  });
  return [
    ...out,
    '| conn. | loops start | committed/s | over (a) | the service committed/s (over this chain) | latency p50 / p99 ms | mean waits: creating commit / UBSCore / completing commit ms | PG write txns per transfer | PG WAL bytes per transfer | PG CPU ms per transfer | chain CPU ms per transfer | machine cores |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    "(f) makes the three durable commits a transfer waits for on the happy path with the service's own parts, and nothing else: its batched PostgreSQL writer (`transfer_apply` with the paths the driver sends) and a UBSCore thread of its own, " +
      'driven from one thread by as many closed loops as the level has connections, half FUNDING→SPOT and half SPOT→FUNDING, in a database of its own on the same server after the service went idle. ' +
      "There is no HTTP edge, no load generator, no coordinator thread and none of a shard's work (checks, limits, metrics, retries, the hops between threads): the service's committed/s over (f)'s is what those leave of the chain. " +
      "Chain CPU is the benchmark process's (the loops, the writer's client side, UBSCore's thread and LMDB's writer). " +
      "(f) starts every loop at once, so its loops travel as one group; (f') is the same chain with loop i started i / n of (f)'s mean latency later, so its arrivals begin evenly spread, as the HTTP edge's are.",
    '',
  ];
}

function statementsOfA(r: BenchReport): string {
  const counts = (figuresOf(r.pgCeiling) ?? []).map((c) => c.postgresJs.statementsPerOp).filter((x): x is number => x !== null);
  return counts.length === 0 ? 'no statements, as they were not counted,' : [...new Set(counts)].join(' / ');
}

function fixedRateLines(r: BenchReport): string[] {
  const f = figuresOf(r.fixedRate);
  const out = ['## Fixed rate (open loop)', ''];
  if (f === null) return [...out, partNote('Fixed rate', r.fixedRate) ?? '', ''];
  const b = figuresOf(r.httpCeiling)?.fixedRate ?? null;
  const open = (x: FixedRateFigures): string =>
    `${n(x.ratePerSecond)} | ${n(x.achievedPerSecond)} | ${x.latencyMs.p50} / ${x.latencyMs.p99} / ${x.latencyMs.p99_9} / ${x.latencyMs.max} | ${x.errors} / ${x.timeouts} / ${x.non2xx} | ${x.sendLagMs.p99} / ${x.sendLagMs.max}`;
  return [
    ...out,
    '| | offered/s | answered 2xx/s | latency p50 / p99 / p99.9 / max ms | errors / timeouts / non-2xx | generator send lag p99 / max ms | committed/s | PG write txns per transfer | PG statements per transfer | PG CPU ms per transfer | service CPU ms per transfer | CPU cores: service / PG / load gen / machine |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    `| the service | ${open(f)} | ${n(f.committedPerSecond)} | ${f.pgWriteTxnsPerCommitted ?? '—'} | ${f.pgStatementsPerCommitted ?? '—'} | ${n(f.postgresCpuMsPerCommitted, 3)} | ${n(f.serviceCpuMsPerCommitted, 3)} | ` +
      `${f.cpu.serviceCores} / ${f.cpu.postgresCores} / ${f.cpu.loadGeneratorCores} / ${f.cpu.machineCores} |`,
    ...(b === null ? [] : [`| (b) HTTP echo | ${open(b)} | — | — | — | — | — | — |`]),
    '',
    `${n(f.scheduled, 0)} requests, one every ${n(1000 / f.ratePerSecond, 2)} ms for ${f.offeredS} s, each sent when due whether or not the earlier ones were answered, over at most ${FIXED_RATE_SOCKETS_MAX} connections (a request due while all are busy waits in the client, and the wait counts). ` +
      'Each latency runs from the moment its request was due to its answer, so the waits a slow answer causes are counted; a closed loop (the table above) sends less when the service slows and hides them. ' +
      `A request with no answer ${FIXED_RATE_TIMEOUT_MS / 1000} s after it was due counts as a timeout, at ${FIXED_RATE_TIMEOUT_MS / 1000} s. Answered 2xx/s and committed/s are over the ${f.durationS} s from the first due request to the last answer or timeout. ` +
      "The generator writes HTTP/1.1 on its own keep-alive sockets, as autocannon does (Node's http client cost it twice the CPU). The send lag is how late it sent (it shares the CPUs); (b) is the same generator against a server that only answers, the floor under the service's row.",
    '',
  ];
}

function componentLines(r: BenchReport): string[] {
  const out = ['## Components', ''];
  const mem = figuresOf(r.memory);
  if (mem !== null) {
    out.push(
      `- Memory (service RssAnon, ${mem.samples} samples over ${r.parameters.memoryS} s at ${mem.connections} connections, ${n(mem.committedPerSecond)} committed/s, p99 ${mem.latencyP99Ms} ms): ` +
        `first ${mem.firstMiB} MiB, last ${mem.lastMiB} MiB, max ${mem.maxMiB} MiB; second-quarter mean ${mem.secondQuarterMeanMiB}, last-quarter mean ${mem.lastQuarterMeanMiB} (${(mem.growth * 100).toFixed(1)}%): ${mem.flat ? 'flat' : 'NOT flat'}. At the end VmRSS ${mem.lastVmRssMiB ?? '?'} MiB, of which ${mem.lastRssFileMiB ?? '?'} MiB file-backed (LMDB's memory map, page cache that grows with the WAL and snapshots written).`,
    );
  }
  const ubs = figuresOf(r.ubscore);
  if (ubs !== null) {
    out.push(
      `- (c) UBSCore alone: ${n(ubs.commands, 0)} EXTERNAL_DEPOSIT commands, ${n(ubs.inFlight, 0)} in flight from one UbsClient, timed after ${n(ubs.warmupCommands, 0)} sent first (those ran at ${n(ubs.warmupCommandsPerSecond, 0)}/s, the thread cold): ${n(ubs.commandsPerSecond, 0)} durable commands/s, ${ubs.commandsPerBatch} commands per WAL batch (${n(ubs.elapsedMs / Math.max(ubs.walBatches, 1))} ms per batch), ${ubs.notApplied} not applied. ` +
        `CPU meanwhile (cores): ${ubs.cpu.serviceThreads.map((t) => `${t.name} ${t.cores}`).join(', ')}; machine ${ubs.cpu.machineCores}.`,
    );
  }
  const rs = figuresOf(r.restart);
  if (rs !== null)
    out.push(
      `- (d) Restart: ${n(rs.accounts, 0)} accounts (snapshot load ${n(rs.snapshotLoadMs, 0)} ms) + ${n(rs.recordsAfterSnapshot, 0)} WAL records (replay ${n(rs.replayMs, 0)} ms, ${n(rs.recordsPerSecond, 0)} records/s): ${n(rs.totalRestartMs, 0)} ms in all.`,
    );
  const rec = figuresOf(r.recovery);
  if (rec !== null) {
    out.push(
      `- (e) Recovery: ${n(rec.finished, 0)} of ${n(rec.stuck, 0)} stuck transfers final in ${n(rec.recoveryMs, 0)} ms (service start ${n(rec.startupMs, 0)} ms, ${n(rec.transfersPerSecond, 0)} transfers/s)` +
        (rec.completed ? '.' : `; stopped at the deadline, projected total ${n(rec.projectedMs, 0)} ms.`),
    );
  }
  const g = r.rebuild === undefined ? null : figuresOf(r.rebuild);
  if (g !== null)
    out.push(
      `- (g) Rebuild from PostgreSQL into an empty DATA_DIR: ${n(g.accounts, 0)} accounts (a snapshot, their opening records archived: ${n(g.archivedEntries, 0)} processed entries) + ${n(g.records, 0)} records in spot_log (${n(g.blocks, 0)} blocks of ${g.blockRecords}): ` +
        `rebuild ${n(g.rebuildMs, 0)} ms + UBSCore open ${n(g.openMs, 0)} ms (snapshot load ${n(g.snapshotLoadMs, 0)}, replay ${n(g.replayMs, 0)}) = ${n(g.totalMs, 0)} ms, ${g.withinMsMax ? 'within' : '**over**'} ${n(TARGETS.rebuildMsMax, 0)} ms; ` +
        `conservation of the rebuilt ledger ${g.conservation.differences} differences over ${n(g.conservation.accountsChecked, 0)} accounts (${n(g.conservation.ms, 0)} ms), ${n(g.keysChecked, 0)} sampled keys at their seq. Loading the database took ${n(g.loadMs, 0)} ms (not timed).`,
    );
  const disk = r.disk === undefined ? null : figuresOf(r.disk);
  const mib = (bytes: number): string => n(bytes / (1024 * 1024));
  if (disk !== null && disk.perMillionTransfers !== null) {
    const pm = disk.perMillionTransfers;
    out.push(
      `- Disk (UBSCore's LMDB after the load levels, ${n(disk.committed, 0)} transfers committed), MiB per million transfers: WAL ${mib(pm.wal)}, processed set ${mib(pm.processed)}, snapshots ${mib(pm.snapshot)}; ` +
        `the data file ${mib(pm.dataFile)} (free pages included). WAL records a snapshot covers are pruned, so the WAL figure is what stays between snapshots.`,
    );
  }
  const pg = disk?.postgres ?? null;
  if (pg !== null) {
    const parts = pg.perMillionTransfers.filter((r) => r.bytes > 0).map((r) => `${r.relation} ${mib(r.bytes)}`);
    out.push(
      `- PostgreSQL's growth over the load levels (${n(pg.committed, 0)} transfers committed), MiB per million transfers: ${mib(pg.totalPerMillionTransfers)} in all; ${parts.join(', ')}.`,
    );
  }
  const cons = figuresOf(r.conservation);
  if (cons !== null)
    out.push(
      `- Conservation (GET /admin/v1/invariant after the load): ok=${cons.ok}, ${cons.differences} differences, ${n(cons.accountsChecked, 0)} accounts, ${n(cons.transfersExamined, 0)} transfers examined, WAL seq ${n(cons.walSeq, 0)}, halted=${cons.halted}.`,
    );
  const notes = [
    partNote('Memory', r.memory),
    partNote('(a)', r.pgCeiling),
    partNote('(b)', r.httpCeiling),
    partNote('(c)', r.ubscore),
    partNote('(d)', r.restart),
    partNote('(e)', r.recovery),
    ...(r.rebuild === undefined ? [] : [partNote('(g)', r.rebuild)]),
    partNote('Conservation', r.conservation),
    ...(r.disk === undefined ? [] : [partNote('Disk', r.disk)]),
  ];
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
      const fns = t.topFunctions
        .slice(0, 5)
        .map(
          (f) => `\`${f.name}\`${f.via === undefined || f.name.includes(f.via) ? '' : ` (from ${f.via})`} ${(f.share * 100).toFixed(1)}%`,
        )
        .join(', ');
      const mods = t.topModules
        .slice(0, 5)
        .map((m) => `${m.name} ${(m.share * 100).toFixed(1)}%`)
        .join(', ');
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

/** "A→B 1, C→D 0.98": moves per committed transfer, most frequent first. */
function transitionText(transitions: Readonly<Record<string, number>>, committed: number): string {
  const moves = Object.entries(transitions).sort((a, b) => b[1] - a[1]);
  if (moves.length === 0 || committed <= 0) return 'not counted';
  return moves.map(([move, k]) => `${move} ${n(k / committed, 2)}`).join(', ');
}

/**
 * What one committed transfer cost at the main level and what that cost is made of, all measured
 * in this run: facts, so the section cannot recommend work the code already does.
 */
function leverLines(r: BenchReport): string[] {
  const row = r.levels.find((l) => l.connections === TARGETS.mainConnections) ?? r.levels[r.levels.length - 1];
  const out = ['### What would move the number', ''];
  if (row === undefined) return [...out, '- No connection level was measured.', ''];
  const s = row.service;
  const a = row.pg?.postgresJs;
  out.push(
    `- One committed transfer at ${row.connections} connections, against one baseline (a) transaction in brackets: ${s.pgWriteTxnsPerCommitted ?? '?'} PostgreSQL write transactions (1), ` +
      `${s.pgStatementsPerCommitted ?? '?'} statements (${a?.statementsPerOp ?? '?'}), ${n(s.pgWalBytesPerCommitted, 0)} WAL bytes (${n(a?.walBytesPerOp, 0)}), PostgreSQL CPU ${n(s.postgresCpuMsPerCommitted, 3)} ms (${n(a?.postgresCpuMsPerOp, 3)} ms); service CPU ${n(s.serviceCpuMsPerCommitted, 3)} ms.`,
    `- State moves per committed transfer (transfer_fsm_transitions_total, spec 004's fsm_state_count, over the window): ${transitionText(s.transitions, s.committed)}.`,
  );
  const top = s.statements?.byStatement ?? [];
  if (top.length > 0 && s.committed > 0) {
    const each = top.slice(0, 6).map((t) => `${n(t.calls / s.committed, 2)} × \`${t.query}\` (${n(t.execMs / s.committed, 3)} ms)`);
    const costly = [...top]
      .sort((x, y) => y.execMs - x.execMs)
      .slice(0, 6)
      .map((t) => `\`${t.query}\` ${n(t.execMs / s.committed, 3)} ms (${n(t.calls / s.committed, 2)} calls)`);
    out.push(
      `- The service's most frequent statements, per committed transfer (calls × statement, then server execution ms): ${each.join('; ')}.`,
      `- The same by server execution time per committed transfer, the costliest first: ${costly.join('; ')}.`,
    );
  }
  const chain = figuresOf(r.chain)?.find((c) => c.connections === row.connections && c.starts === 'together');
  if (chain !== undefined)
    out.push(
      `- The chain alone (f) at ${row.connections} connections: ${n(chain.committedPerSecond)} committed/s (${ratio(chain.committedPerSecond, a?.perSecond) ?? '—'} × (a)), ` +
        `PostgreSQL CPU ${n(chain.postgresCpuMsPerCommitted, 3)} ms and ${n(chain.chainCpuMsPerCommitted, 3)} ms of its own per transfer, ${chain.latencyMs.p50} ms p50; ` +
        `the service did ${ratio(s.committedPerSecond, chain.committedPerSecond) ?? '—'} × of that, at ${s.latencyMs.p50} ms p50.`,
    );
  out.push(`- Busiest modules in the profile: main thread ${topModules(r, 'main')}; a coordinator ${topModules(r, 'coordinator')}.`, '');
  return out;
}

/** UBSCore's log in PostgreSQL, per level of the service phase: what a batch waited for, and the log's share of PostgreSQL's work. */
function spotLogLevelRows(r: BenchReport): string[] {
  const rows = r.levels.flatMap((l) => {
    const s = l.service;
    const g = s.spotLog;
    if (g === null) return [];
    const waited =
      g.pgAppendMsMean === null || g.lmdbSyncMsMean === null ? '—' : g.pgAppendMsMean > g.lmdbSyncMsMean ? 'PostgreSQL' : 'LMDB';
    return [
      `| ${l.connections} | ${n(s.committedPerSecond)} | ${s.pgWriteTxnsPerCommitted ?? '—'} | ${n(g.logWriteTxnsPerCommitted, 3)} (${n(g.logShareOfWriteTxns === null ? null : g.logShareOfWriteTxns * 100, 0)} %) | ` +
        `${n(g.spotLogInsertsPerCommitted, 3)} (${n(g.spotLogInsertExecMsPerCommitted, 4)} ms) | ${n(s.postgresCpuMsPerCommitted, 3)} | ${n(g.pgAppends, 0)} | ${n(g.lmdbSyncMsMean, 3)} / ${n(g.pgAppendMsMean, 3)} | ${waited} | ${g.pgAppendRetries} |`,
    ];
  });
  if (rows.length === 0) return ['The service phase ran without the PostgreSQL log (SPOT_LOG=off), or measured no level.', ''];
  return [
    "| conn. | committed/s | PG write txns per transfer | of them the log's (share) | spot_log inserts per transfer (server ms) | PG CPU ms per transfer | batches appended | mean wait per batch: LMDB sync / PostgreSQL append ms | the slower | append retries |",
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    "A batch is answered once LMDB and PostgreSQL's spot_log both hold it, so it waits for the slower of the two; the means are from the service's histograms transfer_ubscore_wal_sync_seconds and transfer_ubscore_pg_log_append_seconds over each level's window. " +
      'The log writes one transaction per batch (one INSERT INTO spot_log per WAL block, counted by pg_stat_statements); PostgreSQL CPU is all of its processes, the log included: what the log adds to it is the comparison below.',
    '',
  ];
}

/** The log per level, then the same level with UBSCore's log in PostgreSQL and without it. */
function spotLogLines(r: BenchReport): string[] {
  const out = ["## UBSCore's log in PostgreSQL (SPOT_LOG)", '', ...spotLogLevelRows(r)];
  const c = figuresOf(r.spotLog);
  if (c === null) return [...out, partNote('SPOT_LOG comparison', r.spotLog) ?? '', ''];
  const row = (name: string, l: typeof c.off) =>
    `| ${name} | ${n(l.committedPerSecond)} | ${l.latencyP99Ms} | ${n(l.pgWriteTxnsPerCommitted, 2)} | ${n(l.postgresCpuMsPerCommitted, 3)} | ${n(l.serviceCpuMsPerCommitted, 3)} |`;
  const added = (a: number | null, b: number | null, digits: number): string => (a === null || b === null ? '—' : n(a - b, digits));
  return [
    ...out,
    `At ${c.connections} connections: postgres over off ${c.ratio ?? '—'} (target ≥ ${c.ratioMin}: ${c.met === null ? 'n/a' : c.met ? 'met' : 'NOT met'}); ` +
      `the log adds ${added(c.postgres.postgresCpuMsPerCommitted, c.off.postgresCpuMsPerCommitted, 3)} ms of PostgreSQL CPU and ${added(c.postgres.pgWriteTxnsPerCommitted, c.off.pgWriteTxnsPerCommitted, 2)} write transactions per transfer.`,
    '',
    '| SPOT_LOG | committed/s | p99 ms | PG write txns per transfer | PG CPU ms per transfer | service CPU ms per transfer |',
    '|---|---|---|---|---|---|',
    row('postgres', c.postgres),
    row('off', c.off),
    '',
  ];
}

/** The main level with four coordinator shards beside one. */
function shardLines(r: BenchReport): string[] {
  const out = ['## Coordinator shards: one and four', ''];
  const c = figuresOf(r.shards);
  if (c === null) return [...out, partNote('four-shard comparison', r.shards) ?? '', ''];
  const row = (name: string, l: typeof c.one) =>
    `| ${name} | ${n(l.committedPerSecond)} | ${l.latencyP99Ms} | ${n(l.pgWriteTxnsPerCommitted, 2)} | ${n(l.postgresCpuMsPerCommitted, 3)} | ${n(l.serviceCpuMsPerCommitted, 3)} |`;
  return [
    ...out,
    `At ${c.connections} connections, PostgreSQL CPU per committed transfer with ${c.shards} shards over one: ${c.pgCpuRatio ?? '—'} (target ≤ ${c.pgCpuRatioMax}: ${c.met === null ? 'n/a' : c.met ? 'met' : 'NOT met'}). ` +
      "One shard is the service phase's own level (the default configuration); four is the service started again with COORDINATORS=4, seeded and warmed the same way.",
    '',
    '| COORDINATORS | committed/s | p99 ms | PG write txns per transfer | PG CPU ms per transfer | service CPU ms per transfer |',
    '|---|---|---|---|---|---|',
    row('1', c.one),
    row(String(c.shards), c.four),
    '',
  ];
}

/** A standby following the service's log during the memory run. */
function standbyLines(r: BenchReport): string[] {
  const out = ['## The standby under load', ''];
  const s = figuresOf(r.standby);
  if (s === null) return [...out, partNote('Standby', r.standby) ?? '', ''];
  const mem = figuresOf(r.memory);
  return [
    ...out,
    `A ROLE=standby process on the service's PostgreSQL, its DATA_DIR rebuilt from PostgreSQL as it started (${n(s.startMs, 0)} ms until it held the service's seq), followed the service's spot_log during the memory run ` +
      `(${r.parameters.memoryS} s at ${mem?.connections ?? 64} connections${mem === null ? '' : `, ${n(mem.committedPerSecond)} committed/s`}); its /readyz was read every 150 ms (${n(s.samples, 0)} readings, ${s.failedPolls} without an answer).`,
    '',
    '| lag | p50 | p99 | max |',
    '|---|---|---|---|',
    `| records | ${n(s.lagRecords.p50, 0)} | ${n(s.lagRecords.p99, 0)} | ${n(s.lagRecords.max, 0)} |`,
    `| ms | ${n(s.lagMs.p50, 0)} | ${n(s.lagMs.p99, 0)} | ${n(s.lagMs.max, 0)} |`,
    '',
    `The standby used ${s.standbyCores} cores meanwhile; after the load it reached the service's last seq (${n(s.primarySeq, 0)}) in ${n(s.catchUpMs, 0)} ms, and was stopped before the service. ` +
      `Owner epoch before and after: ${s.ownerEpochBefore} and ${s.ownerEpochAfter}${s.ownerEpochBefore === s.ownerEpochAfter ? '' : ' (**changed**: the ledger was taken over)'}. ` +
      'lag_records is how far its last applied seq was behind the last seq of spot_log it read; lag_ms how long it had been behind without catching up, from the first read that found PostgreSQL ahead (0 when caught up).',
    '',
  ];
}

export function renderSummary(r: BenchReport): string {
  return [
    ...header(r),
    ...targetsTable(r),
    ...levelsTable(r),
    ...chainTable(r),
    ...batchPlanLines(r),
    ...spotLogLines(r),
    ...shardLines(r),
    ...standbyLines(r),
    ...fixedRateLines(r),
    ...componentLines(r),
    ...profileLines(r),
    ...leverLines(r),
  ].join('\n');
}
