// The binary WAL record format, version 1. One record is one decided command and its outcome:
//
//   offset  size  field
//   0       1     format version (1)
//   1       1     record kind (1 = keyed operation, 2 = account status)
//   2       8     sequence number, u64 big-endian (held as a JS number, at most 2^53 - 1)
//   10      8     user id, u64
//   18      1+n   asset: length u8, then n ASCII bytes
//   ..      8     amount, u64 (0 for a status record)
//   ..      1+m   key (req_id or ref): length u8, then m ASCII bytes (m = 0 for a status record)
//   ..      1     op code (0 for a status record)
//   ..      1     status code (0 for a keyed operation)
//   ..      1     outcome (1 = applied, 2 = rejected)
//   ..      1     reject code (0 unless rejected)
//   ..      4     CRC-32C of every preceding byte, u32 big-endian
//
// Codes are fixed numbers, never positions in an array, so reordering a list elsewhere cannot
// change the meaning of bytes already on disk. New codes may only be appended.
// `encode` asserts (throws) on a record it must never have been given; `decode` never throws:
// bad bytes are an expected outcome of reading a disk and come back as a value.

import { AMOUNT_UNITS_MAX } from '../src/domain/money.js';
import type { AccountStatus } from '../src/domain/types.js';
import { isValidAsset, isValidKey, isValidUserId, opKeyOf } from '../src/ubscore/core.js';
import type { OpRecord, Outcome, WalRecord } from '../src/ubscore/core.js';
import type { UbsOpName, UbsRejectCode } from '../src/ubscore/types.js';
import { crc32c } from './crc32.js';

export const WAL_FORMAT_VERSION = 1;
/** Bytes of a record with an empty asset and key: everything but the two strings. */
export const RECORD_FIXED_BYTES = 36;
/** Asset of 16 and key of 64 ASCII bytes. */
export const RECORD_BYTES_MAX = RECORD_FIXED_BYTES + 16 + 64;
const CHECKSUM_BYTES = 4;
const SEQ_HIGH_MAX = 0x1fffff; // 2^53 - 1 split as 21 high bits and 32 low bits.

const KIND_CODES = { op: 1, status: 2 } as const satisfies Record<WalRecord['kind'], number>;
const OP_CODES = {
  WITHDRAW: 1,
  DEPOSIT: 2,
  REFUND: 3,
  EXTERNAL_DEPOSIT: 4,
  EXTERNAL_WITHDRAW: 5,
} as const satisfies Record<UbsOpName, number>;
const STATUS_CODES = { ACTIVE: 1, FROZEN: 2, DISABLED: 3 } as const satisfies Record<AccountStatus, number>;
const OUTCOME_CODES = { applied: 1, rejected: 2 } as const satisfies Record<Outcome['kind'], number>;
const REJECT_CODES = {
  INSUFFICIENT_BALANCE: 1,
  ACCOUNT_FROZEN: 2,
  ACCOUNT_DISABLED: 3,
  ASSET_SUSPENDED: 4,
  TRANSFER_NOT_ALLOWED: 5,
  SOURCE_ACCOUNT_NOT_FOUND: 6,
  TARGET_ACCOUNT_NOT_FOUND: 7,
  REFUND_WITHOUT_WITHDRAW: 8,
} as const satisfies Record<UbsRejectCode, number>;

function invert<K extends string>(table: Readonly<Record<K, number>>): ReadonlyMap<number, K> {
  const inverse = new Map<number, K>();
  for (const name of Object.keys(table) as K[]) inverse.set(table[name], name);
  if (inverse.size !== Object.keys(table).length) throw new Error('codec: duplicate code in a table');
  return inverse;
}

const OP_BY_CODE = invert<UbsOpName>(OP_CODES);
const STATUS_BY_CODE = invert<AccountStatus>(STATUS_CODES);
const REJECT_BY_CODE = invert<UbsRejectCode>(REJECT_CODES);

const APPLIED: Outcome = Object.freeze({ kind: 'applied' });

export type Decoded<T> = { readonly ok: true; readonly record: T } | { readonly ok: false; readonly reason: string };

// ---------------------------------------------------------------------------------------------
// Encoding.

function assertEncodable(record: WalRecord): void {
  if (!Number.isSafeInteger(record.seq) || record.seq < 1) throw new Error(`codec: seq out of range: ${record.seq}`);
  if (!isValidUserId(record.userId)) throw new Error(`codec: user id out of range: ${String(record.userId)}`);
  if (!isValidAsset(record.asset)) throw new Error(`codec: invalid asset: ${String(record.asset)}`);
  if (record.kind === 'status') {
    if (STATUS_CODES[record.status] === undefined) throw new Error(`codec: invalid status: ${String(record.status)}`);
    return;
  }
  if (OP_CODES[record.op] === undefined) throw new Error(`codec: invalid op: ${String(record.op)}`);
  if (!isValidKey(record.key)) throw new Error(`codec: invalid key: ${String(record.key)}`);
  if (typeof record.amount !== 'bigint' || record.amount <= 0n || record.amount > AMOUNT_UNITS_MAX) {
    throw new Error(`codec: amount out of range: ${String(record.amount)}`);
  }
  if (record.outcome.kind === 'rejected' && REJECT_CODES[record.outcome.code] === undefined) {
    throw new Error(`codec: invalid reject code: ${String(record.outcome.code)}`);
  }
}

