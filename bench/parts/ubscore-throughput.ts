// Baseline (c): UBSCore alone. Durable commands per second through the real actor (its worker
// thread, group commit into the LMDB WAL) from one UbsClient with many sends in flight, the way
// the coordinators reach it, with no HTTP and no PostgreSQL in the way.
// Run alone: node dist/bench/parts/ubscore-throughput.js [commands] [in flight] [warm-up commands]
// (defaults 200,000, 8,192 and 50,000, as in `make bench`); prints the figures as one JSON object.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { startUbsCore, UbsClient } from '../../actors/ubscore/client.js';
import { registerCleanup } from '../support/cleanup.js';
import { measureCpu, type CpuShares } from '../meters/cpu-share.js';

/** The service's default UBS_BATCH_MAX: commands per WAL transaction. */
const UBS_BATCH_MAX = 4_096;
/** Deposits spread over this many users, so the ledger grows like a real one. */
const UBS_BENCH_USERS = 10_000;
const SEND_TIMEOUT_MS = 60_000;

export type UbsThroughput = {
  /** Commands sent first and not timed, so the figure is the warm thread's, not the JIT's warm-up. */
  readonly warmupCommands: number;
  /** What the warm-up ran at, cold thread included: information beside the timed figure. */
  readonly warmupCommandsPerSecond: number;
  readonly commands: number;
  readonly inFlight: number;
  readonly applied: number;
  readonly notApplied: number;
  readonly elapsedMs: number;
  readonly commandsPerSecond: number;
  readonly walBatches: number;
  readonly commandsPerBatch: number;
  /**
   * CPU of this process meanwhile, per thread: the main thread is the client (sending, awaiting,
   * structured clone); the others are the UBSCore worker, LMDB's writer and V8's helpers.
   */
  readonly cpu: CpuShares;
};

/** This process's OS thread ids now: the threads started after this are UBSCore's (its worker, LMDB's writer). */
async function threadIds(): Promise<Set<string>> {
  return new Set(await fs.readdir('/proc/self/task').catch(() => []));
}

/** Names the threads UBSCore started, which the kernel only shows as "node". */
function labelThreads(cpu: CpuShares, before: ReadonlySet<string>): CpuShares {
  const serviceThreads = cpu.serviceThreads.map((t) => {
    const tid = t.name.split(' ').pop() ?? '';
    if (t.name.startsWith('main')) return { ...t, name: `client (main thread ${tid})` };
    return before.has(tid) ? t : { ...t, name: `UBSCore's thread ${tid}` };
  });
  return { ...cpu, serviceThreads };
}

export async function benchUbsCore(commands: number, inFlight: number, warmupCommands: number): Promise<UbsThroughput> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ubscore-throughput-'));
  const threadsBefore = await threadIds();
  const core = await startUbsCore({ walDir: dir, batchMax: UBS_BATCH_MAX }).catch(async (error: unknown) => {
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  });
  const client = new UbsClient(core.connect());
  const stop = registerCleanup(async () => {
    client.close();
    await core.control.close().catch(() => undefined);
    await core.worker.terminate();
    await fs.rm(dir, { recursive: true, force: true });
  });
  try {
    // Each sender awaits its answer before the next send, so `inFlight` commands are always
    // outstanding; the client packs the sends of one event-loop turn into one message.
    const run = async (prefix: string, count: number): Promise<number> => {
      let next = 0;
      let applied = 0;
      const sender = async (): Promise<void> => {
        for (let i = next++; i < count; i = next++) {
          const ref = `${prefix}-${i}`;
          const result = await client.send(
            { kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref, userId: BigInt(1 + (i % UBS_BENCH_USERS)), asset: 'USDT', amount: 1n },
            SEND_TIMEOUT_MS,
          );
          if (result?.kind === 'applied') applied++;
        }
      };
      await Promise.all(Array.from({ length: Math.min(inFlight, count) }, sender));
      return applied;
    };
    const warmStarted = performance.now();
    const warmed = await run('warm', warmupCommands);
    const warmMs = performance.now() - warmStarted;
    if (warmed !== warmupCommands) throw new Error(`UBSCore applied ${warmed} of ${warmupCommands} warm-up commands`);
    const before = await core.control.stats();
    const cpu = await measureCpu(process.pid, dir);
    const started = performance.now();
    const applied = await run('bench', commands);
    const elapsedMs = performance.now() - started;
    const cpuShares = labelThreads(await cpu.stop(), threadsBefore);
    const after = await core.control.stats();
    const walBatches = after.batches - before.batches;
    return {
      warmupCommands,
      warmupCommandsPerSecond: warmupCommands === 0 ? 0 : Math.round(warmed / (warmMs / 1000)),
      commands,
      inFlight,
      applied,
      notApplied: commands - applied,
      elapsedMs: Math.round(elapsedMs),
      // Only answered-applied commands count: each of those is durable in the WAL.
      commandsPerSecond: Math.round(applied / (elapsedMs / 1000)),
      walBatches,
      commandsPerBatch: walBatches > 0 ? Math.round(((after.commands - before.commands) / walBatches) * 10) / 10 : 0,
      cpu: cpuShares,
    };
  } finally {
    await stop();
  }
}

const UBS_COMMANDS_DEFAULT = 200_000;
const UBS_IN_FLIGHT_DEFAULT = 8_192;
const UBS_WARMUP_DEFAULT = 50_000;

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const commands = Number(process.argv[2] ?? UBS_COMMANDS_DEFAULT);
  const inFlight = Number(process.argv[3] ?? UBS_IN_FLIGHT_DEFAULT);
  const warmup = Number(process.argv[4] ?? UBS_WARMUP_DEFAULT);
  benchUbsCore(commands, inFlight, warmup).then(
    (r) => process.stdout.write(`${JSON.stringify(r)}\n`),
    (e: unknown) => {
      process.stderr.write(`ubscore throughput bench failed: ${String(e)}\n`);
      process.exit(1);
    },
  );
}
