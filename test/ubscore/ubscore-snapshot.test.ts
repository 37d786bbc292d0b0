// Proves UBSCore's snapshots: a snapshot plus the WAL tail rebuilds exactly what a full replay does, pruning keeps balances and the processed set, a damaged snapshot refuses start unless the WAL still covers an older state, a crash mid-snapshot loses nothing acknowledged, and snapshots are taken periodically.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import type { UbsWorkerData } from '../../actors/protocol.js';
import type { UbsStats } from '../../src/ubscore/control.js';
import type { AccountStatus } from '../../src/domain/types.js';
import { USER_ID_MAX } from '../../src/domain/checks.js';
import { SpotLedger } from '../../src/ubscore/ledger/core.js';
import type { OpRecord, WalRecord } from '../../src/domain/spot-records.js';
import type { UbsCommand, UbsResult } from '../../src/domain/spot-commands.js';
import { BatchEncoder, encodeBatch } from '../../wal/block.js';
import type { WalBatch } from '../../wal/block.js';
import { crc32c, crc32cUpdate } from '../../wal/crc32.js';
import { openWal, openWalDatabases } from '../../wal/log.js';
import type { SnapshotKey } from '../../wal/databases.js';
import { SNAPSHOT_CHUNK_ACCOUNTS_MAX, SnapshotEncoder, decodeSnapshotBody, decodeSnapshotHeader } from '../../wal/snapshot.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import { seededRandom as random } from '../support/random.js';

const TIMEOUT_MS = 10_000;
const WAIT_MS_MAX = 20_000;
const USERS = 40;
const ASSETS = ['BTC', 'ETH', 'USDT'] as const;
/** A close never writes a snapshot with this minimum: the WAL keeps every record. */
const NEVER = 1_000_000_000;

// ---------------------------------------------------------------------------------------------
// Fixtures.

