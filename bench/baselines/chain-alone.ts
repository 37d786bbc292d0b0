// Baseline (f): a transfer's chain with nothing around it. The three durable commits a transfer
// waits for on the happy path, made by the service's own parts: its batched PostgreSQL writer
// (TransferWrites: transfer_apply, with the paths the driver sends, one statement and one commit
// per batch) and a real UBSCore thread (group commit into its LMDB WAL), driven from one thread
// by closed loops, half FUNDING→SPOT and half SPOT→FUNDING. No HTTP edge, no load generator, no
// coordinator thread and none of a shard's work (checks, limits, metrics, retries, the hop to
// and from the main thread). Set beside the service at the same level, it says what the edge and
// the coordinator cost; set beside (a), what the chain itself allows on this machine.
// (f') is the same chain with its loops started at spread-out moments: loop i waits i / n of
// (f)'s mean latency at that level before its first transfer. (f)'s loops all start together,
// so every batch of each stage carries them all; (f') is a chain whose arrivals are not
// synchronised, as the HTTP edge's are not. (f) itself is unchanged.
// It runs in a database of its own on the service's PostgreSQL, idle by then, with users of its
// own in its own UBSCore, so the service's data and its conservation check are untouched.
// Run alone: node dist/bench/baselines/chain-alone.js [levels, e.g. 16,64] [seconds per level]

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { startUbsCore, UbsClient, type UbsCoreHandle } from '../../actors/ubscore/client.js';
import type { NewTransfer } from '../../src/domain/transfer.js';
import { migrate } from '../../src/db/migrations.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { TransferWrites, type PathStep, type WriteItem } from '../../src/db/transfer-writes.js';
import { STATE_IDS, type TransferEvent, type TransferStateName } from '../../src/domain/fsm.js';
import { newReqId } from '../../src/http/req-ids.js';
import { PG_BATCH_MAX_DEFAULT } from '../../src/config/config.js';
import { registerCleanup } from '../support/cleanup.js';
import { measureCpu } from '../meters/cpu-share.js';
import { walBytes } from '../meters/pg-growth.js';
import { quantile, round1 } from '../load/closed-loop.js';
import { BENCH_ASSETS } from '../support/seed.js';
import { pgUrl, startBenchService, type BenchService } from '../support/service-child.js';
import { currentXid } from '../load/transfer-load.js';

/** The service's defaults: PG_POOL_MAX connections for a coordinator, UBS_BATCH_MAX commands per WAL batch. */
const CHAIN_PG_POOL_MAX = 8;
const CHAIN_UBS_BATCH_MAX = 4_096;
const CHAIN_DATABASE = 'bench_chain';
/** An answer later than this is a failed run, not a slow one. */
const CHAIN_CALL_TIMEOUT_MS = 30_000;
const SEED_UNITS = 10n ** 18n;
const AMOUNT_UNITS_MAX = 100_000;
const SEED_CONCURRENCY = 256;

export type ChainLevel = {
  readonly connections: number;
  /** (f): 'together', every loop starts at once; (f'): 'spread', loop i starts i / n of (f)'s mean latency later. */
  readonly starts: ChainStarts;
  /** How long after the first loop the last one started, ms: 0 for (f). */
  readonly startSpreadMs: number;
  readonly durationS: number;
  readonly committed: number;
  readonly committedPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly mean: number };
  /** Mean ms per transfer in each of the three waits: the creating commit, the UBSCore call, the completing commit. */
  readonly stageMs: { readonly create: number; readonly ubscore: number; readonly complete: number };
  /** PostgreSQL write transactions (transaction ids assigned) per committed transfer: each batch is one. */
  readonly pgWriteTxnsPerCommitted: number | null;
  /** PostgreSQL WAL bytes written (pg_stat_wal) per committed transfer. */
  readonly pgWalBytesPerCommitted: number | null;
  readonly postgresCpuMsPerCommitted: number | null;
  /** This process's CPU (the loops, the writer's client side, UBSCore's thread and LMDB's writer) per committed transfer. */
  readonly chainCpuMsPerCommitted: number | null;
  readonly machineCores: number;
};

export type ChainStarts = 'together' | 'spread';

type Stages = { create: number; ubscore: number; complete: number };

const step = (event: TransferEvent, to: TransferStateName): PathStep => ({ event, to });

/**
 * The items the driver writes for each direction (src/coordinator/driver.ts: start, callTarget
 * and callSource with a local target), and the UBSCore operation between them.
 */
