// Proves the processed-set filter never hides a processed key: the Bloom filter has no false
// "absent"; a key decided while the filter is being built, durable or not, is still found; the
// filter replaces LMDB reads only for keys never processed; and a restarted core answers every
// repeat as a duplicate, before and after its filter is ready.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startFilterBuild } from '../../actors/ubscore/filter-build.js';
import { ProcessedSet } from '../../src/ubscore/processed/processed.js';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import { opKeyOf } from '../../src/domain/spot-records.js';
import type { OpRecord } from '../../src/domain/spot-records.js';
import type { UbsCommand } from '../../src/domain/spot-commands.js';
import { encodeBatch } from '../../wal/block.js';
import { KeyFilter } from '../../wal/key-filter.js';
import { openWal } from '../../wal/log.js';
import type { WalLog } from '../../wal/log.js';

const TIMEOUT_MS = 10_000;
const WAIT_MS_MAX = 20_000;

function op(seq: number, key: string): OpRecord {
  return { kind: 'op', seq, op: 'DEPOSIT', key, userId: 1n, asset: 'BTC', amount: 1n, outcome: { kind: 'applied' } };
}

async function withLog(body: (log: WalLog, dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'ubscore-processed-'));
  const log = openWal(dir);
  try {
    await body(log, dir);
  } finally {
    await log.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Appends `records` as one durable batch. */
async function append(log: WalLog, records: readonly OpRecord[]): Promise<void> {
  const batch = encodeBatch(records);
  if (batch === null) throw new Error('no records');
  await log.appendBatch(batch);
}

/** Waits until the filter is ready and, when given, at least `capacityKeys` large. */
async function untilReady(set: ProcessedSet, capacityKeys = 0): Promise<void> {
  const deadline = Date.now() + WAIT_MS_MAX;
  while (!set.stats().filterReady || set.stats().filterCapacityKeys < capacityKeys) {
    if (Date.now() > deadline) throw new Error(`the filter never became ready: ${JSON.stringify(set.stats())}`);
    await sleep(5);
  }
}

test('the filter answers "absent" for no key it holds, within and far past its capacity', () => {
  const filter = new KeyFilter(1_000, 1_000);
  const keys = Array.from({ length: 20_000 }, (_, i) => opKeyOf('DEPOSIT', `k-${i}`));
  for (const [i, key] of keys.entries()) {
    filter.add(key);
    if (i === filter.capacityKeys) {
      const misses = Array.from({ length: 10_000 }, (_, j) => opKeyOf('DEPOSIT', `other-${j}`)).filter((k) =>
        filter.mightContain(k),
      ).length;
      assert.ok(misses < 300, `${misses} false "maybe" in 10,000 at capacity`);
    }
  }
  for (const key of keys) assert.ok(filter.mightContain(key), key);
});

test('keys pending or committed while the filter is built are found once it is ready; fresh keys skip LMDB', async () => {
  await withLog(async (log, dir) => {
    let seq = 0;
    const durable = Array.from({ length: 50 }, (_, i) => op(++seq, `before-${i}`));
    await append(log, durable);
    // Keys decided before the build's first slice, one batch committed, the other still pending.
    const set = new ProcessedSet(log, dir, startFilterBuild, 16);
    const committed = Array.from({ length: 40 }, (_, i) => op(++seq, `committed-${i}`));
    for (const record of committed) set.add(opKeyOf(record.op, record.key), record);
    set.seal();
    const pending = Array.from({ length: 40 }, (_, i) => op(++seq, `pending-${i}`));
    for (const record of pending) set.add(opKeyOf(record.op, record.key), record);
    assert.not.ok(set.stats().filterReady);
    await append(log, committed);
    set.settle(encodeBatch(committed)?.processed ?? []);
    await untilReady(set);
    for (const record of [...durable, ...committed, ...pending])
      assert.equal(set.lookup(opKeyOf(record.op, record.key)), record, record.key);
    const reads = set.stats().lmdbReads;
    for (let i = 0; i < 1_000; i++) assert.is(set.lookup(opKeyOf('DEPOSIT', `fresh-${i}`)), undefined);
    assert.ok(set.stats().lmdbReads - reads < 50, `fresh keys read LMDB ${set.stats().lmdbReads - reads} times in 1,000`);
    await set.close();
  });
});

test('a filter past its capacity is rebuilt larger while keys keep arriving, and never loses a pending one', async () => {
  await withLog(async (log, dir) => {
    const set = new ProcessedSet(log, dir, startFilterBuild, 16);
    await untilReady(set);
    const first = set.stats().filterCapacityKeys;
    const records: OpRecord[] = [];
    const decide = (count: number): OpRecord[] => {
      const batch = Array.from({ length: count }, (_, i) => op(records.length + i + 1, `r${records.length + i}`));
      for (const record of batch) set.add(opKeyOf(record.op, record.key), record);
      set.seal();
      records.push(...batch);
      return batch;
    };
    const check = (label: string): void => {
      for (const record of records) assert.equal(set.lookup(opKeyOf(record.op, record.key)), record, `${label}: ${record.key}`);
    };
    // Past the capacity a rebuild starts while this batch is pending, and it stays pending until
    // the new filter is in use: the helper never reads it from LMDB, so only the delta has it.
    const pending = decide(first + 10);
    await untilReady(set, first + 1);
    check('rebuilt while pending');
    await append(log, pending);
    set.settle(encodeBatch(pending)?.processed ?? []);
    check('committed');
    for (let round = 0; round < 10; round++) {
      const batch = decide(40);
      await append(log, batch);
      set.settle(encodeBatch(batch)?.processed ?? []);
      check(`round ${round}`);
    }
    await untilReady(set);
    check('settled');
    await set.close();
  });
});

async function metric(core: UbsCoreHandle, name: string): Promise<number> {
  const answer = await core.control.metrics();
  const found = answer.kind === 'metrics' ? answer.families.find((m) => m.name === name) : undefined;
  return found?.values[0]?.value ?? -1;
}

test('a restarted core answers every repeat as a duplicate, before and after its filter is ready', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'ubscore-processed-'));
  const cores: UbsCoreHandle[] = [];
  try {
    const deposit = (key: string): UbsCommand => ({
      kind: 'external_op',
      op: 'EXTERNAL_DEPOSIT',
      ref: key,
      userId: 1n,
      asset: 'USDT',
      amount: 1n,
    });
    const keys = Array.from({ length: 3_000 }, (_, i) => `x${i}`);
    const first = await startUbsCore({ walDir: dir, batchMax: 256 });
    cores.push(first);
    let client = new UbsClient(first.connect());
    for (const result of await Promise.all(keys.map((key) => client.send(deposit(key), TIMEOUT_MS))))
      assert.equal(result, { kind: 'applied', duplicate: false });
    client.close();
    await first.control.close();

    const second = await startUbsCore({ walDir: dir, batchMax: 256 });
    cores.push(second);
    client = new UbsClient(second.connect());
    // Sent at once: the filter of 3,000 keys is built in the turns that follow.
    const early = await Promise.all(keys.map((key) => client.send(deposit(key), TIMEOUT_MS)));
    for (const result of early) assert.equal(result, { kind: 'applied', duplicate: true });
    const deadline = Date.now() + WAIT_MS_MAX;
    while ((await metric(second, 'transfer_ubscore_processed_filter_ready')) !== 1) {
      if (Date.now() > deadline) throw new Error('the filter never became ready');
      await sleep(5);
    }
    const late = await Promise.all(keys.map((key) => client.send(deposit(key), TIMEOUT_MS)));
    for (const result of late) assert.equal(result, { kind: 'applied', duplicate: true });
    assert.equal(await client.send(deposit('new'), TIMEOUT_MS), { kind: 'applied', duplicate: false });
    const balances = await client.send({ kind: 'balances', userId: 1n }, TIMEOUT_MS);
    assert.equal(balances, { kind: 'balances', balances: [{ asset: 'USDT', available: 3_001n, status: 'ACTIVE' }] });
    client.close();
    await second.control.close();
  } finally {
    for (const core of cores) await core.worker.terminate();
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
