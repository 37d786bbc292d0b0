// Proves the WAL codec round-trips every record kind and refuses any damaged, truncated or
// misplaced record, and that replay of a real LMDB log of blocks stops at the first bad sequence
// number, having applied every record before it and none after.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { open } from 'lmdb';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AMOUNT_UNITS_MAX } from '../../src/domain/money.js';
import type { UbsRejectCode } from '../../src/domain/spot-commands.js';
import { USER_ID_MAX } from '../../src/domain/checks.js';
import { opKeyOf } from '../../src/domain/spot-records.js';
import type { OpRecord, WalRecord } from '../../src/domain/spot-records.js';
import { crc32c } from '../../wal/crc32.js';
import { BLOCK_HEADER_BYTES, encodeBatch } from '../../wal/block.js';
import type { WalBatch } from '../../wal/block.js';
import { RECORD_BYTES_MAX, decode, decodeProcessed, encode, encodedLength } from '../../wal/codec.js';
import { openWal, openWalDatabases } from '../../wal/log.js';

const REJECT_CODES: readonly UbsRejectCode[] = [
  'INSUFFICIENT_BALANCE',
  'ACCOUNT_FROZEN',
  'ACCOUNT_DISABLED',
  'ASSET_SUSPENDED',
  'TRANSFER_NOT_ALLOWED',
  'SOURCE_ACCOUNT_NOT_FOUND',
  'TARGET_ACCOUNT_NOT_FOUND',
  'REFUND_WITHOUT_WITHDRAW',
];

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

/** One record of every kind, op, outcome, reject code and status, plus the extreme values. */
function sampleRecords(): WalRecord[] {
  const records: WalRecord[] = [];
  let seq = 1;
  for (const name of ['WITHDRAW', 'DEPOSIT', 'REFUND', 'EXTERNAL_DEPOSIT', 'EXTERNAL_WITHDRAW'] as const) {
    records.push(op(seq++, { op: name }));
  }
  for (const code of REJECT_CODES) records.push(op(seq++, { op: 'WITHDRAW', outcome: { kind: 'rejected', code } }));
  for (const status of ['ACTIVE', 'FROZEN', 'DISABLED'] as const) {
    records.push({ kind: 'status', seq: seq++, userId: 9n, asset: 'ETH', status });
  }
  records.push(op(seq++, { userId: USER_ID_MAX, amount: AMOUNT_UNITS_MAX, asset: 'A'.repeat(16), key: 'k'.repeat(64) }));
  records.push(op(seq++, { userId: 1n, amount: 1n, asset: 'X', key: '_' }));
  records.push(op(Number.MAX_SAFE_INTEGER, { key: 'last' }));
  return records;
}

test('crc32c matches the Castagnoli check value', () => {
  assert.is(crc32c(Buffer.from('123456789', 'ascii')), 0xe3069283);
  assert.is(crc32c(new Uint8Array(0)), 0);
});

test('every record kind round-trips', () => {
  for (const record of sampleRecords()) {
    const bytes = encode(record);
    assert.ok(bytes.length <= RECORD_BYTES_MAX, `record ${record.seq} is ${bytes.length} bytes`);
    const decoded = decode(bytes, record.seq);
    assert.ok(decoded.ok, `record ${record.seq}: ${decoded.ok ? '' : decoded.reason}`);
    if (decoded.ok) assert.equal(decoded.record, record);
  }
});

test('a changed byte anywhere is refused by the checksum or the field checks', () => {
  for (const record of sampleRecords()) {
    const bytes = encode(record);
    for (let i = 0; i < bytes.length; i++) {
      for (const mask of [0x01, 0x80, 0xff]) {
        const damaged = Buffer.from(bytes);
        damaged[i] = (damaged[i] as number) ^ mask;
        const decoded = decode(damaged, record.seq);
        assert.not.ok(decoded.ok, `record ${record.seq}: byte ${i} ^ ${mask} was accepted`);
      }
    }
  }
});

test('a record at the wrong sequence number is refused', () => {
  const decoded = decode(encode(op(5)), 6);
  assert.not.ok(decoded.ok);
  if (!decoded.ok) assert.match(decoded.reason, /sequence 5 where 6/);
});

test('truncated or extended buffers are refused, never thrown on', () => {
  const bytes = encode(op(3, { key: 'a-longer-key' }));
  for (let length = 0; length < bytes.length; length++) {
    assert.not.ok(decode(bytes.subarray(0, length), 3).ok, `prefix of ${length} bytes was accepted`);
  }
  assert.not.ok(decode(Buffer.concat([bytes, Buffer.from([0])]), 3).ok);
  assert.not.ok(decode(Buffer.alloc(RECORD_BYTES_MAX + 1), 3).ok);
});

