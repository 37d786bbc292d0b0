// `make chaos`: a seeded nemesis against the whole production shape, with an independent checker.
// One etcd and two Patroni nodes in synchronous replication (../patroni/cluster.ts); a service
// primary and a standby (ROLE=standby), each reaching PostgreSQL through its own TCP proxy
// (proxy.ts: one listener per PostgreSQL node, DATABASE_URL naming both with
// target_session_attrs=read-write); 16 clients through the Balancer sending transfers both ways,
// deposits and withdrawals, every attempt and answer appended to history.jsonl in the run's
// directory. For CHAOS_SECONDS (default 600) the nemesis (schedule.ts, faults.ts, nemesis.ts)
// makes a fault every few seconds and heals it: SIGKILL or SIGSTOP of etcd, a Patroni node, the
// service owner or standby; a PostgreSQL restart; a switchover; a partition or a slow link between
// one service process and PostgreSQL; and measures the time until the service is ready again.
// After the last heal the clients finish, and check.ts judges the history against the stores.
// CHAOS_SEED (default random, printed) replays the schedule; CHAOS_REPORT=1 writes
// bench/results/chaos-<time>.{json,md}. Exits 1 on any violation or missed target (targets.ts), printing
// the seed and schedule. The run directory (history and logs) is kept when the run fails, or with
// CHAOS_KEEP=1.

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql } from '../../src/db/sql.js';
import type { Violation } from '../drill/checks.js';
import { seed as seedUsers, userIds } from '../drill/drill.js';
import { Balancer } from '../failover/lb.js';
import { type Cluster, sleep, startCluster } from '../patroni/cluster.js';
import { checkHistory, readSnapshot } from './check.js';
import { type ClientCounts, startClients } from './clients.js';
import { HistoryFile, readHistory } from './history.js';
import { type FaultRecord, READY_MS_MAX, runNemesis } from './nemesis.js';
import { type ChaosReport, summarize, writeReport } from './report.js';
import { schedule, seedFrom } from './schedule.js';
import { judgeTargets } from './targets.js';
import { type Services, startServices } from './services.js';

const USERS = 20;
const CLIENTS = 16;
const SECONDS_MAX = 86_400;
const FINISH_MS = 120_000;
const OWNER_WAIT_MS = 120_000;

type Options = { readonly seed: number; readonly seconds: number; readonly log: (line: string) => void };

