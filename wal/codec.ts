// The binary WAL record format, version 2. One record is one decided command and its outcome. A
// record is the unit of a processed-set entry; the `wal` database holds records in blocks, one
// block per group-commit batch (wal/block.ts). Version 1 had the same record layout but stored
// one record per `wal` entry; a version 1 record is refused by its version byte.
//
//   offset  size  field
//   0       1     format version (2)
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
// The code bytes (kind, op, status, outcome, reject) are the fixed numbers of wal/codes.ts.
// `encode` asserts (throws) on a record it must never have been given; `decode` never throws:
// bad bytes are an expected outcome of reading a disk and come back as a value.

import { AMOUNT_UNITS_MAX } from '../src/domain/money.js';
import type { AccountStatus } from '../src/domain/types.js';
import { ASSET_LENGTH_MAX, KEY_LENGTH_MAX, isAssetSymbol, isOpKey, isUserId } from '../src/domain/checks.js';
import { opKeyOf } from '../src/domain/spot-records.js';
import type { OpRecord, Outcome, ReplayRecord, WalRecord } from '../src/domain/spot-records.js';
import type { UbsOpName } from '../src/domain/spot-commands.js';
import { KIND_CODES, OP_BY_CODE, OP_CODES, OUTCOME_CODES, REJECT_BY_CODE, REJECT_CODES, STATUS_BY_CODE, STATUS_CODES } from './codes.js';
import { crc32c } from './crc32.js';
import { READER_ASSETS_MAX } from '../src/limits.js';

export const WAL_FORMAT_VERSION = 2;
/** Bytes of a record with an empty asset and key: everything but the two strings. */
const RECORD_FIXED_BYTES = 36;
/** Asset of 16 and key of 64 ASCII bytes. */
export const RECORD_BYTES_MAX = RECORD_FIXED_BYTES + 16 + 64;
const CHECKSUM_BYTES = 4;
const SEQ_HIGH_MAX = 0x1fffff; // 2^53 - 1 split as 21 high bits and 32 low bits.

const APPLIED: Outcome = Object.freeze({ kind: 'applied' });

export type Decoded<T> = { readonly ok: true; readonly record: T } | { readonly ok: false; readonly reason: string };

// ---------------------------------------------------------------------------------------------
// Encoding.