function writeAscii(buf: Buffer, offset: number, text: string): number {
  buf[offset] = text.length;
  for (let i = 0; i < text.length; i++) buf[offset + 1 + i] = text.charCodeAt(i);
  return offset + 1 + text.length;
}

/** The encoded size of `record`. */
export function encodedLength(record: WalRecord): number {
  return RECORD_FIXED_BYTES + record.asset.length + (record.kind === 'op' ? record.key.length : 0);
}

/**
 * Writes `record` at `start`; returns the end offset. `view` must cover the same bytes as `buf`:
 * DataView writes bigints several times faster than Buffer's own writeBigUInt64BE.
 */
function encodeAt(record: WalRecord, buf: Buffer, view: DataView, start: number): number {
  assertEncodable(record);
  const key = record.kind === 'op' ? record.key : '';
  buf[start] = WAL_FORMAT_VERSION;
  buf[start + 1] = KIND_CODES[record.kind];
  view.setUint32(start + 2, Math.floor(record.seq / 2 ** 32));
  view.setUint32(start + 6, record.seq >>> 0);
  view.setBigUint64(start + 10, record.userId);
  let offset = writeAscii(buf, start + 18, record.asset);
  view.setBigUint64(offset, record.kind === 'op' ? record.amount : 0n);
  offset = writeAscii(buf, offset + 8, key);
  buf[offset++] = record.kind === 'op' ? OP_CODES[record.op] : 0;
  buf[offset++] = record.kind === 'status' ? STATUS_CODES[record.status] : 0;
  const outcome: Outcome = record.kind === 'op' ? record.outcome : APPLIED;
  buf[offset++] = OUTCOME_CODES[outcome.kind];
  buf[offset++] = outcome.kind === 'rejected' ? REJECT_CODES[outcome.code] : 0;
  view.setUint32(offset, crc32c(buf, start, offset));
  offset += CHECKSUM_BYTES;
  if (offset - start !== encodedLength(record)) throw new Error(`codec: wrote ${offset - start} bytes, expected ${encodedLength(record)}`);
  return offset;
}

/** Encodes one record with its checksum. Throws only on a record no decision can produce. */
export function encode(record: WalRecord): Buffer {
  const buf = Buffer.alloc(encodedLength(record));
  encodeAt(record, buf, new DataView(buf.buffer, buf.byteOffset, buf.byteLength), 0);
  return buf;
}

/** Bytes per chunk of a RecordEncoder: small enough to waste little under light load. */
export const ENCODER_CHUNK_BYTES = 64 * 1024;

/**
 * Encodes many records into shared chunks instead of one allocation each: the hot path of the
 * actor. Each returned Buffer is a view of its own bytes; a chunk is freed by the garbage
 * collector once no view of it is left.
 */
export class RecordEncoder {
  private chunk = Buffer.allocUnsafeSlow(ENCODER_CHUNK_BYTES);
  private view = new DataView(this.chunk.buffer, this.chunk.byteOffset, this.chunk.byteLength);
  private used = 0;

  encode(record: WalRecord): Buffer {
    if (this.used + RECORD_BYTES_MAX > this.chunk.length) {
      this.chunk = Buffer.allocUnsafeSlow(ENCODER_CHUNK_BYTES);
      this.view = new DataView(this.chunk.buffer, this.chunk.byteOffset, this.chunk.byteLength);
      this.used = 0;
    }
    const start = this.used;
    this.used = encodeAt(record, this.chunk, this.view, start);
    return this.chunk.subarray(start, this.used);
  }
}

// ---------------------------------------------------------------------------------------------
// Decoding: every read is bounds-checked first, so no input can make it throw.

type Fields = {
  kindCode: number;
  seq: number;
  userId: bigint;
  asset: string;
  amount: bigint;
  key: string;
  opCode: number;
  statusCode: number;
  outcomeCode: number;
  rejectCode: number;
};

function fail(reason: string): { readonly ok: false; readonly reason: string } {
  return { ok: false, reason };
}

/** Reads a length-prefixed ASCII string at `offset` that must end by `limit`. */
function readAscii(buf: Buffer, offset: number, limit: number): { text: string; next: number } | null {
  if (offset >= limit) return null;
  const length = buf[offset] as number;
  const next = offset + 1 + length;
  if (next > limit) return null;
  return { text: buf.toString('latin1', offset + 1, next), next };
}