export async function runChaos(o: Options): Promise<{ report: ChaosReport; dir: string }> {
  const startedAt = new Date().toISOString();
  o.log(`seed ${o.seed} (replay: CHAOS_SEED=${o.seed} CHAOS_SECONDS=${o.seconds} make chaos)`);
  const cluster = await startCluster();
  const dir = fs.mkdtempSync('/tmp/transfer-chaos-');
  fs.chmodSync(dir, 0o755);
  o.log(`cluster up; run directory ${dir}`);
  let services: Services | null = null;
  const history = new HistoryFile(path.join(dir, 'history.jsonl'));
  try {
    const via = (ports: readonly number[]) => cluster.url.replace(/@[^/]+\//, `@${ports.map((p) => `127.0.0.1:${p}`).join(',')}/`);
    services = await startServices(
      dir,
      cluster.nodes.map((n) => n.pgPort),
      via,
      o.log,
    );
    const owner = await waitOwner(services);
    await seedUsers(owner, USERS);
    const lb = new Balancer(services.instances);
    const clients = startClients(lb, history, userIds(USERS), CLIENTS, `c${Date.now().toString(36)}`);
    const probes: ClientCounts = { sent: 0, final: 0, attempts: 0, noAnswer: 0, status5xx: 0, givenUp: 0 };
    const stage = { cluster, services };
    const ctx = { stage, lb, history, probeUser: userIds(USERS)[0] as bigint, counts: probes, log: o.log };
    const faults = await runNemesis(ctx, schedule(o.seed).next, Date.now() + o.seconds * 1_000);
    o.log(`nemesis done: ${faults.length} faults; the clients finish their requests`);
    await clients.stop();
    history.close();
    const { violations, transfers } = await judge(cluster, services, path.join(dir, 'history.jsonl'), faults);
    const restarts = Object.fromEntries(services.slots.map((s) => [s.name, s.restarts.length]));
    const report: ChaosReport = {
      seed: o.seed,
      seconds: o.seconds,
      startedAt,
      ...summarize(faults),
      clients: clients.counts,
      probes,
      historyEntries: history.count,
      transfers,
      serviceRestarts: restarts,
      faults,
      violations,
      targets: judgeTargets(faults, o.seconds),
    };
    return { report, dir };
  } finally {
    // Each step on its own, so that one that throws never leaves the others' processes running.
    const noted = (error: unknown) => o.log(`stopping: ${error instanceof Error ? error.message : String(error)}`);
    try {
      history.close();
    } catch (error) {
      noted(error);
    }
    await services?.stop().catch(noted);
    keepLogs(cluster, dir, noted);
    await cluster.stop().catch(noted);
  }
}

/** Copies etcd's and each Patroni node's log into the run's directory, kept when the run fails. */
function keepLogs(cluster: Cluster, dir: string, noted: (error: unknown) => void): void {
  for (const [name, file] of [['etcd', cluster.etcd.logFile], ...cluster.nodes.map((n) => [n.name, n.patroni.logFile])] as const) {
    try {
      fs.copyFileSync(file, path.join(dir, `${name}.log`));
    } catch (error) {
      noted(error);
    }
  }
}

async function waitOwner(services: Services): Promise<string> {
  const deadline = Date.now() + OWNER_WAIT_MS;
  while (Date.now() < deadline) {
    const owner = await services.owner();
    if (owner?.running != null) return owner.running.instance.base;
    await sleep(200);
  }
  throw new Error(`no service process answered /readyz 200 within ${OWNER_WAIT_MS} ms`);
}

/** The checker on the history file and the stores, read through a connection of its own; plus each fault's time to ready. */
async function judge(cluster: Cluster, services: Services, file: string, faults: readonly FaultRecord[]) {
  const violations: Violation[] = [];
  for (const f of faults)
    if (f.skipped === undefined && f.readyAfterHealMs === null)
      violations.push({ check: 'ready', detail: `fault ${f.n} ${f.kind} of ${f.target}: not ready within ${READY_MS_MAX} ms of the heal` });
  await cluster.waitHealthy(OWNER_WAIT_MS).catch(() => violations.push({ check: 'cluster', detail: 'Patroni not healthy at the end' }));
  const base = await waitOwner(services).catch(() => null);
  const sql = openSql(cluster.url, { max: 2, application: 'chaos checker' });
  try {
    const snapshot = await readSnapshot(sql, base, FINISH_MS);
    violations.push(...checkHistory(readHistory(file), snapshot));
    return { violations, transfers: snapshot.transfers.length };
  } finally {
    await sql.end({ timeout: 5 });
  }
}

function secondsFrom(text: string | undefined): number {
  if (text === undefined || text.trim() === '') return 600;
  const s = Number(text);
  if (!Number.isInteger(s) || s < 1 || s > SECONDS_MAX)
    throw new Error(`CHAOS_SECONDS must be a whole number from 1 to ${SECONDS_MAX}: ${text}`);
  return s;
}

async function main(): Promise<void> {
  const log = (l: string) => process.stdout.write(`${new Date().toISOString().slice(11, 19)} ${l}\n`);
  const seed = seedFrom(process.env.CHAOS_SEED);
  const seconds = secondsFrom(process.env.CHAOS_SECONDS);
  const { report, dir } = await runChaos({ seed, seconds, log });
  const { faults: _f, ...short } = report;
  process.stdout.write(`\n${JSON.stringify(short, null, 2)}\n`);
  if (process.env.CHAOS_REPORT === '1') log(`report written: ${writeReport(report).join(', ')}`);
  const missed = report.targets.filter((t) => t.met === false);
  for (const t of report.targets) log(`${t.met === null ? 'not judged' : t.met ? 'met' : 'MISSED'}: ${t.name}: ${t.detail}`);
  const failed = report.violations.length > 0 || missed.length > 0;
  if (failed) {
    process.stdout.write(`\nschedule:\n${report.faults.map((f) => JSON.stringify(f)).join('\n')}\n`);
    process.stdout.write(
      `history, the service processes' logs (slot-*.log) and the etcd and Patroni logs kept in ${dir}\nreplay: CHAOS_SEED=${seed} CHAOS_SECONDS=${seconds} make chaos\n`,
    );
  } else if (process.env.CHAOS_KEEP === '1') log(`history and logs kept in ${dir}`);
  else fs.rmSync(dir, { recursive: true, force: true });
  process.stdout.write(
    `\nchaos: seed ${seed}, ${seconds} s, ${report.faultsApplied} faults (${report.faultsSkipped} skipped), ready after heal p50 ${report.readyAfterHeal.p50Ms} ms max ${report.readyAfterHeal.maxMs} ms, ${report.transfers} transfers, ${report.violations.length} violations, ${missed.length} targets missed\n`,
  );
  process.exit(failed ? 1 : 0);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`chaos failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  });
}
