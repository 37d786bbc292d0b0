// Proves the processed set's seq index (wal/processed-index.ts) on a real LMDB: every writer keeps
// it in step with the set, a retention step reads only the entries at or below its horizon, an
// environment written before the index gets it built once when opened, and an index entry left by
// a key written again under a later seq indexes nothing: it goes alone, never with the entry.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { opKeyOf } from '../../src/domain/spot-records.js';
import type { OpRecord } from '../../src/domain/spot-records.js';
import { encodeBatch } from '../../wal/block.js';
import { openWal, openWalDatabases } from '../../wal/log.js';
import type { WalLog } from '../../wal/log.js';
import { PROCESSED_INDEX_KEY } from '../../wal/processed-index.js';

let root = '';
let dirs = 0;

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'wal-processed-index-'));
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

function op(seq: number, key: string): OpRecord {
  return { kind: 'op', seq, op: 'DEPOSIT', key, userId: 1n, asset: 'BTC', amount: 1n, outcome: { kind: 'applied' } };
}

async function append(log: WalLog, records: readonly OpRecord[]): Promise<void> {
  const batch = encodeBatch(records);
  if (batch === null) throw new Error('no records');
  await log.appendBatch(batch);
}

/** The index as [seq, ledger name] pairs, in seq order. */
function indexOf(log: WalLog): [number, string][] {
  return [...log.databases.processedSeq.getRange({})].map(({ key, value }) => [key, Buffer.from(value).toString('latin1').slice(1)]);
}

const none = (): boolean => false;

test('a batch writes one index entry per processed entry, and a step reads only the entries at or below its horizon', async () => {
  const log = openWal(join(root, `wal-${++dirs}`));
  await append(
    log,
    Array.from({ length: 300 }, (_, i) => op(i + 1, `k-${i + 1}`)),
  );
  assert.is(indexOf(log).length, 300);
  assert.equal(indexOf(log).slice(0, 2), [
    [1, 'k-1'],
    [2, 'k-2'],
  ]);
  // A pass that walked the whole set would read 300 here.
  const step = await log.pruneProcessed(0, 1_000, 20, none);
  assert.equal(step, { next: null, scanned: 20, pruned: 20, oldestKeptSeq: null });
  assert.is(log.processedCount(), 280);
  assert.is(indexOf(log).length, 280);
  assert.is(log.oldestProcessedSeq(), 21);
  assert.is(log.getProcessed(opKeyOf('DEPOSIT', 'k-20')), undefined);
  assert.ok(log.getProcessed(opKeyOf('DEPOSIT', 'k-21')) !== undefined);
  // Bounded steps: the cursor is the next seq, and kept entries are read but stay.
  const first = await log.pruneProcessed(0, 10, 60, (opKey) => opKey.endsWith('5'));
  assert.equal(first, { next: 31, scanned: 10, pruned: 9, oldestKeptSeq: 25 });
  await log.close();
});

test('an environment written before the index gets it built when opened, once, and then prunes by it', async () => {
  const dir = join(root, `wal-${++dirs}`);
  const first = openWal(dir);
  await append(
    first,
    Array.from({ length: 120 }, (_, i) => op(i + 1, `old-${i + 1}`)),
  );
  await first.close();
  // What a build from before the index left: the set, no index, no mark.
  const raw = openWalDatabases(dir);
  await raw.env.transaction(() => {
    for (const key of raw.processedSeq.getKeys({})) void raw.processedSeq.remove(key);
    void raw.meta.remove(PROCESSED_INDEX_KEY);
  });
  assert.is(raw.processedSeq.getKeysCount({}), 0);
  await raw.env.close();

  const log = openWal(dir);
  assert.is(indexOf(log).length, 120);
  assert.is(log.oldestProcessedSeq(), 1);
  assert.equal(await log.pruneProcessed(0, 1_000, 100, none), { next: null, scanned: 100, pruned: 100, oldestKeptSeq: null });
  assert.is(log.processedCount(), 20);
  await log.close();
});

test('a key written again under a later seq: its old index entry goes alone, the entry stays', async () => {
  const log = openWal(join(root, `wal-${++dirs}`));
  // A standby follows the owner, who pruned `again` and applied it anew at seq 3.
  await append(log, [op(1, 'again'), op(2, 'gone')]);
  await append(log, [op(3, 'again')]);
  assert.equal(indexOf(log), [
    [1, 'again'],
    [2, 'gone'],
    [3, 'again'],
  ]);
  assert.equal(await log.pruneProcessed(0, 1_000, 2, none), { next: null, scanned: 2, pruned: 1, oldestKeptSeq: null });
  assert.equal(log.getProcessed(opKeyOf('DEPOSIT', 'again')), op(3, 'again'));
  assert.equal(indexOf(log), [[3, 'again']]);
  assert.is(log.oldestProcessedSeq(), 3);
  await log.close();
});

test.run();