/** Runs `body` with a fresh directory and removes it, and every core started in it, afterwards. */
async function withDir(
  body: (dir: string, start: (options?: Partial<UbsWorkerData>) => Promise<UbsCoreHandle>) => Promise<void>,
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ubscore-snapshot-'));
  const cores: UbsCoreHandle[] = [];
  const start = async (options: Partial<UbsWorkerData> = {}): Promise<UbsCoreHandle> => {
    const core = await startUbsCore({ walDir: dir, batchMax: 64, ...options });
    cores.push(core);
    return core;
  };
  try {
    await body(dir, start);
  } finally {
    for (const core of cores) await core.worker.terminate();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Graceful stop: every accepted command durable, the closing snapshot (if due) written, LMDB closed. */
async function stop(core: UbsCoreHandle, client: UbsClient): Promise<void> {
  client.close();
  assert.equal(await core.control.close(), { closed: true });
  await core.worker.terminate();
}

/** Polls the core's stats until `done` holds; no fixed sleep decides the outcome. */
async function until(core: UbsCoreHandle, done: (stats: UbsStats) => boolean, what: string): Promise<UbsStats> {
  const deadline = Date.now() + WAIT_MS_MAX;
  for (;;) {
    const stats = await core.control.stats();
    if (done(stats)) return stats;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(stats)}`);
    await sleep(5);
  }
}

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)] as T;
}

const deposit = (reqId: string, userId: bigint, amount: bigint, asset = 'BTC'): UbsCommand => ({
  kind: 'transfer_op',
  op: 'DEPOSIT',
  reqId,
  userId,
  asset,
  amount,
});
const withdraw = (reqId: string, userId: bigint, amount: bigint, asset = 'BTC'): UbsCommand => ({
  kind: 'transfer_op',
  op: 'WITHDRAW',
  reqId,
  userId,
  asset,
  amount,
});

/** Every kind of command, repeats of earlier ones included, so duplicates and refunds occur too. */
class CommandSource {
  private readonly next: () => number;
  private readonly sent: UbsCommand[] = [];
  private readonly withdrawals: Extract<UbsCommand, { kind: 'transfer_op' }>[] = [];
  private count = 0;

  constructor(seed: number) {
    this.next = random(seed);
  }

  command(): UbsCommand {
    const roll = this.next();
    const command = roll < 0.05 && this.sent.length > 0 ? pick(this.next, this.sent) : this.fresh(roll);
    this.sent.push(command);
    if (command.kind === 'transfer_op' && command.op === 'WITHDRAW') this.withdrawals.push(command);
    return command;
  }

  private fresh(roll: number): UbsCommand {
    const key = `k${++this.count}`;
    const userId = BigInt(1 + Math.floor(this.next() * USERS));
    const asset = pick(this.next, ASSETS);
    const amount = BigInt(1 + Math.floor(this.next() * 1_000));
    if (roll < 0.09)
      return { kind: 'set_status', userId, asset, status: pick<AccountStatus>(this.next, ['ACTIVE', 'ACTIVE', 'FROZEN', 'DISABLED']) };
    if (roll < 0.16 && this.withdrawals.length > 0) return { ...pick(this.next, this.withdrawals), op: 'REFUND' };
    if (roll < 0.26)
      return { kind: 'external_op', op: roll < 0.21 ? 'EXTERNAL_DEPOSIT' : 'EXTERNAL_WITHDRAW', ref: key, userId, asset, amount };
    return roll < 0.62 ? deposit(key, userId, amount, asset) : withdraw(key, userId, amount, asset);
  }
}

/** The auditor: expected balances rebuilt from requests and replies only, never from the core's state. */
class Model {
  readonly available = new Map<string, bigint>();
  readonly status = new Map<string, AccountStatus>();

  audit(command: UbsCommand, result: UbsResult | null): void {
    assert.ok(result !== null, 'every command is answered');
    if (command.kind === 'set_status') {
      assert.equal(result, { kind: 'status_set' });
      this.status.set(`${command.userId}:${command.asset}`, command.status);
      return;
    }
    if ((command.kind !== 'transfer_op' && command.kind !== 'external_op') || result?.kind !== 'applied' || result.duplicate) return;
    const debit = command.op === 'WITHDRAW' || command.op === 'EXTERNAL_WITHDRAW';
    const key = `${command.userId}:${command.asset}`;
    this.available.set(key, (this.available.get(key) ?? 0n) + (debit ? -command.amount : command.amount));
  }

  /** Checks every account the core reports, and that it reports every account with funds. */
  async check(client: UbsClient, label: string): Promise<void> {
    let funded = 0;
    for (let user = 1; user <= USERS; user++) {
      const result = await client.send({ kind: 'balances', userId: BigInt(user) }, TIMEOUT_MS);
      if (result?.kind !== 'balances') throw new Error(`${label}: balances of ${user}: ${JSON.stringify(result?.kind)}`);
      for (const balance of result.balances) {
        const key = `${user}:${balance.asset}`;
        assert.is(balance.available, this.available.get(key) ?? 0n, `${label}: ${key}`);
        assert.is(balance.status, this.status.get(key) ?? 'ACTIVE', `${label}: status of ${key}`);
        if (balance.available > 0n) funded++;
      }
    }
    assert.is(funded, [...this.available.values()].filter((units) => units > 0n).length, `${label}: funded accounts`);
  }
}

/** Sends `commands` in flight at once and returns the replies in the same order. */
function sendAll(client: UbsClient, commands: readonly UbsCommand[]): Promise<(UbsResult | null)[]> {
  return Promise.all(commands.map((command) => client.send(command, TIMEOUT_MS)));
}

type Inspection = {
  readonly snapshotSeqs: number[];
  readonly prunedThrough: number;
  readonly firstWalSeq: number | null;
  readonly lastSeq: number;
};

/** Reads the directory's LMDB while no core has it open. */
async function inspect(dir: string): Promise<Inspection> {
  const wal = openWal(dir);
  try {
    let firstWalSeq: number | null = null;
    for (const key of wal.databases.wal.getKeys({ limit: 1 })) firstWalSeq = key;
    return {
      snapshotSeqs: new SnapshotStore(wal.databases).seqs(),
      prunedThrough: wal.prunedThroughSeq(),
      firstWalSeq,
      lastSeq: wal.lastSeq(),
    };
  } finally {
    await wal.close();
  }
}

async function flipByte(dir: string, key: SnapshotKey, offset: number): Promise<void> {
  const dbs = openWalDatabases(dir);
  try {
    const stored = dbs.snapshot.getBinary(key);
    if (stored === undefined) throw new Error(`no snapshot entry ${JSON.stringify(key)}`);
    const damaged = Buffer.from(stored);
    damaged[offset] = (damaged[offset] as number) ^ 0x01;
    dbs.snapshot.putSync(key, damaged);
  } finally {
    await dbs.env.close();
  }
}

// ---------------------------------------------------------------------------------------------
// The pure parts: capture, encoding, checksums.

type Row = readonly [userId: bigint, asset: string, available: bigint, status: AccountStatus];

/** Every account of a ledger, in a canonical order. */
function rowsOf(ledger: SpotLedger): Row[] {
  const rows: Row[] = [];
  const capture = ledger.captureAccounts();
  capture.visit(Number.MAX_SAFE_INTEGER, (userId, asset, available, status) => rows.push([userId, asset, available, status]));
  ledger.releaseCapture(capture);
  return rows.sort((a, b) => (a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
}

/** Decides commands from `source` against `ledger`, keeping every record and the processed set. */
function decideMany(
  ledger: SpotLedger,
  source: CommandSource,
  count: number,
  records: WalRecord[],
  processed: Map<string, OpRecord>,
): void {
  for (let i = 0; i < count; i++) {
    const decision = ledger.decide(source.command(), (opKey) => processed.get(opKey));
    if (decision.record === null) continue;
    records.push(decision.record);
    if (decision.processedKey !== null && decision.record.kind === 'op') processed.set(decision.processedKey, decision.record);
  }
}

test('a capture read in slices while records keep changing the ledger encodes exactly the state at its seq', () => {
  const ledger = new SpotLedger();
  const source = new CommandSource(7);
  const records: WalRecord[] = [];
  const processed = new Map<string, OpRecord>();
  for (let round = 0; round < 6; round++) {
    decideMany(ledger, source, 400, records, processed);
    const capture = ledger.captureAccounts();
    const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, Date.now());
    // Three accounts per slice, with 25 more commands between slices: every account changes,
    // new accounts and users appear, statuses flip, while the capture is being read.
    while (!capture.visit(3, encoder.add)) decideMany(ledger, source, 25, records, processed);
    ledger.releaseCapture(capture);
    const snapshot = encoder.finish();

    const restored = new SpotLedger();
    const header = decodeSnapshotHeader(snapshot.header, snapshot.info.seq);
    assert.ok(header.ok, header.ok ? '' : header.reason);
    assert.is(
      decodeSnapshotBody(snapshot.info, snapshot.chunks, (u, a, v, s) => restored.restoreAccount(u, a, v, s)),
      null,
    );
    restored.finishRestore(snapshot.info.seq, snapshot.info.accountCount);

    const reference = new SpotLedger();
    for (const record of records.slice(0, capture.seq)) reference.applyRecord(record);
    assert.is(reference.lastSeq, capture.seq);
    assert.equal(rowsOf(restored), rowsOf(reference), `round ${round}: snapshot at seq ${capture.seq}`);
    assert.ok(ledger.lastSeq > capture.seq, 'the ledger moved on while the capture was read');
  }
});

test('a restored ledger plus the records after its snapshot equals the ledger that wrote them', () => {
  const live = new SpotLedger();
  const source = new CommandSource(11);
  const records: WalRecord[] = [];
  const processed = new Map<string, OpRecord>();
  decideMany(live, source, 1_500, records, processed);
  const capture = live.captureAccounts();
  const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, 0);
  capture.visit(Number.MAX_SAFE_INTEGER, encoder.add);
  live.releaseCapture(capture);
  const snapshot = encoder.finish();
  decideMany(live, source, 1_500, records, processed);

  const restored = new SpotLedger();
  assert.is(
    decodeSnapshotBody(snapshot.info, snapshot.chunks, (u, a, v, s) => restored.restoreAccount(u, a, v, s)),
    null,
  );
  restored.finishRestore(snapshot.info.seq, snapshot.info.accountCount);
  for (const record of records.slice(snapshot.info.seq)) restored.applyRecord(record);
  assert.is(restored.lastSeq, live.lastSeq);
  assert.equal(rowsOf(restored), rowsOf(live));
});

test('a flipped byte anywhere in the header or a chunk is refused before any account is loaded', () => {
  const accounts = SNAPSHOT_CHUNK_ACCOUNTS_MAX + 2;
  const encoder = new SnapshotEncoder(9, accounts, 1_700_000_000_000);
  for (let i = 0; i < accounts; i++)
    encoder.add(BigInt(1 + Math.floor(i / 2)), i % 2 === 0 ? 'BTC' : 'USDT', BigInt(i), i % 7 === 0 ? 'FROZEN' : 'ACTIVE');
  const snapshot = encoder.finish();
  assert.is(snapshot.chunks.length, 2);
  let visited = 0;
  const count = (): void => {
    visited++;
  };
  for (let i = 0; i < snapshot.header.length; i++) {
    const header = Buffer.from(snapshot.header);
    header[i] = (header[i] as number) ^ 0x01;
    assert.not.ok(decodeSnapshotHeader(header, 9).ok, `header byte ${i}`);
  }
  assert.not.ok(decodeSnapshotHeader(snapshot.header, 10).ok, 'a header under another seq');
  const [first, last] = snapshot.chunks as [Buffer, Buffer];
  const positions = [
    ...Array.from({ length: last.length }, (_, i) => ({ chunk: 1, i })),
    ...Array.from({ length: 2_000 }, (_, k) => ({ chunk: 0, i: Math.floor((k * first.length) / 2_000) })),
  ];
  for (const { chunk, i } of positions) {
    const chunks = snapshot.chunks.map((bytes) => Buffer.from(bytes));
    const damaged = chunks[chunk] as Buffer;
    damaged[i] = (damaged[i] as number) ^ 0x80;
    const reason = decodeSnapshotBody(snapshot.info, chunks, count);
    assert.ok(reason?.includes(`chunk ${chunk + 1}`), `chunk ${chunk + 1} byte ${i}: ${String(reason)}`);
  }
  assert.match(String(decodeSnapshotBody(snapshot.info, [first], count)), /1 chunks found/);
  assert.match(String(decodeSnapshotBody(snapshot.info, [last, first], count)), /chunk 1/);
  assert.is(visited, 0, 'no account of a damaged snapshot reaches the ledger');
  assert.is(decodeSnapshotBody(snapshot.info, snapshot.chunks, count), null);
  assert.is(visited, accounts);
});

test('user ids past 2^43 and 2^53 and more than 1,024 assets are keyed apart, and round-trip through a snapshot', () => {
  const ledger = new SpotLedger();
  const users = [1n, 2n ** 43n - 2n, 2n ** 43n - 1n, 2n ** 43n, 2n ** 53n - 1n, 2n ** 53n, 2n ** 53n + 1n, USER_ID_MAX];
  const assets = Array.from({ length: 1_030 }, (_, i) => `A${i}`);
  const expected = new Map<string, bigint>();
  let n = 0;
  for (const asset of assets) {
    for (const userId of asset === 'A0' || asset === 'A1029' || asset === 'A1023' || asset === 'A1024'
      ? users
      : [users[n % users.length] as bigint]) {
      const amount = BigInt(++n);
      const decision = ledger.decide(deposit(`k${n}`, userId, amount, asset), () => undefined);
      assert.equal(decision.result, { kind: 'applied', duplicate: false });
      expected.set(`${userId}:${asset}`, amount);
    }
  }
  assert.is(ledger.accountCount, expected.size);
  for (const [key, amount] of expected) {
    const [userId, asset] = key.split(':') as [string, string];
    assert.is(ledger.balanceOf(BigInt(userId), asset)?.available, amount, key);
  }
  const capture = ledger.captureAccounts();
  const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, 0);
  capture.visit(Number.MAX_SAFE_INTEGER, encoder.add);
  ledger.releaseCapture(capture);
  const snapshot = encoder.finish();
  const restored = new SpotLedger();
  assert.is(
    decodeSnapshotBody(snapshot.info, snapshot.chunks, (u, a, v, st) => restored.restoreAccount(u, a, v, st)),
    null,
  );
  restored.finishRestore(snapshot.info.seq, snapshot.info.accountCount);
  assert.equal(rowsOf(restored), rowsOf(ledger));
  const withdrawn = restored.decide(withdraw('w-max', USER_ID_MAX, 1n, 'A1029'), () => undefined);
  assert.equal(withdrawn.result, { kind: 'applied', duplicate: false });
  assert.is(restored.balanceOf(USER_ID_MAX, 'A1029')?.available, (expected.get(`${USER_ID_MAX}:A1029`) ?? 0n) - 1n);
  assert.is(restored.balanceOf(2n ** 53n, 'A1029')?.available, expected.get(`${2n ** 53n}:A1029`));
});

test('a snapshot of no account (every record so far a refusal) round-trips as zero chunks', () => {
  const ledger = new SpotLedger();
  const decision = ledger.decide(withdraw('nothing', 1n, 5n), () => undefined);
  assert.equal(decision.result, { kind: 'rejected', code: 'SOURCE_ACCOUNT_NOT_FOUND', duplicate: false });
  const capture = ledger.captureAccounts();
  const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, 0);
  assert.ok(capture.visit(10, encoder.add));
  ledger.releaseCapture(capture);
  const snapshot = encoder.finish();
  assert.equal([snapshot.info.seq, snapshot.info.accountCount, snapshot.chunks.length, snapshot.info.bodyBytes], [1, 0, 0, 0]);
  const header = decodeSnapshotHeader(snapshot.header, 1);
  assert.ok(header.ok && decodeSnapshotBody(header.record, [], () => assert.unreachable('an account')) === null);
});

test('crc32c: chained updates equal one pass, and every length and alignment agrees with the byte loop', () => {
  const bytes = Buffer.alloc(4_099);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 2_654_435_761) >>> 24;
  const byteLoop = (start: number, end: number): number => {
    let crc = 0xffffffff;
    for (let i = start; i < end; i++) {
      crc ^= bytes[i] as number;
      for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
    }
    return (crc ^ 0xffffffff) >>> 0;
  };
  for (const start of [0, 1, 2, 3, 5]) {
    for (const length of [0, 1, 7, 8, 9, 63, 64, 255, 256, 257, 1_000, 4_000]) {
      assert.is(crc32c(bytes, start, start + length), byteLoop(start, start + length), `start ${start} length ${length}`);
    }
  }
  assert.is(crc32cUpdate(crc32cUpdate(0, bytes, 0, 1_001), bytes, 1_001, 4_099), crc32c(bytes));
  assert.is(crc32c(Buffer.from('123456789', 'ascii')), 0xe3069283);
});

test('a WAL pruned down to nothing keeps its last seq, continuity and replay from the mark, across reopen', async () => {
  await withDir(async (dir) => {
    const ledger = new SpotLedger();
    const batch = (from: number, to: number): WalBatch => {
      const encoder = new BatchEncoder();
      for (let i = from; i <= to; i++) {
        const decision = ledger.decide(deposit(`w${i}`, 1n, 1n), () => undefined);
        if (decision.record === null || decision.processedKey === null) throw new Error('no record');
        encoder.add(decision.record, decision.processedKey);
      }
      const encoded = encoder.finish();
      if (encoded === null) throw new Error('no batch');
      return encoded;
    };
    let log = openWal(dir);
    // Three batches, so three blocks: pruning deletes whole blocks.
    for (const [from, to] of [
      [1, 4],
      [5, 8],
      [9, 10],
    ] as const)
      await log.appendBatch(batch(from, to));
    assert.is(await log.pruneThrough(10, 4), 4, 'bounded: about recordsMax per transaction, whole blocks');
    assert.is(log.firstSeq(), 5);
    while (log.prunedThroughSeq() < 10) await log.pruneThrough(10, 4);
    assert.equal([log.lastSeq(), log.firstSeq()], [10, null]);
    await log.close();

    log = openWal(dir);
    assert.equal([log.prunedThroughSeq(), log.lastSeq(), log.replayInto(11, () => assert.unreachable('a record'))], [10, 10, 0]);
    assert.throws(() => [...log.replay(1)], /through 10 were pruned/);
    const next = batch(11, 12);
    assert.throws(() => log.appendBatch({ ...next, firstSeq: 12, blocks: [] }), /batch seq 12 does not continue 10/);
    await log.appendBatch(next);
    assert.equal(
      [...log.replay(11)].map((record) => record.seq),
      [11, 12],
    );
    assert.ok(log.getProcessed('DEPOSIT:w1') !== undefined, 'the processed set outlives pruning');
    await log.close();
  });
});

test('a snapshot inside a block prunes the blocks before it; replay from the mark skips the records up to it', async () => {
  await withDir(async (dir) => {
    const ledger = new SpotLedger();
    const records: WalRecord[] = [];
    for (let i = 1; i <= 8; i++) records.push(ledger.decide(deposit(`s${i}`, 1n, BigInt(i)), () => undefined).record as WalRecord);
    let log = openWal(dir);
    for (const part of [records.slice(0, 4), records.slice(4)]) {
      const encoded = encodeBatch(part);
      if (encoded === null) throw new Error('no batch');
      await log.appendBatch(encoded);
    }
    // Seq 6 sits inside the block of seqs 5..8: that block stays whole, the one ending at 4 goes.
    assert.is(await log.pruneThrough(6, 100), 6);
    assert.equal([log.firstSeq(), log.lastSeq()], [5, 8]);
    await log.close();
    log = openWal(dir);
    assert.is(log.prunedThroughSeq(), 6);
    assert.throws(() => log.replayInto(6, () => undefined), /through 6 were pruned/);
    assert.equal([...log.replay(7)], records.slice(6));
    await log.close();
  });
});

// ---------------------------------------------------------------------------------------------
// The real worker on a real LMDB directory.

test('snapshot plus tail equals full replay: a snapshotting core and a never-snapshotting one agree with the auditor', async () => {
  await withDir(async (dirA) => {
    await withDir(async (_dirB, startB) => {
      const options = { walDir: dirA, batchMax: 64, snapshotEveryRecords: 150, snapshotSliceAccounts: 5 };
      let coreA = await startUbsCore(options);
      let coreB = await startB({ snapshotEveryRecords: 0, closeSnapshotRecordsMin: NEVER });
      try {
        let clientA = new UbsClient(coreA.connect());
        let clientB = new UbsClient(coreB.connect());
        const source = new CommandSource(2024);
        const model = new Model();
        const first: UbsCommand[] = [];
        for (let round = 0; round < 40; round++) {
          const commands = Array.from({ length: 60 }, () => source.command());
          const [resultsA, resultsB] = await Promise.all([sendAll(clientA, commands), sendAll(clientB, commands)]);
          assert.equal(resultsA, resultsB, `round ${round}: both cores decide alike`);
          commands.forEach((command, i) => {
            model.audit(command, resultsA[i] ?? null);
          });
          if (round === 0) first.push(...commands);
        }
        const settled = (s: UbsStats): boolean =>
          s.snapshots !== undefined &&
          s.snapshots.pendingSeq === null &&
          s.snapshots.walPrunedThroughSeq === s.snapshots.seq &&
          s.walSeq - s.snapshots.seq < 150;
        const statsA = await until(coreA, (s) => (s.snapshots?.written ?? 0) >= 3 && settled(s), 'three snapshots, the last one pruned');
        await model.check(clientA, 'A live');
        await stop(coreA, clientA);
        await stop(coreB, clientB);

        coreA = await startUbsCore(options);
        coreB = await startB({ snapshotEveryRecords: 0, closeSnapshotRecordsMin: NEVER });
        assert.ok(coreA.ready.snapshotSeq > 0, 'A starts from a snapshot');
        assert.is(coreA.ready.snapshotSeq + coreA.ready.replayedRecords, statsA.walSeq, 'A replays only the tail');
        assert.ok(coreA.ready.replayedRecords < 150, `A's tail is shorter than the period: ${coreA.ready.replayedRecords}`);
        assert.equal([coreB.ready.snapshotSeq, coreB.ready.replayedRecords], [0, statsA.walSeq], 'B replays every record');
        clientA = new UbsClient(coreA.connect());
        clientB = new UbsClient(coreB.connect());
        await model.check(clientA, 'A restarted');
        await model.check(clientB, 'B restarted');
        const [afterA, afterB] = [await coreA.control.stats(), await coreB.control.stats()];
        assert.equal([afterA.accounts, afterA.walSeq], [afterB.accounts, afterB.walSeq]);
        // The first round's records are pruned from A's WAL; their processed entries answer still.
        assert.equal(await sendAll(clientA, first), await sendAll(clientB, first));
        await stop(coreA, clientA);
        await stop(coreB, clientB);
      } finally {
        await coreA.worker.terminate();
      }
    });
  });
});

