// Measures a cold restart of the real UBSCore worker from a snapshot of 1,000,000 spot accounts
// plus 1,000,000 WAL records after it, and prints the figures as one JSON object.
// Run: node dist/bench/parts/ubscore-restart.js [accounts] [records after the snapshot]
// The state is built in this process through the same ledger, codec, WAL and snapshot modules
// the worker uses, so every record is one the worker's replay accepts; the worker then starts on
// that directory from nothing (a new thread, a new LMDB environment, an empty ledger).

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import { SpotLedger } from '../../src/ubscore/ledger/core.js';
import type { OpRecord } from '../../src/domain/spot-records.js';
import type { UbsCommand } from '../../src/domain/spot-commands.js';
import { BatchEncoder } from '../../wal/block.js';
import { openWal } from '../../wal/log.js';
import type { WalLog } from '../../wal/log.js';
import { SnapshotEncoder } from '../../wal/snapshot.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import { seededRandom as random } from '../../test/support/random.js';
import { WAL_PRUNE_RECORDS_PER_TXN_MAX } from '../../src/limits.js';

const ACCOUNTS_DEFAULT = 1_000_000;
const TAIL_RECORDS_DEFAULT = 1_000_000;
/** Records per LMDB transaction while building the state: large, since only setup speed matters. */
const BUILD_BATCH_RECORDS = 50_000;
const ASSETS = ['BTC', 'USDT'] as const;
const CHECKED_USERS = 2_000;
const PROBE_BATCH_COMMANDS = 100;
const TIMEOUT_MS = 60_000;

class Builder {
  readonly ledger = new SpotLedger();
  private readonly encoder = new BatchEncoder();
  private readonly withdrawals = new Map<string, OpRecord>();
  private readonly lookup = (opKey: string): OpRecord | undefined => this.withdrawals.get(opKey);

  constructor(private readonly wal: WalLog) {}

  /** Decides one command like the worker does and queues its record; flushes full batches. */
  async run(command: UbsCommand): Promise<void> {
    const decision = this.ledger.decide(command, this.lookup);
    const record = decision.record;
    if (record === null || decision.processedKey === null || record.kind !== 'op')
      throw new Error(`bench: ${JSON.stringify(decision.result)}`);
    this.encoder.add(record, decision.processedKey);
    if (record.op === 'WITHDRAW' && record.outcome.kind === 'applied') this.withdrawals.set(decision.processedKey, record);
    if (this.encoder.records >= BUILD_BATCH_RECORDS) await this.flush();
  }

  async flush(): Promise<void> {
    const batch = this.encoder.finish();
    if (batch !== null) await this.wal.appendBatch(batch);
  }
}

async function createAccounts(builder: Builder, accounts: number): Promise<void> {
  const users = Math.ceil(accounts / ASSETS.length);
  for (let i = 0; i < accounts; i++) {
    const userId = BigInt(1 + (i % users));
    const asset = ASSETS[Math.floor(i / users)] as string;
    await builder.run({ kind: 'transfer_op', op: 'DEPOSIT', reqId: `open-${i}`, userId, asset, amount: 1_000_000n + BigInt(i) });
  }
  await builder.flush();
}

/** Deposits, withdrawals (a few refused for funds) and refunds on the existing accounts. */
async function writeTail(builder: Builder, accounts: number, records: number): Promise<void> {
  const next = random(42);
  const users = Math.ceil(accounts / ASSETS.length);
  let lastWithdraw: { reqId: string; userId: bigint; asset: string; amount: bigint } | null = null;
  for (let i = 0; i < records; i++) {
    const userId = BigInt(1 + Math.floor(next() * users));
    const asset = ASSETS[next() < 0.5 ? 0 : 1] as string;
    const amount = BigInt(1 + Math.floor(next() * 2_000_000));
    const roll = next();
    if (roll < 0.05 && lastWithdraw !== null) {
      await builder.run({ kind: 'transfer_op', op: 'REFUND', ...lastWithdraw });
      lastWithdraw = null;
    } else if (roll < 0.5) {
      const reqId = `tail-${i}`;
      await builder.run({ kind: 'transfer_op', op: 'WITHDRAW', reqId, userId, asset, amount });
      lastWithdraw = { reqId, userId, asset, amount };
    } else {
      await builder.run({ kind: 'transfer_op', op: 'DEPOSIT', reqId: `tail-${i}`, userId, asset, amount });
    }
  }
  await builder.flush();
}

type SnapshotFigures = {
  readonly seq: number;
  readonly bodyBytes: number;
  readonly encodeMs: number;
  readonly writeMs: number;
  readonly pruneTxnMsMax: number;
};

/** Writes the snapshot at the ledger's current seq and prunes the WAL up to it, as the worker does. */
async function snapshotAndPrune(builder: Builder, wal: WalLog): Promise<SnapshotFigures> {
  const started = performance.now();
  const capture = builder.ledger.captureAccounts();
  const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, Date.now());
  capture.visit(Number.MAX_SAFE_INTEGER, encoder.add);
  builder.ledger.releaseCapture(capture);
  const encoded = encoder.finish();
  const encodedAt = performance.now();
  await new SnapshotStore(wal.databases).write(encoded);
  const written = performance.now();
  let pruneTxnMsMax = 0;
  while (wal.prunedThroughSeq() < capture.seq) {
    const txnStarted = performance.now();
    await wal.pruneThrough(capture.seq, WAL_PRUNE_RECORDS_PER_TXN_MAX);
    pruneTxnMsMax = Math.max(pruneTxnMsMax, performance.now() - txnStarted);
  }
  return {
    seq: capture.seq,
    bodyBytes: encoded.info.bodyBytes,
    encodeMs: encodedAt - started,
    writeMs: written - encodedAt,
    pruneTxnMsMax,
  };
}

