// Proves the WAL codec round-trips every record kind and refuses any damaged, truncated or
// misplaced record, and that replay of a real LMDB log stops at the first bad sequence number.

import { mkdtemp, rm } from 'node:fs/promises';
import { open } from 'lmdb';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AMOUNT_UNITS_MAX } from '../src/domain/money.js';
import type { UbsRejectCode } from '../src/ubscore/types.js';
import { USER_ID_MAX } from '../src/domain/checks.js';
import { opKeyOf } from '../src/ubscore/core.js';
import type { OpRecord, WalRecord } from '../src/ubscore/core.js';
import { crc32c } from '../wal/crc32.js';
import { RECORD_BYTES_MAX, decode, decodeProcessed, encode } from '../wal/codec.js';
import { openWal, openWalDatabases } from '../wal/log.js';
import type { ProcessedWrite, WalWrite } from '../wal/log.js';

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
  return { kind: 'op', seq, op: 'DEPOSIT', key: `req-${seq}`, userId: 7n, asset: 'BTC', amount: 100n, outcome: { kind: 'applied' }, ...fields };
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

function writesOf(records: readonly OpRecord[]): { wal: WalWrite[]; processed: ProcessedWrite[] } {
  const wal = records.map((record) => ({ seq: record.seq, bytes: encode(record) }));
  const processed = records.map((record, i) => ({ opKey: opKeyOf(record.op, record.key), bytes: (wal[i] as WalWrite).bytes }));
  return { wal, processed };
}

test('replay of a real LMDB log stops at a corrupt record in the middle, naming its seq', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const records = [1, 2, 3, 4, 5].map((seq) => op(seq));
    const log = openWal(dir);
    const first = writesOf(records.slice(0, 2));
    const second = writesOf(records.slice(2));
    await log.appendBatch(first.wal, first.processed);
    await log.appendBatch(second.wal, second.processed);
    assert.is(log.lastSeq(), 5);
    assert.equal([...log.replay()], records);
    assert.equal(log.getProcessed(opKeyOf('DEPOSIT', 'req-4')), records[3]);
    await log.close();

    const raw = openWalDatabases(dir);
    const damaged = Buffer.from(encode(op(3)));
    damaged[20] = (damaged[20] as number) ^ 0x04;
    raw.wal.putSync(3, damaged);
    await raw.env.close();

    const reopened = openWal(dir);
    const replayed: WalRecord[] = [];
    assert.throws(() => {
      for (const record of reopened.replay()) replayed.push(record);
    }, /seq 3\b/);
    assert.equal(replayed, records.slice(0, 2));
    await reopened.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a corrupt or torn LAST record stops replay loudly, naming its seq; every record before it is intact', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const records = [1, 2, 3, 4].map((seq) => op(seq));
    const log = openWal(dir);
    const all = writesOf(records);
    await log.appendBatch(all.wal, all.processed);
    await log.close();
    for (const damage of ['flip', 'truncate'] as const) {
      const raw = openWalDatabases(dir);
      const bytes = Buffer.from(encode(op(4)));
      raw.wal.putSync(4, damage === 'flip' ? Buffer.from(bytes.map((b, i) => (i === bytes.length - 2 ? b ^ 0x10 : b))) : bytes.subarray(0, bytes.length - 7));
      await raw.env.close();
      const reopened = openWal(dir);
      const replayed: WalRecord[] = [];
      assert.throws(() => {
        for (const record of reopened.replay()) replayed.push(record);
      }, /seq 4\b/, damage);
      assert.equal(replayed, records.slice(0, 3), `${damage}: nothing after the damage is applied`);
      await reopened.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('replay stops at a gap in the sequence, naming the missing seq', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const log = openWal(dir);
    const writes = writesOf([1, 2, 3].map((seq) => op(seq)));
    await log.appendBatch(writes.wal, writes.processed);
    await log.close();
    const raw = openWalDatabases(dir);
    raw.wal.removeSync(2);
    await raw.env.close();
    const reopened = openWal(dir);
    assert.throws(() => [...reopened.replay()], /seq 2\b/);
    await reopened.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('appendBatch asserts that a batch continues the log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'wal-codec-'));
  try {
    const log = openWal(dir);
    const writes = writesOf([op(2)]);
    assert.throws(() => log.appendBatch(writes.wal, writes.processed), /does not continue/);
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