test('a processed entry must carry the key it is stored under', () => {
  const record = op(4, { op: 'WITHDRAW', key: 'abc' });
  assert.ok(decodeProcessed(encode(record), opKeyOf('WITHDRAW', 'abc')).ok);
  assert.not.ok(decodeProcessed(encode(record), opKeyOf('DEPOSIT', 'abc')).ok);
  assert.not.ok(decodeProcessed(encode({ kind: 'status', seq: 1, userId: 1n, asset: 'BTC', status: 'ACTIVE' }), 'WITHDRAW:abc').ok);
});

test('encode asserts on values no decision can produce', () => {
  const bad: WalRecord[] = [
    op(0),
    op(1.5),
    op(1, { userId: 0n }),
    op(1, { userId: USER_ID_MAX + 1n }),
    op(1, { amount: 0n }),
    op(1, { amount: AMOUNT_UNITS_MAX + 1n }),
    op(1, { asset: 'btc' }),
    op(1, { asset: 'A'.repeat(17) }),
    op(1, { key: 'k'.repeat(65) }),
    op(1, { key: 'é' }),
  ];
  for (const record of bad) assert.throws(() => encode(record), undefined, `seq ${record.seq} ${String(record.kind)}`);
});

function batchOf(records: readonly OpRecord[]): WalBatch {
  const batch = encodeBatch(records);
  if (batch === null) throw new Error('no records');
  return batch;
}

/** The bytes of the block stored under `key`, copied so they can be damaged. */
function blockBytes(dir: string, key: number): Promise<Buffer> {
  const raw = openWalDatabases(dir);
  const stored = raw.wal.getBinary(key);
  return raw.env.close().then(() => {
    if (stored === undefined) throw new Error(`no block under ${key}`);
    return Buffer.from(stored);
  });
}

async function putBlock(dir: string, key: number, bytes: Buffer): Promise<void> {
  const raw = openWalDatabases(dir);
  raw.wal.putSync(key, bytes);
  await raw.env.close();
}

/** Replays the log at `dir` until it throws; returns what it yielded and the error. */
async function replayUntilError(dir: string): Promise<{ replayed: WalRecord[]; error: unknown }> {
  const log = openWal(dir);
  const replayed: WalRecord[] = [];
  try {
    for (const record of log.replay()) replayed.push(record);
    return { replayed, error: null };
  } catch (error) {
    return { replayed, error };
  } finally {
    await log.close();
  }
}

test('replay of a real LMDB log stops at a corrupt record in the middle of a block, naming its seq', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const records = [1, 2, 3, 4, 5].map((seq) => op(seq));
    const log = openWal(dir);
    await log.appendBatch(batchOf(records.slice(0, 2)));
    await log.appendBatch(batchOf(records.slice(2)));
    assert.is(log.lastSeq(), 5);
    assert.equal([...log.replay()], records);
    assert.equal(log.getProcessed(opKeyOf('DEPOSIT', 'req-4')), records[3]);
    await log.close();

    // Record 4 is the second of the block ending at seq 5: 3 and 4 are the same length.
    const damaged = await blockBytes(dir, 5);
    const at = BLOCK_HEADER_BYTES + encodedLength(op(3)) + 20;
    damaged[at] = (damaged[at] as number) ^ 0x04;
    await putBlock(dir, 5, damaged);
    const { replayed, error } = await replayUntilError(dir);
    assert.match(String(error), /seq 4\b/);
    assert.equal(replayed, records.slice(0, 3));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a corrupt or torn LAST record stops replay loudly, naming its seq; every record before it is intact', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const records = [1, 2, 3, 4].map((seq) => op(seq));
    const log = openWal(dir);
    await log.appendBatch(batchOf(records));
    await log.close();
    const whole = await blockBytes(dir, 4);
    for (const damage of ['flip', 'truncate'] as const) {
      const bytes = Buffer.from(whole);
      if (damage === 'flip') bytes[bytes.length - 2] = (bytes[bytes.length - 2] as number) ^ 0x10;
      await putBlock(dir, 4, damage === 'flip' ? bytes : bytes.subarray(0, bytes.length - 7));
      const { replayed, error } = await replayUntilError(dir);
      assert.match(String(error), /seq 4\b/, damage);
      assert.equal(replayed, records.slice(0, 3), `${damage}: nothing after the damage is applied`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('replay stops at a gap in the sequence, naming the missing seq', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const log = openWal(dir);
    for (const seq of [1, 2, 3]) await log.appendBatch(batchOf([op(seq)]));
    await log.close();
    const raw = openWalDatabases(dir);
    raw.wal.removeSync(2);
    await raw.env.close();
    const { replayed, error } = await replayUntilError(dir);
    assert.match(String(error), /seq 2\b/);
    assert.equal(replayed, [op(1)]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('appendBatch asserts that a batch continues the log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const log = openWal(dir);
    assert.throws(() => log.appendBatch(batchOf([op(2)])), /does not continue/);
    await log.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('openWal refuses an environment this process already opened without per-commit sync', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    // A second open of the same path inherits the first one's flags, whatever it asks for.
    const careless = open({ path: dir, overlappingSync: true });
    assert.throws(() => openWal(dir), /do not sync each commit/);
    await careless.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