test('restart after pruning restores exact balances and the processed set: a repeat is a duplicate, never applied again', async () => {
  await withDir(async (dir, start) => {
    const options = { snapshotEveryRecords: 50, snapshotSliceAccounts: 2 };
    let core = await start(options);
    let client = new UbsClient(core.connect());
    const model = new Model();
    const early = [deposit('d-early', 1n, 1_000n), withdraw('w-early', 1n, 300n)];
    for (const command of early) model.audit(command, await client.send(command, TIMEOUT_MS));
    for (let round = 0; round < 6; round++) {
      const commands = Array.from({ length: 50 }, (_, i) => deposit(`d${round}-${i}`, BigInt(2 + (i % 9)), BigInt(1 + i)));
      const results = await sendAll(client, commands);
      commands.forEach((command, i) => {
        model.audit(command, results[i] ?? null);
      });
    }
    const stats = await until(
      core,
      (s) =>
        s.snapshots !== undefined &&
        s.snapshots.seq >= 250 &&
        s.snapshots.walPrunedThroughSeq === s.snapshots.seq &&
        s.snapshots.pendingSeq === null,
      'a pruned snapshot',
    );
    await stop(core, client);

    const disk = await inspect(dir);
    assert.equal(disk.snapshotSeqs, [stats.snapshots?.seq], 'older snapshots are deleted');
    assert.is(disk.prunedThrough, stats.snapshots?.seq);
    assert.is(disk.firstWalSeq, disk.prunedThrough + 1 <= disk.lastSeq ? disk.prunedThrough + 1 : null);
    assert.is(disk.lastSeq, stats.walSeq);

    core = await start(options);
    client = new UbsClient(core.connect());
    assert.is(core.ready.snapshotSeq, stats.snapshots?.seq);
    await model.check(client, 'restarted');
    assert.equal(await sendAll(client, early), [
      { kind: 'applied', duplicate: true },
      { kind: 'applied', duplicate: true },
    ]);
    assert.is((await client.send(withdraw('w-early', 1n, 301n), TIMEOUT_MS))?.kind, 'conflict');
    const refund: UbsCommand = { kind: 'transfer_op', op: 'REFUND', reqId: 'w-early', userId: 1n, asset: 'BTC', amount: 300n };
    model.audit(refund, await client.send(refund, TIMEOUT_MS));
    assert.equal(await client.send(refund, TIMEOUT_MS), { kind: 'applied', duplicate: true });
    await model.check(client, 'after the refund');
    assert.is(model.available.get('1:BTC'), 1_000n);
    await stop(core, client);
  });
});

