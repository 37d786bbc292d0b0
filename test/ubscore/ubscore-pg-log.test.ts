// Proves UBSCore's log in PostgreSQL: a batch is answered only once spot_log holds its
// blocks with LMDB's bytes, an unknown PostgreSQL outcome is retried until it lands (one row per
// block), a superseded owner epoch stops UBSCore without an answer or a row, and snapshots reach
// spot_snapshots byte for byte, the newest two kept.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UbsClient, startUbsCore, type UbsCoreHandle } from '../../actors/ubscore/client.js';
import { migrate } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { SpotLogStore } from '../../src/ubscore/spot-log/store.js';
import type { UbsHealthEvent } from '../../src/ubscore/control.js';
import type { UbsCommand } from '../../src/domain/spot-commands.js';
import { within } from '../../src/within.js';
import { openWal } from '../../wal/log.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

const TIMEOUT_MS = 10_000;
const TAG = 'pglogtest';
/** Long enough for LMDB's sync many times over: an answer in this window did not wait for PostgreSQL. */
const HELD_MS = 500;

let db: TestDatabase;
let admin: Sql;
let root = '';
let dirs = 0;
const running = new Set<UbsCoreHandle>();

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ubscore-pg-log-'));
  db = await createTestDatabase();
  admin = openSql(db.url, { max: 4, application: 'test-admin' });
  await migrate(admin);
  // As an owner's claim would: the log is written at a claimed epoch.
  await admin`UPDATE ledger_owner SET epoch = 1`;
});

test.after(async () => {
  for (const core of running) await core.worker.terminate();
  await admin.end({ timeout: 5 });
  await db.drop();
  await rm(root, { recursive: true, force: true });
});

/** A lock a failed test left held is released, so the next tests still run. */
let heldLock: (() => Promise<void>) | null = null;
test.after.each(async () => {
  await heldLock?.();
});

// Every test starts a ledger from seq 1: the log of the one before goes (an unfenced connection may).
test.before.each(async () => {
  await admin`DELETE FROM spot_log`;
  await admin`DELETE FROM spot_snapshots`;
});

type Started = { readonly core: UbsCoreHandle; readonly client: UbsClient; readonly events: UbsHealthEvent[]; readonly dir: string };

async function start(extra: { snapshotEveryRecords?: number } = {}): Promise<Started> {
  dirs++;
  const dir = join(root, `wal-${dirs}`);
  const [row] = await admin<{ epoch: bigint }[]>`SELECT epoch FROM ledger_owner`;
  const owner = { tag: TAG, epoch: Number(row?.epoch) };
  const events: UbsHealthEvent[] = [];
  const core = await startUbsCore({ walDir: dir, batchMax: 64, ...extra, spotLog: { databaseUrl: db.url, owner } }, (event) =>
    events.push(event),
  );
  running.add(core);
  return { core, client: new UbsClient(core.connect()), events, dir };
}

async function stop(core: UbsCoreHandle): Promise<void> {
  assert.equal(await core.control.close(), { closed: true });
  await core.worker.terminate();
  running.delete(core);
}

const deposit = (reqId: string, userId: bigint, amount = 10n): UbsCommand => ({
  kind: 'transfer_op',
  op: 'DEPOSIT',
  reqId,
  userId,
  asset: 'BTC',
  amount,
});

/** Holds spot_log locked from a test connection until the returned release is called. */
async function lockSpotLog(): Promise<() => Promise<void>> {
  let release = (): void => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let locked = (): void => undefined;
  const isLocked = new Promise<void>((resolve) => {
    locked = resolve;
  });
  const done = admin.begin(async (tx) => {
    await tx`LOCK TABLE spot_log IN ACCESS EXCLUSIVE MODE`;
    locked();
    await released;
  });
  await isLocked;
  heldLock = async () => {
    heldLock = null;
    release();
    await done;
  };
  return heldLock;
}

/** spot_log's rows, and LMDB's wal entries read after the core closed: last seq -> bytes as hex. */
async function pgBlocks(): Promise<Map<number, string>> {
  const rows = await admin<{ last_seq: bigint; block: Buffer }[]>`SELECT last_seq, block FROM spot_log ORDER BY last_seq`;
  return new Map(rows.map((row) => [Number(row.last_seq), row.block.toString('hex')]));
}

