// Proves the WAL block format (version 2): a batch round-trips through its blocks and through
// LMDB, every byte of a block is covered so a flipped, missing or extra byte is refused naming the
// record it damages, and a directory of another format version is refused with a clear message.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { opKeyOf } from '../../src/domain/spot-records.js';
import type { OpRecord, WalRecord } from '../../src/domain/spot-records.js';
import { BLOCK_HEADER_BYTES, encodeBatch, readBlockHeader, walkRecords } from '../../wal/block.js';
import type { WalBatch } from '../../wal/block.js';
import { decode, encode } from '../../wal/codec.js';
import { crc32c } from '../../wal/crc32.js';
import { opKeyOfProcessedKey, processedKeyOf } from '../../wal/processed-key.js';
import { openWal, openWalDatabases } from '../../wal/log.js';
import { WAL_BLOCK_RECORDS_MAX } from '../../src/limits.js';

function op(seq: number, fields: Partial<OpRecord> = {}): OpRecord {
  return {
    kind: 'op',
    seq,
    op: 'DEPOSIT',
    key: `req-${seq}`,
    userId: 7n,
    asset: 'BTC',
    amount: 100n,
    outcome: { kind: 'applied' },
    ...fields,
  };
}

/** A few records of different shapes and lengths, from `first` on. */
function mixed(first: number): WalRecord[] {
  return [
    op(first, { key: 'k' }),
    { kind: 'status', seq: first + 1, userId: 9n, asset: 'ETH', status: 'FROZEN' },
    op(first + 2, {
      op: 'WITHDRAW',
      outcome: { kind: 'rejected', code: 'INSUFFICIENT_BALANCE' },
      asset: 'USDT',
      key: 'a-longer-key-than-most',
    }),
    op(first + 3, { op: 'EXTERNAL_DEPOSIT', userId: 2n ** 62n, amount: 10n ** 15n }),
  ];
}

function batchOf(records: readonly WalRecord[]): WalBatch {
  const batch = encodeBatch(records);
  if (batch === null) throw new Error('no records');
  return batch;
}

/** Reads one block the way replay does; returns the records read and where it stopped. */
function readBlock(bytes: Buffer, key: number): { records: WalRecord[]; stoppedAt: number | null } {
  const header = readBlockHeader(bytes, key);
  if (!header.ok) return { records: [], stoppedAt: 0 };
  const records: WalRecord[] = [];
  const failure = walkRecords(bytes, header.record, 1, (start, end, seq) => {
    const decoded = decode(bytes.subarray(start, end), seq);
    if (!decoded.ok) return decoded.reason;
    records.push(decoded.record);
    return null;
  });
  return { records, stoppedAt: failure === null ? null : failure.seq };
}