function assertEncodable(record: WalRecord): void {
  if (!Number.isSafeInteger(record.seq) || record.seq < 1) throw new Error(`codec: seq out of range: ${record.seq}`);
  if (!isUserId(record.userId)) throw new Error(`codec: user id out of range: ${String(record.userId)}`);
  if (!isAssetSymbol(record.asset)) throw new Error(`codec: invalid asset: ${String(record.asset)}`);
  if (record.kind === 'status') {
    if (STATUS_CODES[record.status] === undefined) throw new Error(`codec: invalid status: ${String(record.status)}`);
    return;
  }
  if (OP_CODES[record.op] === undefined) throw new Error(`codec: invalid op: ${String(record.op)}`);
  if (!isOpKey(record.key)) throw new Error(`codec: invalid key: ${String(record.key)}`);
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
 * DataView writes bigints several times faster than Buffer's own writeBigUInt64BE. The caller
 * makes sure RECORD_BYTES_MAX bytes are free at `start`.
 */
export function encodeInto(record: WalRecord, buf: Buffer, view: DataView, start: number): number {
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
  encodeInto(record, buf, new DataView(buf.buffer, buf.byteOffset, buf.byteLength), 0);
  return buf;
}

// ---------------------------------------------------------------------------------------------
// Decoding: every read is bounds-checked first, so no input can make it throw. One set of checks
// serves both `decode` (a fresh record each time: tests, the processed set) and RecordReader (one
// reused record: replay, where a million records must not cost a million sets of allocations).

/** The fields of one record, read in place: strings stay byte ranges until someone needs them. */
type Fields = {
  seq: number;
  userId: bigint;
  assetStart: number;
  assetEnd: number;
  amount: bigint;
  keyStart: number;
  keyEnd: number;
  kind: WalRecord['kind'];
  op: UbsOpName;
  status: AccountStatus;
  outcome: Outcome;
};

function newFields(): Fields {
  return {
    seq: 0,
    userId: 0n,
    assetStart: 0,
    assetEnd: 0,
    amount: 0n,
    keyStart: 0,
    keyEnd: 0,
    kind: 'op',
    op: 'DEPOSIT',
    status: 'ACTIVE',
    outcome: APPLIED,
  };
}

/** One frozen outcome per reject code, so a decoded rejection allocates nothing. */
const REJECTED_BY_CODE: ReadonlyMap<number, Outcome> = new Map(
  [...REJECT_BY_CODE].map(([code, name]) => [code, Object.freeze({ kind: 'rejected', code: name } as const)]),
);

/** The bytes allowed in a key (isOpKey) and in an asset (isAssetSymbol), as lookup tables. */
const KEY_BYTES = byteTable(/^[A-Za-z0-9_-]$/);
const ASSET_BYTES = byteTable(/^[A-Z0-9]$/);

function byteTable(pattern: RegExp): Uint8Array {
  const table = new Uint8Array(256);
  for (let b = 0; b < 256; b++) table[b] = pattern.test(String.fromCharCode(b)) ? 1 : 0;
  return table;
}

/** The byte-level twin of isOpKey / isAssetSymbol: `lengthMax` and the table are the pattern's. */
function bytesMatch(buf: Buffer, start: number, end: number, table: Uint8Array, lengthMax: number): boolean {
  if (end - start < 1 || end - start > lengthMax) return false;
  for (let i = start; i < end; i++) if (table[buf[i] as number] !== 1) return false;
  return true;
}

/**
 * A u64 at `offset`, big-endian. Buffer#readBigUInt64BE builds it from three bigints; below 2^53
 * (every user id and most amounts) the number is exact and one BigInt call suffices.
 */
function readU64(buf: Buffer, offset: number): bigint {
  const high = buf.readUInt32BE(offset);
  const low = buf.readUInt32BE(offset + 4);
  return high <= SEQ_HIGH_MAX ? BigInt(high * 2 ** 32 + low) : (BigInt(high) << 32n) | BigInt(low);
}

function fail(reason: string): { readonly ok: false; readonly reason: string } {
  return { ok: false, reason };
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The end of the record that starts at `start`, read from its two length bytes, or -1 when they
 * put it past `end` or outside the record bounds. Nothing is verified yet: the checksum is.
 */
export function recordEnd(buf: Buffer, start: number, end: number): number {
  if (start + RECORD_FIXED_BYTES > end) return -1;
  const keyLengthAt = start + 27 + (buf[start + 18] as number);
  if (keyLengthAt >= end) return -1;
  const length = RECORD_FIXED_BYTES + (buf[start + 18] as number) + (buf[keyLengthAt] as number);
  return length > RECORD_BYTES_MAX || start + length > end ? -1 : start + length;
}

/** Checks length, checksum and version of buf[start, end) and finds every field; returns why not, or null. */
function readFields(buf: Buffer, start: number, end: number, f: Fields): string | null {
  const length = end - start;
  if (length < RECORD_FIXED_BYTES) return `length ${length} below the minimum ${RECORD_FIXED_BYTES}`;
  if (length > RECORD_BYTES_MAX) return `length ${length} above the maximum ${RECORD_BYTES_MAX}`;
  const body = end - CHECKSUM_BYTES;
  const stored = buf.readUInt32BE(body);
  const computed = crc32c(buf, start, body);
  if (stored !== computed) return `checksum mismatch: stored ${stored}, computed ${computed}`;
  if (buf[start] !== WAL_FORMAT_VERSION) return `unknown format version ${String(buf[start])}`;
  const seqHigh = buf.readUInt32BE(start + 2);
  if (seqHigh > SEQ_HIGH_MAX) return 'sequence number above 2^53 - 1';
  // The length bytes are read only below `body`: RECORD_FIXED_BYTES keeps offset 18 inside it.
  const assetEnd = start + 19 + (buf[start + 18] as number);
  if (assetEnd > body) return 'asset length runs past the record';
  const keyLengthAt = assetEnd + 8;
  if (keyLengthAt >= body) return 'key length runs past the record';
  const keyEnd = keyLengthAt + 1 + (buf[keyLengthAt] as number);
  if (keyEnd > body) return 'key length runs past the record';
  if (keyEnd + 4 !== body) return `field lengths add up to ${keyEnd + 4 + CHECKSUM_BYTES - start}, record has ${length}`;
  f.seq = seqHigh * 2 ** 32 + buf.readUInt32BE(start + 6);
  f.userId = readU64(buf, start + 10);
  f.assetStart = start + 19;
  f.assetEnd = assetEnd;
  f.amount = readU64(buf, assetEnd);
  f.keyStart = keyLengthAt + 1;
  f.keyEnd = keyEnd;
  return checkFields(buf, f, buf[start + 1] as number, keyEnd);
}

/** Checks every field against the rules `encode` asserted (pair assertions); `codes` is where the four code bytes start. */
function checkFields(buf: Buffer, f: Fields, kindCode: number, codes: number): string | null {
  if (f.seq < 1) return 'sequence number 0';
  if (!isUserId(f.userId)) return `user id out of range: ${f.userId}`;
  if (!bytesMatch(buf, f.assetStart, f.assetEnd, ASSET_BYTES, ASSET_LENGTH_MAX)) return 'invalid asset';
  const opCode = buf[codes] as number;
  const statusCode = buf[codes + 1] as number;
  const outcomeCode = buf[codes + 2] as number;
  const rejectCode = buf[codes + 3] as number;
  if (kindCode === KIND_CODES.op) {
    const op = OP_BY_CODE.get(opCode);
    if (op === undefined) return `unknown op code ${opCode}`;
    if (statusCode !== 0) return 'a keyed operation carries a status';
    if (!bytesMatch(buf, f.keyStart, f.keyEnd, KEY_BYTES, KEY_LENGTH_MAX)) return 'invalid key';
    if (f.amount <= 0n || f.amount > AMOUNT_UNITS_MAX) return `amount out of range: ${f.amount}`;
    const outcome =
      outcomeCode === OUTCOME_CODES.applied
        ? rejectCode === 0
          ? APPLIED
          : undefined
        : outcomeCode === OUTCOME_CODES.rejected
          ? REJECTED_BY_CODE.get(rejectCode)
          : undefined;
    if (outcome === undefined) return `invalid outcome ${outcomeCode}/${rejectCode}`;
    f.kind = 'op';
    f.op = op;
    f.outcome = outcome;
    return null;
  }
  if (kindCode === KIND_CODES.status) {
    const status = STATUS_BY_CODE.get(statusCode);
    if (status === undefined) return `unknown status code ${statusCode}`;
    if (opCode !== 0 || f.amount !== 0n || f.keyEnd !== f.keyStart) return 'a status record carries operation fields';
    if (outcomeCode !== OUTCOME_CODES.applied || rejectCode !== 0) return 'a status record carries a rejection';
    f.kind = 'status';
    f.status = status;
    return null;
  }
  return `unknown record kind ${kindCode}`;
}

function decodeAnySeq(bytes: Uint8Array): Decoded<WalRecord> {
  const buf = asBuffer(bytes);
  const f = newFields();
  const reason = readFields(buf, 0, buf.length, f);
  if (reason !== null) return fail(reason);
  const asset = buf.toString('latin1', f.assetStart, f.assetEnd);
  if (f.kind === 'status') return { ok: true, record: { kind: 'status', seq: f.seq, userId: f.userId, asset, status: f.status } };
  const key = buf.toString('latin1', f.keyStart, f.keyEnd);
  return { ok: true, record: { kind: 'op', seq: f.seq, op: f.op, key, userId: f.userId, asset, amount: f.amount, outcome: f.outcome } };
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

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A byte loop: for a few bytes it beats Buffer#compare, which crosses into C++. */
function sameBytes(known: Buffer, buf: Buffer, start: number, end: number): boolean {
  if (known.length !== end - start) return false;
  for (let i = 0; i < known.length; i++) if (known[i] !== buf[start + i]) return false;
  return true;
}

/**
 * Decodes records for replay into one reused object, with the same checks as `decode`, and
 * without the key, which only the processed set needs. Asset strings are interned.
 */
export class RecordReader {
  private readonly fields = newFields();
  private readonly assets: { readonly bytes: Buffer; readonly text: string }[] = [];
  private readonly op: Mutable<Extract<ReplayRecord, { kind: 'op' }>> = {
    kind: 'op',
    seq: 0,
    op: 'DEPOSIT',
    userId: 0n,
    asset: '',
    amount: 0n,
    outcome: APPLIED,
  };
  private readonly status: Mutable<Extract<ReplayRecord, { kind: 'status' }>> = {
    kind: 'status',
    seq: 0,
    userId: 0n,
    asset: '',
    status: 'ACTIVE',
  };
  /** Why the last `read` returned null. */
  reason = '';

  /**
   * The record in buf[start, end), expected at `expectedSeq`, valid until the next read; null if
   * refused (see `reason`).
   */
  read(buf: Buffer, start: number, end: number, expectedSeq: number): ReplayRecord | null {
    const f = this.fields;
    const reason = readFields(buf, start, end, f);
    if (reason !== null || f.seq !== expectedSeq) {
      this.reason = reason ?? `sequence ${f.seq} where ${expectedSeq} was expected`;
      return null;
    }
    const asset = this.assetOf(buf, f.assetStart, f.assetEnd);
    if (f.kind === 'status') {
      const status = this.status;
      status.seq = f.seq;
      status.userId = f.userId;
      status.asset = asset;
      status.status = f.status;
      return status;
    }
    const op = this.op;
    op.seq = f.seq;
    op.op = f.op;
    op.userId = f.userId;
    op.asset = asset;
    op.amount = f.amount;
    op.outcome = f.outcome;
    return op;
  }

  private assetOf(buf: Buffer, start: number, end: number): string {
    for (const known of this.assets) {
      if (sameBytes(known.bytes, buf, start, end)) return known.text;
    }
    const text = buf.toString('latin1', start, end);
    if (this.assets.length < READER_ASSETS_MAX) this.assets.push({ bytes: Buffer.from(text, 'latin1'), text });
    return text;
  }
}
