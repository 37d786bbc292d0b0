// `make test-patroni`: the service rides a replicated PostgreSQL's switchover and failover. One
// etcd and two Patroni nodes in synchronous replication (./cluster.ts), a service primary whose
// DATABASE_URL names both nodes with target_session_attrs=read-write, 8 clients sending transfers
// both ways. Under that load: a Patroni switchover, then a SIGKILL of the leader's Patroni and
// postmaster (the killed node restarted once the other leads, to rejoin as the synchronous
// standby). Checks: the service is ready and commits again after each, within READY_MS_MAX; the
// owner keeps its process and claims no epoch per fault (no takeover storm); every answer names
// the epoch of record; nothing acknowledged is lost (make drill's checks on the stores, MON-003
// with 0 differences). Prints a JSON report with the time to ready and the errors clients saw;
// exits 1 on any violation. Installs Debian's patroni, etcd-server and postgresql when missing.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSql, type Sql } from '../../src/db/sql.js';
import type { Violation } from '../drill/checks.js';
import { seed, userIds } from '../drill/drill.js';
import { Balancer } from '../failover/lb.js';
import { newTally, startLoad } from '../failover/load.js';
import { type Running, serviceEnv, startService, waitReady } from '../failover/processes.js';
import { verifyFailover } from '../failover/verify.js';
import { freePort } from '../support/ports.js';
import { type Cluster, sleep, startCluster } from './cluster.js';
import { type FaultWindow, measureWindow } from './window.js';

/** PostgreSQL's own failover takes up to ttl (5 s); the service then reconnects and proves its lease. */
const READY_MS_MAX = 20_000;
const START_TIMEOUT_MS = 90_000;
const LOAD_MS = 5_000;
const USERS = 20;
const CLIENTS = 8;

type RideReport = {
  readonly clusterUpMs: number;
  readonly faults: readonly FaultWindow[];
  readonly epochs: { readonly before: number; readonly after: number };
  readonly transfers: number;
  readonly committedSeenByClients: number;
  readonly load: { sent: number; answered: number; retries: number; unanswered: number };
  readonly violations: readonly Violation[];
};