/**
 * Builds a state with a periodic snapshot (P) the WAL is pruned through, then a snapshot written
 * by `close` (C) after a few more records; returns the model and both seqs.
 */
async function closedWithSnapshot(
  start: (options?: Partial<UbsWorkerData>) => Promise<UbsCoreHandle>,
): Promise<{ model: Model; seq: number; previous: number }> {
  const model = new Model();
  const run = async (core: UbsCoreHandle, commands: readonly UbsCommand[]): Promise<UbsClient> => {
    const client = new UbsClient(core.connect());
    const results = await sendAll(client, commands);
    commands.forEach((command, i) => {
      model.audit(command, results[i] ?? null);
    });
    return client;
  };
  const periodic = await start({ snapshotEveryRecords: 40, closeSnapshotRecordsMin: NEVER });
  const first = await run(
    periodic,
    Array.from({ length: 130 }, (_, i) => deposit(`c${i}`, BigInt(1 + (i % 7)), 10n, ASSETS[i % 3])),
  );
  const settled = await until(
    periodic,
    (s) => s.snapshots !== undefined && s.snapshots.pendingSeq === null && s.snapshots.walPrunedThroughSeq === s.snapshots.seq,
    'a pruned snapshot',
  );
  await stop(periodic, first);
  const closing = await start({ snapshotEveryRecords: 0, closeSnapshotRecordsMin: 1 });
  const second = await run(
    closing,
    Array.from({ length: 5 }, (_, i) => withdraw(`e${i}`, 1n, 1n)),
  );
  const stats = await closing.control.stats();
  await stop(closing, second);
  return { model, seq: stats.walSeq, previous: settled.snapshots?.seq ?? 0 };
}