async function build(
  dir: string,
  accounts: number,
  tail: number,
): Promise<{ ledger: SpotLedger; snapshot: SnapshotFigures; buildMs: number }> {
  const started = performance.now();
  const wal = openWal(dir);
  const builder = new Builder(wal);
  await createAccounts(builder, accounts);
  const snapshot = await snapshotAndPrune(builder, wal);
  await writeTail(builder, accounts, tail);
  await wal.close();
  return { ledger: builder.ledger, snapshot, buildMs: performance.now() - started };
}

type Probe = {
  readonly rounds: number;
  readonly roundTripMsMax: number;
  readonly roundTripMsMedian: number;
  readonly sliceMsMax: number;
  readonly snapshotMs: number;
};

/**
 * Right after the restart the tail is far past the snapshot period, so the first batch starts a
 * snapshot of every account. Deposits for a user of its own, one batch in flight at a time,
 * measure what a client waits meanwhile, until that snapshot is durable and pruned.
 */
async function probeSnapshot(core: UbsCoreHandle, client: UbsClient, userId: bigint): Promise<Probe> {
  const started = performance.now();
  const roundTrips: number[] = [];
  for (let round = 0; ; round++) {
    const sent = performance.now();
    const commands = Array.from(
      { length: PROBE_BATCH_COMMANDS },
      (_, i): UbsCommand => ({ kind: 'transfer_op', op: 'DEPOSIT', reqId: `probe-${round}-${i}`, userId, asset: 'BTC', amount: 1n }),
    );
    const results = await Promise.all(commands.map((command) => client.send(command, TIMEOUT_MS)));
    if (results.some((result) => result?.kind !== 'applied')) throw new Error('bench: a probe deposit was not applied');
    roundTrips.push(performance.now() - sent);
    const snapshots = (await core.control.stats()).snapshots;
    if (
      snapshots !== undefined &&
      snapshots.written > 0 &&
      snapshots.pendingSeq === null &&
      snapshots.walPrunedThroughSeq === snapshots.seq
    ) {
      const sorted = [...roundTrips].sort((a, b) => a - b);
      const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
      return {
        rounds: round + 1,
        roundTripMsMax: sorted[sorted.length - 1] ?? 0,
        roundTripMsMedian: median,
        sliceMsMax: snapshots.sliceMsMax,
        snapshotMs: performance.now() - started,
      };
    }
  }
}

/** Compares the restarted core with the builder's ledger for a spread of users. */
async function check(client: UbsClient, ledger: SpotLedger, accounts: number): Promise<void> {
  const users = Math.ceil(accounts / ASSETS.length);
  const step = Math.max(1, Math.floor(users / CHECKED_USERS));
  for (let user = 1; user <= users; user += step) {
    const userId = BigInt(user);
    const result = await client.send({ kind: 'balances', userId }, TIMEOUT_MS);
    if (result?.kind !== 'balances') throw new Error(`bench: no balances for user ${user}`);
    for (const balance of result.balances) {
      const expected = ledger.balanceOf(userId, balance.asset);
      if (expected?.available !== balance.available || expected.status !== balance.status) {
        throw new Error(`bench: user ${user} ${balance.asset}: core has ${balance.available}, builder ${String(expected?.available)}`);
      }
    }
  }
}

async function main(): Promise<void> {
  const accounts = Number(process.argv[2] ?? ACCOUNTS_DEFAULT);
  const tail = Number(process.argv[3] ?? TAIL_RECORDS_DEFAULT);
  const dir = await mkdtemp(join(tmpdir(), 'ubscore-restart-'));
  try {
    const built = await build(dir, accounts, tail);
    const started = performance.now();
    const core = await startUbsCore({ walDir: dir, batchMax: 4096 });
    const totalRestartMs = performance.now() - started;
    const client = new UbsClient(core.connect());
    const stats = await core.control.stats();
    if (stats.accounts !== built.ledger.accountCount || stats.walSeq !== built.ledger.lastSeq)
      throw new Error(`bench: core ${JSON.stringify(stats)}`);
    const probe = await probeSnapshot(core, client, BigInt(Math.ceil(accounts / ASSETS.length) + 1));
    await check(client, built.ledger, accounts);
    const { replayedRecords, replayMs, snapshotSeq, snapshotLoadMs } = core.ready;
    const closeStarted = performance.now();
    client.close();
    await core.control.close();
    const closeMs = performance.now() - closeStarted;
    await core.worker.terminate();
    const round = (ms: number): number => Math.round(ms);
    process.stdout.write(
      `${JSON.stringify({
        accounts: stats.accounts,
        snapshotSeq,
        recordsAfterSnapshot: replayedRecords,
        snapshotLoadMs: round(snapshotLoadMs),
        replayMs: round(replayMs),
        totalRestartMs: round(totalRestartMs),
        recordsPerSecond: Math.round(replayedRecords / (replayMs / 1000)),
        snapshotBodyBytes: built.snapshot.bodyBytes,
        snapshotEncodeMs: round(built.snapshot.encodeMs),
        snapshotWriteMs: round(built.snapshot.writeMs),
        walPruneTxnMsMax: round(built.snapshot.pruneTxnMsMax),
        snapshotAfterRestart: {
          ms: round(probe.snapshotMs),
          sliceMsMax: Math.round(probe.sliceMsMax * 10) / 10,
          probeRounds: probe.rounds,
          probeRoundTripMsMedian: Math.round(probe.roundTripMsMedian * 10) / 10,
          probeRoundTripMsMax: Math.round(probe.roundTripMsMax * 10) / 10,
        },
        closeWithSnapshotMs: round(closeMs),
        buildMs: round(built.buildMs),
      })}\n`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
