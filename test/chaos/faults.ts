// The nemesis's hands: each planned fault (schedule.ts) applied to the running processes and
// healed. Targets named by role are resolved now: the PostgreSQL leader and replica from Patroni,
// the service owner as the slot whose process answers /readyz 200. A killed service process is
// started again by its slot (services.ts); a killed Patroni node by restartNode, etcd by
// restartEtcd. Pausing a PostgreSQL node stops its Patroni, its postmaster and every process the
// postmaster forked (a SIGSTOP to the postmaster alone leaves open sessions answering).

import fs from 'node:fs';
import type { Cluster } from '../patroni/cluster.js';
import { sleep } from '../patroni/cluster.js';
import { alive, signalPid } from '../patroni/proc.js';
import { restCall } from '../patroni/rest.js';
import type { Planned } from './schedule.js';
import type { Running } from '../failover/processes.js';
import type { Services, Slot } from './services.js';

const NEW_LEADER_WAIT_MS = 30_000;
const SLOT_WAIT_MS = 15_000;

export type Applied = { readonly target: string; readonly startedAt: number; readonly healedAt: number; readonly note?: string };

export type Stage = { readonly cluster: Cluster; readonly services: Services };

/** Applies `p` and heals it; resolves when healed. Throws when the fault could not be made (no leader to switch over, ...). */
export async function applyFault(p: Planned, stage: Stage): Promise<Applied> {
  switch (p.kind) {
    case 'kill':
      return p.target === 'etcd' ? killEtcd(stage, p) : p.target.startsWith('pg') ? killNode(stage, p) : killService(stage, p);
    case 'pause':
      return p.target === 'etcd' ? pauseEtcd(stage, p) : p.target.startsWith('pg') ? pauseNode(stage, p) : pauseService(stage, p);
    case 'pg-restart':
      return pgRestart(stage, p);
    case 'switchover':
      return switchover(stage);
    case 'kill-leader':
      return killLeader(stage);
    case 'partition':
    case 'slow':
      return link(stage, p);
  }
}

/** The slot of `target`, once its process runs (a slot starting its process again is waited for, SLOT_WAIT_MS at most). */
async function slotOf(stage: Stage, target: string): Promise<Slot> {
  const deadline = Date.now() + SLOT_WAIT_MS;
  for (;;) {
    const owner = (await stage.services.owner()) ?? stage.services.slots[0];
    const slot = target === 'svc-owner' ? owner : stage.services.slots.find((s) => s !== owner);
    if (slot === undefined) throw new Error(`no slot for ${target}`);
    if (slot.running !== null || Date.now() > deadline) return slot;
    await sleep(200);
  }
}

async function nodeOf(stage: Stage, target: string): Promise<string> {
  const leader = await stage.cluster.leader();
  if (leader === null) throw new Error('no PostgreSQL leader now');
  if (target === 'pg-leader') return leader;
  const other = stage.cluster.nodes.find((n) => n.name !== leader);
  if (other === undefined) throw new Error('no replica');
  return other.name;
}

/** The slot a service fault targets, with the process running in it now. */
async function runningIn(stage: Stage, target: Planned['target']): Promise<{ slot: Slot; running: Running }> {
  const slot = await slotOf(stage, target);
  const running = slot.running;
  if (running === null) throw new Error(`slot ${slot.name} is being restarted`);
  return { slot, running };
}

async function killService(stage: Stage, p: Planned): Promise<Applied> {
  const { slot, running } = await runningIn(stage, p.target);
  const startedAt = Date.now();
  running.signal('SIGKILL');
  await running.exited;
  return { target: `service ${slot.name} (pid ${running.instance.pid})`, startedAt, healedAt: Date.now(), note: 'restarted by its slot' };
}

async function pauseService(stage: Stage, p: Planned): Promise<Applied> {
  const { slot, running } = await runningIn(stage, p.target);
  const startedAt = Date.now();
  running.signal('SIGSTOP');
  await sleep(p.holdMs);
  running.signal('SIGCONT');
  return { target: `service ${slot.name} (pid ${running.instance.pid})`, startedAt, healedAt: Date.now() };
}