export function itemsOf(t: NewTransfer): { create: WriteItem; ubsOp: 'DEPOSIT' | 'WITHDRAW'; complete: WriteItem } {
  const params = { reqId: t.reqId, userId: t.userId, asset: t.asset, amount: t.amount };
  const failAtSource = [step('SOURCE_FAIL', 'FAILED')];
  if (t.from === 'FUNDING')
    return {
      create: {
        kind: 'create',
        transfer: t,
        op: 'WITHDRAW',
        paths: { ok: [step('SOURCE_OK', 'SOURCE_DONE'), step('TARGET_CALL', 'TARGET_PENDING')], ko: failAtSource },
        code: null,
        checkFundingTarget: false,
        dueNow: false,
      },
      ubsOp: 'DEPOSIT',
      complete: {
        kind: 'move',
        params,
        from: 'TARGET_PENDING',
        op: null,
        paths: { ok: [step('TARGET_OK', 'COMMITTED')], ko: [step('TARGET_FAIL', 'COMPENSATING')] },
        code: null,
      },
    };
  return {
    create: {
      kind: 'create',
      transfer: t,
      op: null,
      paths: { ok: [step('SOURCE_CALL', 'SOURCE_PENDING')], ko: failAtSource },
      code: null,
      checkFundingTarget: true,
      dueNow: false,
    },
    ubsOp: 'WITHDRAW',
    complete: {
      kind: 'move',
      params,
      from: 'SOURCE_PENDING',
      op: 'DEPOSIT',
      paths: {
        ok: [step('SOURCE_OK', 'SOURCE_DONE'), step('TARGET_OK', 'COMMITTED')],
        ko: [step('SOURCE_OK', 'SOURCE_DONE'), step('TARGET_FAIL', 'COMPENSATING')],
      },
      code: null,
    },
  };
}

