// A replicated PostgreSQL of Debian's packages, as production runs it (docs/operations.md,
// "Production topology: Patroni"): one etcd and two PostgreSQL 15 nodes managed by Patroni in
// synchronous replication, each node as the `postgres` user with its own data directory, ports and
// REST port, all on loopback under one temporary directory. The HA engine is Patroni's: this file
// only starts the processes, asks Patroni's REST API, and sends signals. Every process's pid is
// exposed, so a nemesis can kill, stop and resume each one.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../support/ports.js';
import { installed, pgBinDir } from './install.js';
import { type Member, members, restCall } from './rest.js';
import { alive, endProc, giveTo, postmasterPid, type Proc, type RunAs, runAsFor, signalPid, startProc } from './proc.js';
import { PROJECT_ROOT } from '../support/process.js';

const TEMPLATE = path.join(PROJECT_ROOT, 'ops', 'patroni', 'node.yml');
const SCOPE = 'transfer';
export const DATABASE = 'transfer';
const POLL_MS = 100;
const STOP_GRACE_MS = 15_000;

export type Node = {
  readonly name: string;
  readonly dir: string;
  readonly dataDir: string;
  readonly pgPort: number;
  readonly restPort: number;
  readonly configFile: string;
  /** The Patroni process now running for this node (a restart replaces it). */
  patroni: Proc;
};

export type Cluster = {
  readonly dir: string;
  /** The etcd process now running (restartEtcd replaces it). */
  readonly etcd: Proc;
  readonly nodes: readonly Node[];
  /** The multi-host URL of the service's database: both nodes, `target_session_attrs=read-write`. */
  readonly url: string;
  /** The same, on the `postgres` database. */
  readonly adminUrl: string;
  /** The name of the node holding the leader key (null while none does). */
  readonly leader: () => Promise<string | null>;
  readonly members: () => Promise<Member[]>;
  /** Resolves once there is a running leader and a running synchronous standby; returns the leader's name. */
  readonly waitHealthy: (timeoutMs: number) => Promise<string>;
  /** A Patroni switchover from the leader to the other node; resolves when Patroni has done it. */
  readonly switchover: () => Promise<{ from: string; to: string }>;
  /** SIGKILL of the leader's Patroni and its postmaster; returns the node killed. */
  readonly killLeader: () => Promise<Node>;
  /** Resolves the new leader's name once a node other than `former` runs as leader. */
  readonly waitLeaderOtherThan: (former: string, timeoutMs: number) => Promise<string>;
  /** Sends `signal` to the node's Patroni and, with `postmaster`, its postmaster. */
  readonly signalNode: (name: string, signal: NodeJS.Signals, opts?: { postmaster?: boolean }) => void;
  /** The node's postmaster pid, or null when none runs. */
  readonly postmasterPid: (name: string) => number | null;
  /** Starts the node's Patroni again (after a kill); it rejoins by itself, rewinding if it must. */
  readonly restartNode: (name: string) => Promise<void>;
  /** Starts etcd again on its data directory and ports, once the one running ended (after a kill). */
  readonly restartEtcd: () => Promise<void>;
  /** Stops every process and removes the directory. */
  readonly stop: () => Promise<void>;
};

export type ClusterOptions = {
  /** Patroni's synchronous_mode_strict: writes wait while no synchronous standby is alive. Default true. */
  readonly syncStrict?: boolean;
  readonly startTimeoutMs?: number;
};

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  await installed();
  const runAs = runAsFor();
  const dir = fs.mkdtempSync('/tmp/transfer-patroni-');
  fs.chmodSync(dir, 0o755);
  const password = randomBytes(18).toString('hex');
  const etcdPorts = { client: await freePort(), peer: await freePort() };
  const etcd = { proc: await startEtcd(dir, etcdPorts, runAs), ports: etcdPorts };
  const nodes: Node[] = [];
  const cluster = makeCluster(dir, etcd, nodes, password, runAs);
  try {
    const settings = { etcdPort: etcdPorts.client, password, syncStrict: opts.syncStrict ?? true };
    for (const name of ['pg1', 'pg2']) nodes.push(await startNode(dir, name, settings, runAs));
    await cluster.waitHealthy(opts.startTimeoutMs ?? 120_000);
    await createDatabase(cluster.adminUrl);
    return cluster;
  } catch (error) {
    await cluster.stop();
    throw error;
  }
}