async function withDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'wal-block-'));
  try {
    await body(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test("a batch round-trips through its block; processed entries are the operations' own records", () => {
  const records = mixed(11);
  const batch = batchOf(records);
  assert.equal([batch.firstSeq, batch.lastSeq, batch.blocks.length], [11, 14, 1]);
  const [block] = batch.blocks;
  assert.ok(block !== undefined && block.lastSeq === 14);
  assert.equal(readBlock(block.bytes, 14), { records, stoppedAt: null });
  const ops = records.filter((record): record is OpRecord => record.kind === 'op');
  assert.equal(
    batch.processed.map((entry) => opKeyOfProcessedKey(entry.key)),
    ops.map((record) => opKeyOf(record.op, record.key)),
  );
  batch.processed.forEach((entry, i) => {
    assert.equal(entry.key, processedKeyOf(opKeyOf((ops[i] as OpRecord).op, (ops[i] as OpRecord).key)));
  });
  batch.processed.forEach((entry, i) => {
    assert.equal(entry.bytes, encode(ops[i] as OpRecord));
  });
});

test('a batch larger than a block is split into consecutive blocks, each keyed by its last seq', () => {
  const count = WAL_BLOCK_RECORDS_MAX * 2 + 3;
  const records = Array.from({ length: count }, (_, i) => op(1 + i));
  const batch = batchOf(records);
  assert.equal(
    batch.blocks.map((block) => block.lastSeq),
    [WAL_BLOCK_RECORDS_MAX, WAL_BLOCK_RECORDS_MAX * 2, count],
  );
  const read = batch.blocks.flatMap((block) => readBlock(block.bytes, block.lastSeq).records);
  assert.equal(read, records);
  assert.is(batch.processed.length, count);
});

test('a flipped byte anywhere in a block is refused at the record that holds it; the records before it read intact', () => {
  const records = mixed(5);
  const bytes = batchOf(records).blocks[0]?.bytes as Buffer;
  // Where each record starts, to know which seq a byte belongs to.
  const starts: number[] = [];
  let at = BLOCK_HEADER_BYTES;
  for (const record of records) {
    starts.push(at);
    at += encode(record).length;
  }
  for (let i = 0; i < bytes.length; i++) {
    const owner = i < BLOCK_HEADER_BYTES ? -1 : starts.filter((start) => start <= i).length - 1;
    for (const mask of [0x01, 0x80, 0xff]) {
      const damaged = Buffer.from(bytes);
      damaged[i] = (damaged[i] as number) ^ mask;
      const { records: read, stoppedAt } = readBlock(damaged, 8);
      assert.ok(stoppedAt !== null, `byte ${i} ^ ${mask} was accepted`);
      assert.is(stoppedAt, owner < 0 ? 0 : 5 + owner, `byte ${i} ^ ${mask} stopped at the wrong seq`);
      assert.equal(read, records.slice(0, Math.max(owner, 0)), `byte ${i} ^ ${mask}: a record was misread`);
    }
  }
});

test('a truncated or extended block, or one under another key, is refused', () => {
  const records = mixed(1);
  const bytes = batchOf(records).blocks[0]?.bytes as Buffer;
  for (let length = 0; length < bytes.length; length++) {
    assert.ok(readBlock(bytes.subarray(0, length), 4).stoppedAt !== null, `a prefix of ${length} bytes was accepted`);
  }
  const extended = readBlock(Buffer.concat([bytes, Buffer.from([0])]), 4);
  assert.equal([extended.stoppedAt, extended.records.length], [5, 4], 'extra bytes stop replay after the last whole record');
  assert.not.ok(readBlockHeader(bytes, 5).ok, 'a block stored under another key');
});

test("a processed key is the op code and the key; it maps back to the ledger's name, and nothing else maps to one", () => {
  for (const op of ['WITHDRAW', 'DEPOSIT', 'REFUND', 'EXTERNAL_DEPOSIT', 'EXTERNAL_WITHDRAW'] as const) {
    for (const key of ['k', 'a-longer_key-09', 'x'.repeat(64)]) {
      const bytes = processedKeyOf(opKeyOf(op, key));
      assert.ok(bytes !== null && bytes.length === key.length + 1, `${op}:${key}`);
      assert.is(opKeyOfProcessedKey(bytes as Buffer), opKeyOf(op, key));
    }
  }
  for (const text of ['DEPOSIT', 'DEPOSIT:', 'SPEND:k', ':k', 'DEPOSIT:é', `DEPOSIT:${'x'.repeat(65)}`])
    assert.is(processedKeyOf(text), null, text);
  for (const bytes of [[], [4], [0, 65], [6, 65], Array.from({ length: 66 }, () => 4)])
    assert.is(opKeyOfProcessedKey(Buffer.from(bytes)), null, JSON.stringify(bytes));
});

test('LMDB: a multi-block batch is one append; replay from inside a block starts at the asked seq', async () => {
  await withDir(async (dir) => {
    const records = Array.from({ length: WAL_BLOCK_RECORDS_MAX + 10 }, (_, i) => op(1 + i));
    const log = openWal(dir);
    await log.appendBatch(batchOf(records));
    assert.equal([log.firstSeq(), log.lastSeq()], [1, records.length]);
    assert.equal([...log.replay(WAL_BLOCK_RECORDS_MAX - 1)], records.slice(WAL_BLOCK_RECORDS_MAX - 2));
    let applied = 0;
    assert.is(
      log.replayInto(1, () => applied++),
      records.length,
    );
    assert.is(applied, records.length);
    await log.close();
  });
});

test('a directory of format version 1 is refused with a message naming the version; a new one is stamped', async () => {
  await withDir(async (dir) => {
    // Version 1 stored one record per entry under its seq and wrote no format stamp.
    const raw = openWalDatabases(dir);
    const v1 = encode(op(1));
    v1[0] = 1;
    raw.wal.putSync(1, v1);
    await raw.env.close();
    assert.throws(() => openWal(dir), /format version 1 .*reads only version 2/);
  });
  await withDir(async (dir) => {
    const log = openWal(dir);
    await log.appendBatch(batchOf([op(1)]));
    await log.close();
    const reopened = openWal(dir);
    assert.equal([...reopened.replay()], [op(1)]);
    await reopened.close();
    const raw = openWalDatabases(dir);
    const stamp = raw.meta.getBinary('walFormatVersion');
    assert.ok(stamp !== undefined);
    const future = Buffer.from(stamp);
    future[7] = 3;
    // The stamp is checksummed: a changed version without a matching checksum is corrupt, not a version.
    raw.meta.putSync('walFormatVersion', future);
    const flipped = raw.meta.getBinary('walFormatVersion');
    future.writeUInt32BE(crc32c(future, 0, 8), 8);
    raw.meta.putSync('walFormatVersion', future);
    const checksummed = raw.meta.getBinary('walFormatVersion');
    await raw.env.close();
    assert.ok(flipped !== undefined && checksummed !== undefined);
    assert.throws(() => openWal(dir), /holds format version 3; this build reads only version 2/);
    const again = openWalDatabases(dir);
    again.meta.putSync('walFormatVersion', Buffer.from(flipped));
    await again.env.close();
    assert.throws(() => openWal(dir), /walFormatVersion fails its checksum/);
  });
});

test.run();