test('a corrupted newest snapshot refuses start, naming the snapshot and the damage, once the WAL before it is pruned', async () => {
  await withDir(async (dir, start) => {
    const { seq } = await closedWithSnapshot(start);
    // One more start and close: the closing snapshot becomes the only one, the WAL is pruned through it.
    const again = await start({ snapshotEveryRecords: 40 });
    await until(again, (s) => s.snapshots?.walPrunedThroughSeq === seq, 'pruning through the closing snapshot');
    await stop(again, new UbsClient(again.connect()));
    const disk = await inspect(dir);
    assert.equal([disk.snapshotSeqs, disk.prunedThrough, disk.firstWalSeq], [[seq], seq, null]);

    await flipByte(dir, [seq, 1], 40);
    try {
      await start();
      assert.unreachable('a core started from a corrupt snapshot');
    } catch (error) {
      const message = String(error);
      assert.match(message, new RegExp(`newest snapshot, at seq ${seq}, is corrupt: chunk 1 checksum mismatch`));
      assert.match(message, new RegExp(`pruned through seq ${seq}`));
      assert.match(message, /refusing to start/);
    }
  });
});

test('a corrupted newest snapshot is passed over for an older one only when every WAL record after that one is present', async () => {
  await withDir(async (dir, start) => {
    const { model, seq, previous } = await closedWithSnapshot(start);
    const disk = await inspect(dir);
    assert.equal([disk.snapshotSeqs, disk.prunedThrough], [[seq, previous], previous]);
    await flipByte(dir, [seq, 0], 20);

    let core = await start({ closeSnapshotRecordsMin: 1 });
    assert.equal([core.ready.snapshotSeq, core.ready.replayedRecords], [previous, seq - previous]);
    let client = new UbsClient(core.connect());
    await model.check(client, 'fell back');
    // The closing snapshot lands on the corrupt one's seq and replaces it.
    await stop(core, client);
    core = await start();
    assert.equal([core.ready.snapshotSeq, core.ready.replayedRecords], [seq, 0]);
    client = new UbsClient(core.connect());
    await model.check(client, 'replaced');
    await stop(core, client);
  });
});