type EtcdPorts = { readonly client: number; readonly peer: number };

function makeCluster(dir: string, etcd: { proc: Proc; readonly ports: EtcdPorts }, nodes: Node[], password: string, runAs: RunAs): Cluster {
  const hosts = () => nodes.map((n) => `127.0.0.1:${n.pgPort}`).join(',');
  const url = (db: string) => `postgres://postgres:${password}@${hosts()}/${db}?target_session_attrs=read-write`;
  const node = (name: string): Node => {
    const found = nodes.find((n) => n.name === name);
    if (found === undefined) throw new Error(`no node ${name}`);
    return found;
  };
  const anyMembers = async (): Promise<Member[]> => {
    for (const n of nodes) {
      const found = await members(n.restPort).catch(() => null);
      if (found !== null) return found;
    }
    return [];
  };
  const leader = async () => (await anyMembers()).find((m) => m.role === 'leader' && m.state === 'running')?.name ?? null;
  const signalNode = (name: string, signal: NodeJS.Signals, o: { postmaster?: boolean } = {}) => {
    const n = node(name);
    n.patroni.signal(signal);
    const pm = postmasterPid(n.dataDir);
    if (o.postmaster === true && pm !== null) signalPid(pm, signal);
  };
  return {
    dir,
    get etcd() {
      return etcd.proc;
    },
    nodes,
    get url() {
      return url(DATABASE);
    },
    get adminUrl() {
      return url('postgres');
    },
    leader,
    members: anyMembers,
    waitHealthy: (timeoutMs) => waitHealthy(anyMembers, timeoutMs, () => nodes.map((n) => n.patroni.logTail()).join('\n---\n')),
    switchover: async () => {
      const from = await leader();
      const to = nodes.find((n) => n.name !== from)?.name;
      if (from === null || to === undefined) throw new Error('switchover: no leader, or no other node');
      const r = await restCall(node(from).restPort, 'POST', '/switchover', { leader: from, candidate: to });
      if (r.status !== 200) throw new Error(`switchover ${from} -> ${to}: HTTP ${r.status} ${r.text}`);
      return { from, to };
    },
    killLeader: async () => {
      const name = await leader();
      if (name === null) throw new Error('killLeader: no leader');
      signalNode(name, 'SIGKILL', { postmaster: true });
      return node(name);
    },
    waitLeaderOtherThan: async (former, timeoutMs) => {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const now = await leader();
        if (now !== null && now !== former) return now;
        await sleep(POLL_MS);
      }
      throw new Error(`no node but ${former} became the leader in ${timeoutMs} ms`);
    },
    signalNode,
    postmasterPid: (name) => {
      const pm = postmasterPid(node(name).dataDir);
      return pm !== null && alive(pm) ? pm : null;
    },
    restartNode: async (name) => {
      const n = node(name);
      const ended = await Promise.race([n.patroni.exited, sleep(STOP_GRACE_MS).then(() => null)]);
      if (ended === null) throw new Error(`restartNode: ${name}'s Patroni still runs`);
      n.patroni = patroniProc(n, runAs);
    },
    restartEtcd: async () => {
      const ended = await Promise.race([etcd.proc.exited, sleep(STOP_GRACE_MS).then(() => null)]);
      if (ended === null) throw new Error('restartEtcd: etcd still runs');
      etcd.proc = await startEtcd(dir, etcd.ports, runAs);
    },
    stop: () => stopAll(dir, etcd.proc, nodes),
  };
}