async function killEtcd(stage: Stage, p: Planned): Promise<Applied> {
  const startedAt = Date.now();
  stage.cluster.etcd.signal('SIGKILL');
  await sleep(p.holdMs);
  await stage.cluster.restartEtcd();
  return { target: 'etcd', startedAt, healedAt: Date.now() };
}

async function pauseEtcd(stage: Stage, p: Planned): Promise<Applied> {
  const startedAt = Date.now();
  const etcd = stage.cluster.etcd;
  etcd.signal('SIGSTOP');
  await sleep(p.holdMs);
  etcd.signal('SIGCONT');
  return { target: 'etcd', startedAt, healedAt: Date.now() };
}

async function killNode(stage: Stage, p: Planned): Promise<Applied> {
  const name = await nodeOf(stage, p.target);
  const startedAt = Date.now();
  stage.cluster.signalNode(name, 'SIGKILL', { postmaster: true });
  await sleep(p.holdMs);
  await stage.cluster.restartNode(name);
  return { target: `patroni ${name}`, startedAt, healedAt: Date.now() };
}

async function pauseNode(stage: Stage, p: Planned): Promise<Applied> {
  const name = await nodeOf(stage, p.target);
  const node = stage.cluster.nodes.find((n) => n.name === name);
  const pm = stage.cluster.postmasterPid(name);
  const pids = [node?.patroni.pid ?? 0, ...(pm === null ? [] : [pm, ...childrenOf(pm)])].filter((x) => x > 0);
  const startedAt = Date.now();
  for (const pid of pids) signalPid(pid, 'SIGSTOP');
  await sleep(p.holdMs);
  for (const pid of pids) if (alive(pid)) signalPid(pid, 'SIGCONT');
  return { target: `patroni ${name} (${pids.length} processes)`, startedAt, healedAt: Date.now() };
}

/** The processes whose parent is `pid` (field 4 of /proc/<pid>/stat). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    const child = Number(entry);
    if (!Number.isInteger(child)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${child}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) out.push(child);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

async function pgRestart(stage: Stage, p: Planned): Promise<Applied> {
  const name = await nodeOf(stage, p.target);
  const node = stage.cluster.nodes.find((n) => n.name === name);
  if (node === undefined) throw new Error(`no node ${name}`);
  const startedAt = Date.now();
  const r = await restCall(node.restPort, 'POST', '/restart', {});
  if (r.status !== 200) throw new Error(`restart of ${name}: HTTP ${r.status} ${r.text.slice(0, 200)}`);
  return { target: `postgresql ${name}`, startedAt, healedAt: Date.now() };
}

async function switchover(stage: Stage): Promise<Applied> {
  const startedAt = Date.now();
  const { from, to } = await stage.cluster.switchover();
  return { target: `${from} -> ${to}`, startedAt, healedAt: Date.now() };
}

async function killLeader(stage: Stage): Promise<Applied> {
  const startedAt = Date.now();
  const killed = await stage.cluster.killLeader();
  const leader = await stage.cluster.waitLeaderOtherThan(killed.name, NEW_LEADER_WAIT_MS).catch(() => null);
  await stage.cluster.restartNode(killed.name);
  return { target: `patroni ${killed.name}`, startedAt, healedAt: Date.now(), note: `new leader ${leader ?? 'none within 30 s'}` };
}

async function link(stage: Stage, p: Planned): Promise<Applied> {
  const slot = await slotOf(stage, p.target);
  const startedAt = Date.now();
  slot.proxy.set(p.kind === 'slow' ? { kind: 'delay', ms: p.delayMs } : { kind: 'blackhole' });
  await sleep(p.holdMs);
  slot.proxy.set({ kind: 'pass' });
  const what = p.kind === 'slow' ? `+${p.delayMs} ms` : 'blackhole';
  return { target: `service ${slot.name} <-> postgresql (${what})`, startedAt, healedAt: Date.now() };
}