/** Splits the bytes into raw fields after checking length, checksum and version. */
function readFields(bytes: Uint8Array): Decoded<Fields> {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < RECORD_FIXED_BYTES) return fail(`length ${buf.length} below the minimum ${RECORD_FIXED_BYTES}`);
  if (buf.length > RECORD_BYTES_MAX) return fail(`length ${buf.length} above the maximum ${RECORD_BYTES_MAX}`);
  const body = buf.length - CHECKSUM_BYTES;
  const stored = buf.readUInt32BE(body);
  const computed = crc32c(buf, 0, body);
  if (stored !== computed) return fail(`checksum mismatch: stored ${stored}, computed ${computed}`);
  if (buf[0] !== WAL_FORMAT_VERSION) return fail(`unknown format version ${String(buf[0])}`);
  const seqHigh = buf.readUInt32BE(2);
  if (seqHigh > SEQ_HIGH_MAX) return fail('sequence number above 2^53 - 1');
  const asset = readAscii(buf, 18, body);
  if (asset === null) return fail('asset length runs past the record');
  const keyStart = asset.next + 8;
  const key = readAscii(buf, keyStart, body);
  if (key === null) return fail('key length runs past the record');
  if (key.next + 4 !== body) return fail(`field lengths add up to ${key.next + 4 + CHECKSUM_BYTES}, record has ${buf.length}`);
  return {
    ok: true,
    record: {
      kindCode: buf[1] as number,
      seq: seqHigh * 2 ** 32 + buf.readUInt32BE(6),
      userId: buf.readBigUInt64BE(10),
      asset: asset.text,
      amount: buf.readBigUInt64BE(asset.next),
      key: key.text,
      opCode: buf[key.next] as number,
      statusCode: buf[key.next + 1] as number,
      outcomeCode: buf[key.next + 2] as number,
      rejectCode: buf[key.next + 3] as number,
    },
  };
}

function toOutcome(fields: Fields): Outcome | null {
  if (fields.outcomeCode === OUTCOME_CODES.applied) return fields.rejectCode === 0 ? { kind: 'applied' } : null;
  if (fields.outcomeCode !== OUTCOME_CODES.rejected) return null;
  const code = REJECT_BY_CODE.get(fields.rejectCode);
  return code === undefined ? null : { kind: 'rejected', code };
}

function toOpRecord(fields: Fields): Decoded<WalRecord> {
  const op = OP_BY_CODE.get(fields.opCode);
  if (op === undefined) return fail(`unknown op code ${fields.opCode}`);
  if (fields.statusCode !== 0) return fail('a keyed operation carries a status');
  if (!isValidKey(fields.key)) return fail('invalid key');
  if (fields.amount <= 0n || fields.amount > AMOUNT_UNITS_MAX) return fail(`amount out of range: ${fields.amount}`);
  const outcome = toOutcome(fields);
  if (outcome === null) return fail(`invalid outcome ${fields.outcomeCode}/${fields.rejectCode}`);
  const { seq, userId, asset, amount, key } = fields;
  return { ok: true, record: { kind: 'op', seq, op, key, userId, asset, amount, outcome } };
}

function toStatusRecord(fields: Fields): Decoded<WalRecord> {
  const status = STATUS_BY_CODE.get(fields.statusCode);
  if (status === undefined) return fail(`unknown status code ${fields.statusCode}`);
  if (fields.opCode !== 0 || fields.amount !== 0n || fields.key.length !== 0) return fail('a status record carries operation fields');
  if (fields.outcomeCode !== OUTCOME_CODES.applied || fields.rejectCode !== 0) return fail('a status record carries a rejection');
  return { ok: true, record: { kind: 'status', seq: fields.seq, userId: fields.userId, asset: fields.asset, status } };
}

function decodeAnySeq(bytes: Uint8Array): Decoded<WalRecord> {
  const read = readFields(bytes);
  if (!read.ok) return read;
  const fields = read.record;
  if (fields.seq < 1) return fail('sequence number 0');
  if (!isValidUserId(fields.userId)) return fail(`user id out of range: ${fields.userId}`);
  if (!isValidAsset(fields.asset)) return fail('invalid asset');
  if (fields.kindCode === KIND_CODES.op) return toOpRecord(fields);
  if (fields.kindCode === KIND_CODES.status) return toStatusRecord(fields);
  return fail(`unknown record kind ${fields.kindCode}`);
}

/** Decodes the WAL record expected at `expectedSeq`; any other sequence number is refused. */
export function decode(bytes: Uint8Array, expectedSeq: number): Decoded<WalRecord> {
  const decoded = decodeAnySeq(bytes);
  if (!decoded.ok) return decoded;
  if (decoded.record.seq !== expectedSeq) return fail(`sequence ${decoded.record.seq} where ${expectedSeq} was expected`);
  return decoded;
}

/** Decodes a processed-set value: the keyed operation's own record, which must carry `opKey`. */
export function decodeProcessed(bytes: Uint8Array, opKey: string): Decoded<OpRecord> {
  const decoded = decodeAnySeq(bytes);
  if (!decoded.ok) return decoded;
  const record = decoded.record;
  if (record.kind !== 'op') return fail('a processed entry holds a status record');
  if (opKeyOf(record.op, record.key) !== opKey) return fail(`entry for ${opKeyOf(record.op, record.key)} stored under ${opKey}`);
  return { ok: true, record };
}
