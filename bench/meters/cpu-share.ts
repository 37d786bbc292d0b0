// Where the machine's CPU goes during a load run: the service process (each of its threads by
// name), its PostgreSQL (the postmaster and every backend), and the benchmark's own process
// (autocannon), from /proc's cumulative CPU times before and after the run.

import fs from 'node:fs/promises';
import path from 'node:path';

/** Linux reports /proc CPU times in clock ticks of 1/100 s on every common configuration. */
export const CLOCK_TICKS_PER_SECOND = 100;

export type CpuShares = {
  readonly wallS: number;
  /** Core-seconds per wall second (1 = one core busy all the time). */
  readonly serviceCores: number;
  readonly postgresCores: number;
  readonly loadGeneratorCores: number;
  /** CPU seconds (user + system) over the window, unrounded by the wall time: the basis of per-transfer costs. */
  readonly serviceCpuS: number;
  readonly postgresCpuS: number;
  /** The benchmark's own process, every thread of it (whatever runs the load, or (f)'s chain). */
  readonly loadGeneratorCpuS: number;
  /** Every process on the machine. */
  readonly machineCpuS: number;
  /** Every process on the machine, from /proc/stat: what is left after the three above is someone else's. */
  readonly machineCores: number;
  /**
   * The service's busiest OS threads. Node leaves its threads unnamed ("node"), so each is named
   * by its thread id; the main thread's id is the process id.
   */
  readonly serviceThreads: readonly { readonly name: string; readonly cores: number }[];
};

type Snapshot = {
  at: number;
  service: number;
  threads: Map<string, number>;
  postgres: Map<number, number>;
  harness: number;
  machine: number;
};

/** Busy ticks of the whole machine: every column of /proc/stat's `cpu` line but idle and iowait. */
export async function machineTicks(): Promise<number> {
  const line = (await fs.readFile('/proc/stat', 'utf8').catch(() => '')).split('\n')[0] ?? '';
  const [, user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).map(Number);
  return user + nice + system + irq + softirq + steal;
}

/** utime + stime of a process or thread, in ticks; null if it is gone. */
async function ticks(statPath: string): Promise<{ name: string; ppid: number; ticks: number } | null> {
  const text = await fs.readFile(statPath, 'utf8').catch(() => null);
  if (text === null) return null;
  const close = text.lastIndexOf(')');
  const name = text.slice(text.indexOf('(') + 1, close);
  // Fields after the command name: state(3) ppid(4) ... utime(14) stime(15), counted from 1.
  const fields = text.slice(close + 2).split(' ');
  return { name, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
}

async function postgresTicks(dataDir: string): Promise<Map<number, number>> {
  const pidText = await fs.readFile(path.join(dataDir, 'postgres', 'pg', 'postmaster.pid'), 'utf8').catch(() => '');
  const postmaster = Number(pidText.split('\n')[0]);
  const out = new Map<number, number>();
  if (!Number.isInteger(postmaster) || postmaster <= 0) return out;
  for (const entry of await fs.readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const stat = await ticks(`/proc/${pid}/stat`);
    if (stat !== null && (pid === postmaster || stat.ppid === postmaster)) out.set(pid, stat.ticks);
  }
  return out;
}

const SERVICE_THREADS_LISTED_MAX = 6;

async function threadTicks(pid: number): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const tasks = await fs.readdir(`/proc/${pid}/task`).catch(() => []);
  for (const tid of tasks) {
    const stat = await ticks(`/proc/${pid}/task/${tid}/stat`);
    if (stat !== null) out.set(Number(tid) === pid ? `main thread ${tid}` : `${stat.name} thread ${tid}`, stat.ticks);
  }
  return out;
}

async function snapshot(pid: number, dataDir: string): Promise<Snapshot> {
  const usage = process.cpuUsage();
  return {
    at: Date.now(),
    service: (await ticks(`/proc/${pid}/stat`))?.ticks ?? 0,
    threads: await threadTicks(pid),
    postgres: await postgresTicks(dataDir),
    harness: ((usage.user + usage.system) / 1e6) * CLOCK_TICKS_PER_SECOND,
    machine: await machineTicks(),
  };
}

/** Starts measuring now; `stop` answers the shares since. */
export async function measureCpu(pid: number, dataDir: string): Promise<{ stop: () => Promise<CpuShares> }> {
  const before = await snapshot(pid, dataDir);
  return {
    stop: async () => {
      const after = await snapshot(pid, dataDir);
      const wallS = Math.max(0.001, (after.at - before.at) / 1000);
      const cores = (t: number): number => Math.round((t / CLOCK_TICKS_PER_SECOND / wallS) * 100) / 100;
      let pg = 0;
      for (const [p, t] of after.postgres) pg += t - (before.postgres.get(p) ?? 0);
      const serviceThreads = [...after.threads.entries()]
        .map(([name, t]) => ({ name, cores: cores(t - (before.threads.get(name) ?? 0)) }))
        .filter((x) => x.cores > 0)
        .sort((a, b) => b.cores - a.cores)
        .slice(0, SERVICE_THREADS_LISTED_MAX);
      const seconds = (t: number): number => Math.round((t / CLOCK_TICKS_PER_SECOND) * 1000) / 1000;
      const service = after.service - before.service;
      return {
        wallS: Math.round(wallS * 10) / 10,
        serviceCores: cores(service),
        postgresCores: cores(pg),
        loadGeneratorCores: cores(after.harness - before.harness),
        machineCores: cores(after.machine - before.machine),
        serviceCpuS: seconds(service),
        postgresCpuS: seconds(pg),
        loadGeneratorCpuS: seconds(after.harness - before.harness),
        machineCpuS: seconds(after.machine - before.machine),
        serviceThreads,
      };
    },
  };
}