async function committedCount(sql: Sql): Promise<number> {
  const rows = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state = ${STATE_IDS.COMMITTED}`;
  return rows[0]?.n ?? 0;
}

/** Where a path leaves the transfer: its last step's state. */
function endOf(item: WriteItem): TransferStateName | undefined {
  return item.kind === 'op' ? undefined : item.paths.ok[item.paths.ok.length - 1]?.to;
}

/**
 * Runs the chain at each level for `durationS` against `svc`'s PostgreSQL (a database of its own,
 * dropped at the end) and a UBSCore of its own. Any answer but the happy path's fails the run:
 * nothing here is expected to be refused.
 */
export async function benchChain(
  svc: BenchService,
  levels: readonly number[],
  durationS: number,
  users: number,
  log: (line: string) => void,
): Promise<ChainLevel[]> {
  const walDir = await fs.mkdtemp(path.join(os.tmpdir(), 'bench-chain-'));
  // Each part is undone if it was started, whichever step failed.
  let sql: Sql | null = null;
  let core: UbsCoreHandle | null = null;
  let ubs: UbsClient | null = null;
  const cleanup = registerCleanup(async () => {
    ubs?.close();
    if (core !== null) {
      await core.control.close().catch(() => undefined);
      await core.worker.terminate();
    }
    await sql?.end({ timeout: 5 });
    await svc.sql.unsafe(`DROP DATABASE IF EXISTS ${CHAIN_DATABASE} WITH (FORCE)`).catch(() => undefined);
    await fs.rm(walDir, { recursive: true, force: true });
  });
  try {
    await svc.sql.unsafe(`DROP DATABASE IF EXISTS ${CHAIN_DATABASE} WITH (FORCE)`);
    await svc.sql.unsafe(`CREATE DATABASE ${CHAIN_DATABASE}`);
    sql = openSql(pgUrl(svc.pgPort, svc.pgPassword, { database: CHAIN_DATABASE }), { max: CHAIN_PG_POOL_MAX, application: 'bench-chain' });
    core = await startUbsCore({ walDir, batchMax: CHAIN_UBS_BATCH_MAX });
    ubs = new UbsClient(core.connect());
    const userIds = await seed(svc, sql, ubs, users);
    return await runLevels(svc, sql, ubs, userIds, levels, durationS, log);
  } finally {
    await cleanup();
  }
}

/** Its own schema, the service's assets, and `users` users funded on both sides; answers their ids. */
async function seed(svc: BenchService, sql: Sql, ubs: UbsClient, users: number): Promise<bigint[]> {
  await migrate(sql);
  // The assets as the service's database holds them (transfers_tb refers to them).
  const assets = await svc.sql<Record<string, unknown>[]>`
    SELECT symbol, precision, min_transfer_units, max_transfer_units, status, internal_transfer_enabled FROM assets`;
  await sql`INSERT INTO assets ${sql(assets)}`;
  const userIds = Array.from({ length: users }, (_, i) => BigInt(i + 1));
  const ids = userIds.join(',');
  for (const asset of BENCH_ASSETS)
    await sql`
      INSERT INTO funding_balances (user_id, asset, available)
      SELECT u::bigint, ${asset}, ${SEED_UNITS.toString()}::bigint FROM unnest(string_to_array(${ids}, ',')) AS u`;
  const deposits = userIds.flatMap((userId) => BENCH_ASSETS.map((asset) => ({ userId, asset })));
  let nextDeposit = 0;
  await Promise.all(
    Array.from({ length: SEED_CONCURRENCY }, async () => {
      for (let i = nextDeposit++; i < deposits.length; i = nextDeposit++) {
        const d = deposits[i] as { userId: bigint; asset: string };
        const ref = `chain-seed-${d.userId}-${d.asset}`;
        const answer = await ubs.send(
          { kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref, userId: d.userId, asset: d.asset, amount: SEED_UNITS },
          CHAIN_CALL_TIMEOUT_MS,
        );
        if (answer?.kind !== 'applied') throw new Error(`(f) seeding SPOT: ${JSON.stringify(answer)}`);
      }
    }),
  );
  return userIds;
}

/** The chain one run of levels drives: its batched writer, its UBSCore client and its users. */
type Chain = { readonly writes: TransferWrites; readonly ubs: UbsClient; readonly userIds: readonly bigint[] };

async function runLevels(
  svc: BenchService,
  sql: Sql,
  ubs: UbsClient,
  userIds: readonly bigint[],
  levels: readonly number[],
  durationS: number,
  log: (line: string) => void,
): Promise<ChainLevel[]> {
  const chain: Chain = { writes: new TransferWrites(sql, { batchMax: PG_BATCH_MAX_DEFAULT }), ubs, userIds };
  const out: ChainLevel[] = [];
  const logLevel = (name: string, level: ChainLevel): void =>
    log(
      `  ${name} chain alone at ${level.connections} connections${level.starts === 'spread' ? `, starts spread over ${level.startSpreadMs} ms` : ''}: ` +
        `${level.committedPerSecond} committed/s, p50 ${level.latencyMs.p50} / p99 ${level.latencyMs.p99} ms; ` +
        `waits ${level.stageMs.create} / ${level.stageMs.ubscore} / ${level.stageMs.complete} ms; ${level.pgWriteTxnsPerCommitted} write txns, ` +
        `PostgreSQL ${level.postgresCpuMsPerCommitted} ms CPU, chain ${level.chainCpuMsPerCommitted} ms CPU per transfer`,
    );
  for (const connections of levels) {
    const together = await runLevel(svc, sql, chain, connections, durationS, 0);
    logLevel('(f)', together);
    out.push(together);
    // (f'): the same loops, their starts spread evenly over one mean latency of (f) at this level.
    const spread = await runLevel(svc, sql, chain, connections, durationS, together.latencyMs.mean);
    logLevel("(f')", spread);
    out.push(spread);
  }
  return out;
}

/** A random user's transfer, half FUNDING→SPOT and half SPOT→FUNDING, of a random asset and amount. */
function randomTransfer(userIds: readonly bigint[]): NewTransfer {
  const from = Math.random() < 0.5 ? 'FUNDING' : 'SPOT';
  return {
    reqId: newReqId(),
    userId: userIds[Math.floor(Math.random() * userIds.length)] as bigint,
    from,
    to: from === 'FUNDING' ? 'SPOT' : 'FUNDING',
    asset: BENCH_ASSETS[Math.floor(Math.random() * BENCH_ASSETS.length)] as string,
    amount: BigInt(1 + Math.floor(Math.random() * AMOUNT_UNITS_MAX)),
    clientOrderId: null,
  };
}

/** One transfer through the chain's three durable commits, each wait added to its stage. */
async function chainTransfer(chain: Chain, stages: Stages): Promise<void> {
  const t = randomTransfer(chain.userIds);
  const { create, ubsOp, complete } = itemsOf(t);
  const t0 = performance.now();
  const created = await chain.writes.write(create);
  if (created.kind !== 'moved' || created.state !== endOf(create)) throw new Error(`(f) creating: ${JSON.stringify(created)}`);
  const t1 = performance.now();
  const answer = await chain.ubs.send(
    { kind: 'transfer_op', op: ubsOp, reqId: t.reqId, userId: t.userId, asset: t.asset, amount: t.amount },
    CHAIN_CALL_TIMEOUT_MS,
  );
  if (answer?.kind !== 'applied') throw new Error(`(f) UBSCore ${ubsOp}: ${JSON.stringify(answer)}`);
  const t2 = performance.now();
  const completed = await chain.writes.write(complete);
  if (completed.kind !== 'moved' || completed.state !== endOf(complete)) throw new Error(`(f) completing: ${JSON.stringify(completed)}`);
  stages.create += t1 - t0;
  stages.ubscore += t2 - t1;
  stages.complete += performance.now() - t2;
}

/**
 * One level: `connections` closed loops for `durationS`, and what the window cost per committed
 * transfer. Loop i starts `i * spreadMs / connections` ms into the window: 0 for (f), (f)'s mean
 * latency for (f'). The window's length and its figures are the same either way.
 */
async function runLevel(
  svc: BenchService,
  sql: Sql,
  chain: Chain,
  connections: number,
  durationS: number,
  spreadMs: number,
): Promise<ChainLevel> {
  const stages: Stages = { create: 0, ubscore: 0, complete: 0 };
  const latencies: number[] = [];
  const before = await committedCount(sql);
  const xidBefore = await currentXid(svc.sql);
  const walBefore = await walBytes(svc.sql);
  const cpu = await measureCpu(svc.pid, svc.dataDir);
  const started = performance.now();
  const end = started + durationS * 1000;
  await Promise.all(
    Array.from({ length: connections }, async (_, i) => {
      // Timers round to whole milliseconds; turns of the event loop place each start to a few µs.
      const startAt = started + (i * spreadMs) / connections;
      while (performance.now() < startAt) await nextTurn();
      while (performance.now() < end) {
        const t = performance.now();
        await chainTransfer(chain, stages);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  const shares = await cpu.stop();
  const xidAfter = await currentXid(svc.sql);
  const walAfter = await walBytes(svc.sql);
  const committed = latencies.length;
  // Every transfer answered COMMITTED is one in the table, and no other became one.
  const counted = (await committedCount(sql)) - before;
  if (counted !== committed) throw new Error(`(f) ${committed} transfers answered COMMITTED, ${counted} in transfers_tb`);
  latencies.sort((a, b) => a - b);
  const per = (x: number, digits: number): number | null =>
    committed > 0 ? Math.round((x / committed) * 10 ** digits) / 10 ** digits : null;
  const mean = (x: number): number => round1(x / Math.max(committed, 1));
  return {
    connections,
    starts: spreadMs > 0 ? 'spread' : 'together',
    startSpreadMs: round1(((connections - 1) * spreadMs) / connections),
    durationS: round1(elapsedS),
    committed,
    committedPerSecond: round1(committed / elapsedS),
    latencyMs: {
      p50: round1(quantile(latencies, 0.5)),
      p99: round1(quantile(latencies, 0.99)),
      mean: mean(latencies.reduce((sum, x) => sum + x, 0)),
    },
    stageMs: { create: mean(stages.create), ubscore: mean(stages.ubscore), complete: mean(stages.complete) },
    // Each read of the id assigns one itself: the second read's is not the chain's.
    pgWriteTxnsPerCommitted: per(xidAfter - xidBefore - 1, 2),
    pgWalBytesPerCommitted: per(walAfter - walBefore, 0),
    postgresCpuMsPerCommitted: per(shares.postgresCpuS * 1000, 3),
    chainCpuMsPerCommitted: per(shares.loadGeneratorCpuS * 1000, 3),
    machineCores: shares.machineCores,
  };
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const levels = (process.argv[2] ?? '16,64,256').split(',').map(Number);
  const seconds = Number(process.argv[3] ?? 15);
  const main = async (): Promise<void> => {
    const svc = await startBenchService({});
    try {
      const out = await benchChain(svc, levels, seconds, 2_000, (line) => process.stderr.write(`${line}\n`));
      process.stdout.write(`${JSON.stringify(out)}\n`);
    } finally {
      await svc.stop();
    }
  };
  main().catch((e: unknown) => {
    process.stderr.write(`chain bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  });
}