/** Starts etcd on `ports`; its data directory is made on the first start and kept by a restart. */
async function startEtcd(dir: string, ports: EtcdPorts, runAs: RunAs): Promise<Proc> {
  const dataDir = path.join(dir, 'etcd');
  if (!fs.existsSync(dataDir)) {
    fs.mkdirSync(dataDir, { mode: 0o700 });
    giveTo(runAs, dir);
  }
  const client = `http://127.0.0.1:${ports.client}`;
  const peer = `http://127.0.0.1:${ports.peer}`;
  const args = [
    ...['--name', 'etcd1', '--data-dir', dataDir],
    ...['--listen-client-urls', client, '--advertise-client-urls', client],
    ...['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer],
    ...['--initial-cluster', `etcd1=${peer}`, '--initial-cluster-state', 'new'],
    // Patroni speaks etcd's v2 API (ops/patroni/node.yml says why).
    ...['--enable-v2=true', '--log-level', 'warn', '--logger', 'zap'],
  ];
  const etcd = startProc('etcd', 'etcd', args, { runAs, logFile: path.join(dir, 'etcd.log'), cwd: dir });
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await fetch(`${client}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return etcd;
    if (etcd.ended() !== null || Date.now() > deadline) {
      await endProc(etcd, 1_000);
      throw new Error(`etcd did not start: ${etcd.logTail()}`);
    }
    await sleep(POLL_MS);
  }
}

type NodeSettings = { readonly etcdPort: number; readonly password: string; readonly syncStrict: boolean };

async function startNode(dir: string, name: string, s: NodeSettings, runAs: RunAs): Promise<Node> {
  const nodeDir = path.join(dir, name);
  fs.mkdirSync(nodeDir, { mode: 0o700 });
  const [pgPort, restPort] = [await freePort(), await freePort()];
  const values: Record<string, string> = {
    scope: SCOPE,
    name,
    rest_port: String(restPort),
    etcd_port: String(s.etcdPort),
    sync_strict: String(s.syncStrict),
    pg_port: String(pgPort),
    data_dir: path.join(nodeDir, 'data'),
    bin_dir: pgBinDir(),
    dir: nodeDir,
    superuser_password: s.password,
    replication_password: s.password,
    rewind_password: s.password,
  };
  const configFile = path.join(nodeDir, 'patroni.yml');
  fs.writeFileSync(configFile, fillTemplate(fs.readFileSync(TEMPLATE, 'utf8'), values), { mode: 0o600 });
  giveTo(runAs, nodeDir);
  const partial = { name, dir: nodeDir, dataDir: values.data_dir as string, pgPort, restPort, configFile };
  return { ...partial, patroni: patroniProc(partial, runAs) };
}

function patroniProc(n: Omit<Node, 'patroni'>, runAs: RunAs): Proc {
  return startProc(`patroni ${n.name}`, 'patroni', [n.configFile], { runAs, logFile: path.join(n.dir, 'patroni.log'), cwd: n.dir });
}

/** Replaces each {{key}}; a placeholder left without a value is a programmer error. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  const out = template.replace(/\{\{(\w+)\}\}/g, (whole, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`template placeholder ${whole} has no value`);
    return v;
  });
  return out;
}

async function waitHealthy(list: () => Promise<Member[]>, timeoutMs: number, logs: () => string): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last: Member[] = [];
  while (Date.now() < deadline) {
    last = await list();
    const leader = last.find((m) => m.role === 'leader' && m.state === 'running');
    const sync = last.find((m) => m.role === 'sync_standby' && (m.state === 'running' || m.state === 'streaming'));
    if (leader !== undefined && sync !== undefined) return leader.name;
    await sleep(POLL_MS);
  }
  throw new Error(`the cluster did not get healthy in ${timeoutMs} ms: ${JSON.stringify(last)}\n${logs()}`);
}

async function createDatabase(adminUrl: string): Promise<void> {
  const { openSql } = await import('../../src/db/sql.js');
  const admin = openSql(adminUrl, { max: 1, application: 'patroni cluster' });
  try {
    await admin.unsafe(`CREATE DATABASE ${DATABASE}`);
  } finally {
    await admin.end({ timeout: 5 });
  }
}

async function stopAll(dir: string, etcd: Proc, nodes: readonly Node[]): Promise<void> {
  await Promise.all(nodes.map((n) => endProc(n.patroni, STOP_GRACE_MS)));
  // A postmaster whose Patroni was killed outlives it: stop it too, so nothing is left running.
  for (const n of nodes) {
    const pm = postmasterPid(n.dataDir);
    if (pm !== null && signalPid(pm, 'SIGQUIT')) await waitGone(pm, STOP_GRACE_MS);
  }
  await endProc(etcd, STOP_GRACE_MS);
  fs.rmSync(dir, { recursive: true, force: true });
}

async function waitGone(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid) && Date.now() < deadline) await sleep(POLL_MS);
  if (alive(pid)) signalPid(pid, 'SIGKILL');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