export async function ride(log: (line: string) => void): Promise<RideReport> {
  const t0 = Date.now();
  const cluster = await startCluster();
  const clusterUpMs = Date.now() - t0;
  log(`cluster up in ${clusterUpMs} ms: ${JSON.stringify(await cluster.members())}`);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-patroni-svc-'));
  await fs.chmod(dir, 0o755);
  const sql = openSql(cluster.url, { max: 2, application: 'patroni ride' });
  let primary: Running | null = null;
  try {
    const violations: Violation[] = [...(await standbyRefused(cluster))];
    primary = await startService({ name: 'a', dataDir: dir, port: await freePort() }, 'primary', serviceEnv(cluster.url), START_TIMEOUT_MS);
    if ((await waitReady(primary, START_TIMEOUT_MS)) === null) throw new Error(`the service did not get ready: ${primary.stderrTail()}`);
    await seed(primary.instance.base, USERS);
    const before = await epochOf(sql);
    const running = primary;
    const lb = new Balancer(() => (running.ended() === null ? [running.instance] : []));
    const tally = newTally();
    const users = userIds(USERS);
    const load = startLoad(lb, users, CLIENTS, tally);
    const faults: FaultWindow[] = [];
    const probe = { base: running.instance.base, lb, tally, users };
    const measure: Measure = (fault, at, newLeader) => measureWindow(fault, probe, at, newLeader, READY_MS_MAX * 3);
    await sleep(LOAD_MS);
    faults.push(await switchover(cluster, measure, log));
    await cluster.waitHealthy(60_000);
    await sleep(LOAD_MS);
    faults.push(await killLeader(cluster, measure, log));
    await cluster.waitHealthy(60_000);
    await sleep(LOAD_MS);
    await load.stop();
    const after = await epochOf(sql);
    violations.push(...judge(faults, { before, after }, primary, lb));
    const verified = await verifyFailover(sql, primary, users, tally);
    violations.push(...verified.violations);
    const { committed, anomalies: _a, ...counts } = tally;
    return {
      clusterUpMs,
      faults,
      epochs: { before, after },
      transfers: verified.transfers,
      committedSeenByClients: committed.size,
      load: counts,
      violations,
    };
  } finally {
    await sql.end({ timeout: 5 });
    if (primary !== null) await stopService(primary);
    await cluster.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

type Measure = (fault: string, at: number, newLeader: Promise<unknown>) => Promise<FaultWindow>;

async function switchover(cluster: Cluster, measure: Measure, log: (line: string) => void): Promise<FaultWindow> {
  const at = Date.now();
  const moved = cluster.switchover();
  const w = await measure('switchover', at, moved);
  const { from, to } = await moved;
  log(`switchover ${from} -> ${to} done by Patroni in ${w.leaderMs} ms`);
  log(`switchover: ${JSON.stringify(w)}`);
  return w;
}

async function killLeader(cluster: Cluster, measure: Measure, log: (line: string) => void): Promise<FaultWindow> {
  const at = Date.now();
  const killed = await cluster.killLeader();
  const failover = (async () => {
    const next = await cluster.waitLeaderOtherThan(killed.name, 60_000);
    log(`leader ${killed.name} SIGKILLed; ${next} leads after ${Date.now() - at} ms; restarting ${killed.name}'s Patroni`);
    // Its own Patroni was killed too: started again, the node rejoins (rewound) as the synchronous standby.
    await cluster.restartNode(killed.name);
  })();
  const w = await measure('leader SIGKILL', at, failover);
  log(`leader SIGKILL: ${JSON.stringify(w)}`);
  return w;
}

/**
 * A pool whose URL names the standby first must still land on the leader: postgres.js as shipped
 * took a PostgreSQL 15 hot standby for read-write (patches/postgres+3.4.9.patch).
 */
async function standbyRefused(cluster: Cluster): Promise<Violation[]> {
  const leader = await cluster.leader();
  const ordered = [...cluster.nodes].sort((a, b) => Number(a.name === leader) - Number(b.name === leader));
  const hosts = ordered.map((n) => `127.0.0.1:${n.pgPort}`).join(',');
  const url = cluster.url.replace(/@[^/]+\//, `@${hosts}/`);
  const sql = openSql(url, { max: 1, application: 'patroni ride standby first' });
  try {
    const [row] = await sql<{ standby: boolean }[]>`SELECT pg_is_in_recovery() AS standby`;
    return row?.standby === false
      ? []
      : [{ check: 'read-write', detail: `a read-write URL naming the standby first landed on it (${url})` }];
  } finally {
    await sql.end({ timeout: 5 });
  }
}

async function epochOf(sql: Sql): Promise<number> {
  const [row] = await sql<{ epoch: number }[]>`SELECT epoch::int AS epoch FROM ledger_owner`;
  if (row === undefined) throw new Error('ledger_owner has no row');
  return row.epoch;
}

/** Ready again within READY_MS_MAX after each fault; the same process owns; no epoch claimed per fault; answers name the epoch of record. */
function judge(faults: readonly FaultWindow[], epochs: { before: number; after: number }, primary: Running, lb: Balancer): Violation[] {
  const out: Violation[] = [];
  for (const f of faults) {
    if (f.writesBackMs === null || f.writesBackMs > READY_MS_MAX)
      out.push({ check: 'writes-back', detail: `${f.fault}: no transfer committed within ${READY_MS_MAX} ms (${f.writesBackMs})` });
    if (f.readyAgainMs === null || f.readyAgainMs > READY_MS_MAX)
      out.push({ check: 'ready-again', detail: `${f.fault}: /readyz not 200 within ${READY_MS_MAX} ms (${f.readyAgainMs})` });
  }
  if (primary.ended() !== null)
    out.push({ check: 'owner', detail: `the service ended: ${JSON.stringify(primary.ended())} ${primary.stderrTail()}` });
  if (epochs.after !== epochs.before)
    out.push({
      check: 'epochs',
      detail: `the owner epoch went from ${epochs.before} to ${epochs.after}: a PostgreSQL failover made the owner claim again`,
    });
  const named = new Set(lb.recorded.map((a) => a.ownerEpoch));
  if (named.size !== 1 || !named.has(String(epochs.after)))
    out.push({ check: 'answer-epoch', detail: `answers named epochs ${[...named].join(', ')}, expected only ${epochs.after}` });
  return out;
}

async function stopService(svc: Running): Promise<void> {
  svc.signal('SIGTERM');
  const timer = setTimeout(() => svc.signal('SIGKILL'), 10_000);
  await svc.exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const log = (l: string) => process.stdout.write(`${l}\n`);
  const report = await ride(log);
  process.stdout.write(`\n${JSON.stringify(report, null, 2)}\n`);
  const times = report.faults.map((f) => `${f.fault}: writes back in ${f.writesBackMs} ms, ready again in ${f.readyAgainMs} ms`).join('; ');
  process.stdout.write(
    `\npatroni ride: ${times}; ${report.transfers} transfers, ${report.committedSeenByClients} commits seen by clients, epochs ${report.epochs.before} -> ${report.epochs.after}, ${report.violations.length} violations\n`,
  );
  process.exit(report.violations.length === 0 ? 0 : 1);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`patroni ride failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  });
}
