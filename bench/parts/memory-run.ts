// The memory run: the service loaded for `memoryS` at MEMORY_RUN_CONNECTIONS while its RssAnon is
// read every second (bench/meters/memory.ts). A standby follows the service's log
// meanwhile (bench/parts/standby-lag.ts): the run is long and at the main level, so the standby's
// lag under load costs no run time of its own. Only the service's own memory is judged; its
// committed/s and p99 here are with the standby reading PostgreSQL beside it.

import { driveTransfers } from '../load/transfer-load.js';
import { sampleRss } from '../meters/memory.js';
import type { MemoryRun } from '../report/report.js';
import type { BenchUser } from '../support/seed.js';
import type { BenchService } from '../support/service-child.js';

export const MEMORY_RUN_CONNECTIONS = 64;

export async function memoryRun(
  svc: BenchService,
  users: readonly BenchUser[],
  seconds: number,
  log: (line: string) => void,
): Promise<MemoryRun> {
  log(`memory run: ${seconds} s at ${MEMORY_RUN_CONNECTIONS} connections, RssAnon every second`);
  const sampler = sampleRss(svc.pid);
  const level = await driveTransfers(svc, users, MEMORY_RUN_CONNECTIONS, seconds);
  const mem = await sampler.stop();
  log(
    `  memory: first ${mem.firstMiB} MiB, last ${mem.lastMiB} MiB, max ${mem.maxMiB} MiB, growth ${(mem.growth * 100).toFixed(1)}% (${mem.flat ? 'flat' : 'not flat'}); ${level.committedPerSecond} committed/s`,
  );
  return { ...mem, connections: MEMORY_RUN_CONNECTIONS, committedPerSecond: level.committedPerSecond, latencyP99Ms: level.latencyMs.p99 };
}