async function lmdbBlocks(dir: string): Promise<Map<number, string>> {
  const wal = openWal(dir);
  try {
    const blocks = new Map<number, string>();
    for (const { key, value } of wal.databases.wal.getRange({})) blocks.set(key as number, (value as Buffer).toString('hex'));
    return blocks;
  } finally {
    await wal.close();
  }
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('a batch is answered only once PostgreSQL committed it, with the bytes LMDB holds', async () => {
  const { core, client, dir } = await start();
  assert.equal(await client.send(deposit('a1', 1n), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  const release = await lockSpotLog();
  const reply = client.send(deposit('a2', 1n), TIMEOUT_MS);
  assert.is(await within(reply, HELD_MS, 'no answer'), 'no answer', 'answered while PostgreSQL could not commit the block');
  await release();
  assert.equal(await reply, { kind: 'applied', duplicate: false });
  await stop(core);
  const pg = await pgBlocks();
  assert.equal([...pg.keys()], [1, 2]);
  assert.equal(pg, await lmdbBlocks(dir), 'spot_log holds exactly the blocks LMDB holds, byte for byte');
});

test('an unknown PostgreSQL outcome is retried until it lands, nothing answered meanwhile, one row per block', async () => {
  const { core, client, events, dir } = await start();
  const release = await lockSpotLog();
  const reply = client.send(deposit('b1', 2n), TIMEOUT_MS);
  // The worker's backend waits on the lock: end it, so its append ends without an answer.
  const waiting = async () =>
    (await admin`SELECT 1 FROM pg_stat_activity WHERE application_name LIKE ${`${TAG}%`} AND wait_event_type = 'Lock'`).length > 0;
  await until('the append to wait on the lock', waiting);
  await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE ${`${TAG}%`}`;
  await until('ubs.degraded', () => events.some((event) => event.kind === 'ubs.degraded'));
  // The main thread's words depend on it: commands wait here, they are not answered unavailable.
  assert.is(events.find((event) => event.kind === 'ubs.degraded')?.cause, 'pg-log');
  // The retry reconnects and waits on the lock again.
  await until('the retry to wait on the lock', waiting);
  assert.is(await within(reply, 100, 'no answer'), 'no answer', 'answered before PostgreSQL committed the block');
  await release();
  assert.equal(await reply, { kind: 'applied', duplicate: false });
  await until('ubs.recovered', () => events.some((event) => event.kind === 'ubs.recovered'));
  assert.equal(await client.send(deposit('b2', 2n), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  const metrics = await core.control.metrics();
  if (metrics.kind !== 'metrics') throw new Error(metrics.message);
  const retries = metrics.families.find((family) => family.name === 'transfer_ubscore_pg_log_retries_total')?.values[0]?.value ?? 0;
  assert.ok(retries >= 1, `retries counted: ${retries}`);
  await stop(core);
  const pg = await pgBlocks();
  assert.equal([...pg.keys()], [1, 2], 'one row per block');
  assert.equal(pg, await lmdbBlocks(dir));
});

test('a superseded owner epoch stops UBSCore: the command is not answered and nothing more lands in spot_log', async () => {
  const { core, client, events } = await start();
  assert.equal(await client.send(deposit('c1', 3n), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  const exited = new Promise<number>((resolve) => core.worker.once('exit', resolve));
  await admin`UPDATE ledger_owner SET epoch = epoch + 1`;
  const reply = await client.send(deposit('c2', 3n), 3_000);
  assert.is(reply, null, 'a fenced batch is never answered');
  assert.is(await within(exited, TIMEOUT_MS, 'running'), 1, 'the worker exits');
  running.delete(core);
  const fatal = events.find((event) => event.kind === 'ubs.fatal');
  assert.ok(fatal !== undefined && /LF001|superseded/.test(fatal.message), `fatal names the fence: ${JSON.stringify(fatal)}`);
  assert.equal([...(await pgBlocks()).keys()], [1], 'nothing after the fence');
});

test('snapshots reach spot_snapshots with the bytes LMDB holds; the newest two are kept', async () => {
  const { core, client, dir } = await start({ snapshotEveryRecords: 5 });
  for (let i = 0; i < 24; i++) {
    assert.equal(await client.send(deposit(`s${i}`, BigInt(100 + i)), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  }
  const store = new SpotLogStore(admin);
  let newest = 0;
  await until('the newest snapshot in PostgreSQL', async () => {
    const snapshots = (await core.control.stats()).snapshots;
    newest = snapshots?.seq ?? 0;
    return snapshots?.pendingSeq === null && newest >= 20 && (await store.snapshotSeqs())[0] === newest;
  });
  await stop(core);
  const seqs = await store.snapshotSeqs();
  assert.is(seqs.length, 2, `the newest two are kept: ${seqs.join(', ')}`);
  const wal = openWal(dir);
  try {
    const local = new SnapshotStore(wal.databases).stored(newest);
    const copied = await store.snapshot(newest);
    assert.ok(local !== null && copied !== null);
    assert.ok(copied.header.equals(local.header), 'the same header');
    assert.equal(
      copied.chunks.map((chunk) => chunk.toString('hex')),
      local.chunks.map((chunk) => chunk.toString('hex')),
      'the same chunks',
    );
  } finally {
    await wal.close();
  }
});

test.run();
