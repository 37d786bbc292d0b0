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
import { LinkProxy } from './proxy.js';

const START_TIMEOUT_MS = 90_000;
const RESTART_PAUSE_MS = 300;
const STOP_WAIT_MS = 10_000;

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
  /** The slot whose process answers /readyz 200 now (the owner), or null. */
  readonly owner: () => Promise<Slot | null>;
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
    const env = serviceEnv(url(ports));
    const slot: Slot = { name, proxy, running: null, restarts: [] };
    slots.push(slot);
    const supervise = async (first: Role): Promise<void> => {
      let role = first;
      while (!stopping) {
        const running = await startService(machine, role, env, START_TIMEOUT_MS).catch((error: unknown) => {
          log(`slot ${name}: start as ${role} failed: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`);
          return null;
        });
        slot.running = running;
        if (stopping && running !== null) await stopService(running, STOP_WAIT_MS);
        const ended = running === null ? { code: null, signal: null } : await running.exited;
        slot.running = null;
        if (stopping) return;
        slot.restarts.push({ at: Date.now(), ended, role });
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
  const instances = () => slots.flatMap((s) => (s.running !== null && s.running.ended() === null ? [s.running.instance] : []));
  return {
    slots,
    instances,
    owner: async () => {
      for (const s of slots) {
        const base = s.running?.instance.base;
        if (base !== undefined && (await readiness(base))?.status === 200) return s;
      }
      return null;
    },
    stop: async () => {
      stopping = true;
      for (const s of slots) s.proxy.set({ kind: 'pass' });
      await Promise.all(slots.map((s) => (s.running === null ? undefined : stopService(s.running, STOP_WAIT_MS))));
      await Promise.all(starts);
      await Promise.all(slots.map((s) => s.proxy.close()));
    },
  };
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