test('a crash (worker.terminate) between a batch and its snapshot loses nothing acknowledged', async () => {
  await withDir(async (_dir, start) => {
    const accounts = 20_000;
    // One account per slice: encoding a snapshot takes 20,000 event-loop turns, a wide window.
    const options = { batchMax: 256, snapshotEveryRecords: 3_000, snapshotSliceAccounts: 1 };
    const core = await start(options);
    const client = new UbsClient(core.connect(), { batchMax: 512 });
    for (let from = 0; from < accounts; from += 2_000) {
      const commands = Array.from({ length: 2_000 }, (_, i) => deposit(`open-${from + i}`, BigInt(1 + from + i), 5n));
      for (const result of await sendAll(client, commands)) assert.equal(result, { kind: 'applied', duplicate: false });
    }
    const keys: string[] = [];
    const acknowledged = new Set<string>();
    let pendingSeq: number | null = null;
    for (let round = 0; round < 500 && pendingSeq === null; round++) {
      const sends = Array.from({ length: 200 }, (_, i) => {
        const key = `t${round}-${i}`;
        keys.push(key);
        return client.send(deposit(key, BigInt(1 + ((round * 200 + i) % accounts)), 1n), 3_000).then((result) => {
          if (result !== null) acknowledged.add(key);
        });
      });
      const stats = await core.control.stats();
      if (stats.snapshots?.pendingSeq != null && acknowledged.size > 0) {
        pendingSeq = stats.snapshots.pendingSeq;
        await core.worker.terminate();
      }
      await Promise.all(sends);
    }
    client.close();
    assert.ok(pendingSeq !== null, 'the crash landed while a snapshot was pending');

    const reopened = await start(options);
    assert.ok(reopened.ready.snapshotSeq <= (pendingSeq ?? 0), `restart from snapshot ${reopened.ready.snapshotSeq}`);
    const again = new UbsClient(reopened.connect(), { batchMax: 512 });
    const answers = await sendAll(
      again,
      keys.map((key) => ({ kind: 'query_op', op: 'DEPOSIT', key })),
    );
    let applied = 0;
    answers.forEach((answer, i) => {
      const key = keys[i] as string;
      if (answer?.kind === 'applied') applied++;
      else assert.ok(!acknowledged.has(key) && answer?.kind === 'not_found', `${key}: ${JSON.stringify(answer)}`);
    });
    assert.ok(applied >= acknowledged.size, `${applied} applied cover ${acknowledged.size} acknowledged`);
    const stats = await reopened.control.stats();
    assert.is(stats.walSeq, accounts + applied, 'the WAL holds exactly the openings and the applied deposits');
    let total = 0n;
    for (let from = 1; from <= accounts; from += 2_000) {
      const results = await sendAll(
        again,
        Array.from({ length: 2_000 }, (_, i) => ({ kind: 'balances', userId: BigInt(from + i) })),
      );
      for (const result of results) {
        if (result?.kind !== 'balances') throw new Error(`balances: ${JSON.stringify(result?.kind)}`);
        total += result.balances.reduce((sum, balance) => sum + balance.available, 0n);
      }
    }
    assert.is(total, BigInt(accounts) * 5n + BigInt(applied), 'the auditor sums every balance');
    await stop(reopened, again);
  });
});

