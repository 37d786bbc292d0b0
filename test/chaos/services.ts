// The chaos run's two service processes, each in a slot of its own: a DATA_DIR, a port, and a
// LinkProxy (proxy.ts) its DATABASE_URL goes through. Slot a starts as the primary, slot b as the
// standby (ROLE=standby). Whenever a process ends (the nemesis killed it, or it ended itself on
// losing its lease) the slot starts it again on the same DATA_DIR, as a standby, as the failover
// drill brings a former primary back: so there are always two.

import fs from 'node:fs/promises';
import path from 'node:path';
import type { Instance } from '../failover/lb.js';
import { type Ended, type Role, type Running, readiness, serviceEnv, startService, stopService } from '../failover/processes.js';
import { freePort } from '../support/ports.js';
import { STANDBY_SETTLE_MS } from '../../src/limits.js';
import { LinkProxy } from './proxy.js';

const START_TIMEOUT_MS = 90_000;
const RESTART_PAUSE_MS = 300;
const STOP_WAIT_MS = 10_000;
/** A standby at most this many records behind the owner's log counts as caught up. */
const CAUGHT_UP_RECORDS = 100;

export type Slot = {
  readonly name: string;
  readonly proxy: LinkProxy;
  /** The process now running in the slot (null while it is being started again). */
  running: Running | null;
  /** How many times the slot started a process again, and how each former one ended. */
  readonly restarts: { at: number; ended: Ended; role: Role }[];
};

export type Services = {
  readonly slots: readonly Slot[];
  readonly instances: () => Instance[];
  /**
   * The slot whose process answers /readyz 200 now (the owner); else one whose process answers as
   * no standby (an owner standing by, 503, while PostgreSQL is away); else null.
   */
  readonly owner: () => Promise<Slot | null>;
  /**
   * Resolves true once both slots run a process and one of them is a standby caught up with the
   * owner's log that has followed it for STANDBY_SETTLE_MS (a standby killed a moment ago is rebuilding still, and one
   * just started only watches that long: a takeover then waits for it); false when `timeoutMs`
   * passed first.
   */
  readonly settled: (timeoutMs: number) => Promise<boolean>;
  readonly stop: () => Promise<void>;
};

/** Starts slot a as primary (ready) and slot b as standby; `pgPorts` are the PostgreSQL nodes' ports; `url(ports)` the URL through them. */
export async function startServices(
  root: string,
  pgPorts: readonly number[],
  url: (ports: readonly number[]) => string,
  log: (line: string) => void,
): Promise<Services> {
  const slots: Slot[] = [];
  let stopping = false;
  const starts: Promise<void>[] = [];
  for (const [name, role] of [
    ['a', 'primary'],
    ['b', 'standby'],
  ] as const) {
    const dataDir = path.join(root, name);
    await fs.mkdir(dataDir, { mode: 0o755 });
    const { proxy, ports } = await LinkProxy.open(name, pgPorts);
    const machine = { name, dataDir, port: await freePort() };
    // Info level, each process's whole stderr in slot-<name>.log: a slow takeover is read from its standby's lines.
    const env = { ...serviceEnv(url(ports)), LOG_LEVEL: 'info' };
    const logPath = path.join(root, `slot-${name}.log`);
    const slot: Slot = { name, proxy, running: null, restarts: [] };
    slots.push(slot);
    const supervise = async (first: Role): Promise<void> => {
      let role = first;
      while (!stopping) {
        const running = await startService(machine, role, env, START_TIMEOUT_MS, logPath).catch((error: unknown) => {
          log(`slot ${name}: start as ${role} failed: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
          return null;
        });
        slot.running = running;
        if (stopping && running !== null) await stopService(running, STOP_WAIT_MS);
        const ended = running === null ? { code: null, signal: null } : await running.exited;
        slot.running = null;
        if (stopping) return;
        slot.restarts.push({ at: Date.now(), ended, role });
        // Each ended process's last words, kept with the run's directory (kept when the run fails).
        await fs.appendFile(
          path.join(root, `slot-${name}-ended.log`),
          `--- ${new Date().toISOString()} ${role} pid ${running?.instance.pid ?? 'none'} ended ${JSON.stringify(ended)}\n${running?.stderrTail() ?? ''}\n`,
        );
        const how = ended.signal ?? `exit code ${ended.code}: ${whyEnded(running?.stderrTail() ?? '')}`;
        log(
          `slot ${name}: the process started as ${role} (pid ${running?.instance.pid ?? 'none'}) ended (${how}); starting it again as standby`,
        );
        role = 'standby';
        await new Promise((r) => setTimeout(r, RESTART_PAUSE_MS));
      }
    };
    starts.push(supervise(role));
    // The primary claims the ledger first; the standby follows it.
    if (role === 'primary') await waitFor(() => slot.running !== null, START_TIMEOUT_MS);
  }
  await waitFor(() => slots.every((s) => s.running !== null), START_TIMEOUT_MS);
  /** Since when each standby process (by pid) was seen following the owner's log. */
  const followingSince = new Map<number, number>();
  const instances = () => slots.flatMap((s) => (s.running !== null && s.running.ended() === null ? [s.running.instance] : []));
  return {
    slots,
    instances,
    owner: async () => {
      const seen = await Promise.all(
        slots.map(async (s) => ({ s, r: s.running === null ? null : await readiness(s.running.instance.base) })),
      );
      return seen.find((x) => x.r?.status === 200)?.s ?? seen.find((x) => x.r !== null && x.r.body.role !== 'standby')?.s ?? null;
    },
    settled: (timeoutMs) => settled(slots, followingSince, timeoutMs),
    stop: async () => {
      stopping = true;
      for (const s of slots) s.proxy.set({ kind: 'pass' });
      await Promise.all(slots.map((s) => (s.running === null ? undefined : stopService(s.running, STOP_WAIT_MS))));
      await Promise.all(starts);
      await Promise.all(slots.map((s) => s.proxy.close()));
    },
  };
}

async function settled(slots: readonly Slot[], followingSince: Map<number, number>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const seen = await Promise.all(slots.map((s) => (s.running === null ? null : readiness(s.running.instance.base))));
    const now = Date.now();
    let armed = false;
    for (const [i, r] of seen.entries()) {
      const pid = slots[i]?.running?.instance.pid ?? -1;
      const following = r?.body.role === 'standby' && Number(r.body.applied_seq) > 0 && Number(r.body.lag_records) <= CAUGHT_UP_RECORDS;
      if (!following) followingSince.delete(pid);
      else {
        const since = followingSince.get(pid) ?? now;
        followingSince.set(pid, since);
        if (now - since >= STANDBY_SETTLE_MS) armed = true;
      }
    }
    if (seen.every((r) => r !== null) && armed) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

async function waitFor(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`not done within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The reason the service logged for its fatal stop (its last "fatal" line), or its stderr's last line. */
function whyEnded(stderr: string): string {
  const lines = stderr.trim().split('\n');
  const fatal = lines.filter((l) => l.includes('fatal')).pop() ?? lines.pop() ?? '';
  return fatal.slice(0, 600);
}