test('snapshots are taken every snapshotEveryRecords records (counter in stats); 0 disables them, and close still writes one', async () => {
  await withDir(async (_dir, start) => {
    const core = await start({ snapshotEveryRecords: 100, snapshotSliceAccounts: 3 });
    const client = new UbsClient(core.connect());
    for (let round = 0; round < 20; round++) {
      await sendAll(
        client,
        Array.from({ length: 100 }, (_, i) => deposit(`p${round}-${i}`, BigInt(1 + i), 1n)),
      );
    }
    const stats = await until(
      core,
      (s) =>
        s.snapshots !== undefined &&
        s.snapshots.pendingSeq === null &&
        s.snapshots.walPrunedThroughSeq === s.snapshots.seq &&
        s.walSeq - s.snapshots.seq < 100,
      'snapshots settled',
    );
    const snapshots = stats.snapshots;
    assert.ok(snapshots !== undefined && snapshots.written >= 4, `written: ${JSON.stringify(snapshots)}`);
    assert.ok(snapshots !== undefined && Number.isFinite(snapshots.sliceMsMax) && snapshots.sliceMsMax > 0);
    await stop(core, client);
  });
  await withDir(async (_dir, start) => {
    const core = await start({ snapshotEveryRecords: 0 });
    const client = new UbsClient(core.connect());
    for (let round = 0; round < 10; round++) {
      await sendAll(
        client,
        Array.from({ length: 100 }, (_, i) => deposit(`q${round}-${i}`, BigInt(1 + i), 1n)),
      );
    }
    assert.is((await core.control.stats()).snapshots, undefined, 'no periodic snapshot');
    await stop(core, client);
    const restarted = await start({ snapshotEveryRecords: 0 });
    assert.equal(
      [restarted.ready.snapshotSeq, restarted.ready.replayedRecords],
      [1_000, 0],
      'the closing snapshot covers all 1,000 records',
    );
    await stop(restarted, new UbsClient(restarted.connect()));
  });
});

test.run();
