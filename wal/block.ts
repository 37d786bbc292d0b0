// WAL blocks, format version 2: one `wal` entry holds the records of one group-commit batch (a
// batch larger than WAL_BLOCK_RECORDS_MAX records takes several entries, all in the same LMDB
// transaction). Version 1 wrote one entry per record: measured, the per-entry put cost as much as
// deciding the command, and the log's B-tree grew by one key per command.
//
// Block, big-endian:
//   offset  size  field
//   0       1     format version (2)
//   1       8     first seq: u32 high, u32 low
//   9       4     record count n, 1..WAL_BLOCK_RECORDS_MAX
//   13      4     CRC-32C of bytes 0..12
//   17      ..    n records back to back, each exactly as wal/codec.ts encodes one, with its own
//                 CRC-32C; record i carries seq first + i
//
// The block's key is its LAST seq (first + n - 1), so the log's last key is still its last seq,
// and a range read from seq S starts at the block holding S. Every byte is covered by a checksum
// (the header's or a record's), and the records must fill the block exactly, so a flipped,
// missing or extra byte anywhere is refused, naming the first seq it makes unreadable.

import { opKeyOf } from '../src/domain/spot-records.js';
import type { WalRecord } from '../src/domain/spot-records.js';
import { RECORD_BYTES_MAX, WAL_FORMAT_VERSION, decode, encodeInto, recordEnd } from './codec.js';
import { PROCESSED_KEY_BYTES_MAX, writeProcessedKey } from './processed-key.js';
import type { Decoded } from './codec.js';
import { crc32c } from './crc32.js';
import { WAL_BLOCK_RECORDS_MAX } from '../src/limits.js';

export const BLOCK_HEADER_BYTES = 17;
const SEQ_HIGH_MAX = 0x1fffff;

/** One `wal` entry: `bytes` is the block, `lastSeq` its key. */
type WalBlock = { readonly lastSeq: number; readonly bytes: Buffer };
/**
 * One processed-set entry: its key (wal/processed-key.ts) and the operation's own record, both
 * views of the batch's bytes, and the record's seq (the entry's key in the seq index).
 */
export type ProcessedWrite = { readonly key: Buffer; readonly bytes: Buffer; readonly seq: number };
/** Everything one group commit writes, in one LMDB transaction. */
export type WalBatch = {
  readonly firstSeq: number;
  readonly lastSeq: number;
  readonly blocks: readonly WalBlock[];
  readonly processed: readonly ProcessedWrite[];
};

type BlockHeader = { readonly firstSeq: number; readonly count: number };

function writeHeader(buf: Buffer, view: DataView, start: number, firstSeq: number, count: number): void {
  buf[start] = WAL_FORMAT_VERSION;
  view.setUint32(start + 1, Math.floor(firstSeq / 2 ** 32));
  view.setUint32(start + 5, firstSeq >>> 0);
  view.setUint32(start + 9, count);
  view.setUint32(start + 13, crc32c(buf, start, start + 13));
}

/**
 * Reads and checks a block's header against the key it is stored under. Never throws: a damaged
 * header is an expected outcome of reading a disk.
 */
export function readBlockHeader(buf: Buffer, key: number): Decoded<BlockHeader> {
  if (buf.length < BLOCK_HEADER_BYTES) return { ok: false, reason: `block of ${buf.length} bytes is shorter than its header` };
  const stored = buf.readUInt32BE(13);
  const computed = crc32c(buf, 0, 13);
  if (stored !== computed) return { ok: false, reason: `block header checksum mismatch: stored ${stored}, computed ${computed}` };
  if (buf[0] !== WAL_FORMAT_VERSION) return { ok: false, reason: `unknown block format version ${String(buf[0])}` };
  const high = buf.readUInt32BE(1);
  if (high > SEQ_HIGH_MAX) return { ok: false, reason: 'block first seq above 2^53 - 1' };
  const firstSeq = high * 2 ** 32 + buf.readUInt32BE(5);
  const count = buf.readUInt32BE(9);
  if (firstSeq < 1 || count < 1 || count > WAL_BLOCK_RECORDS_MAX)
    return { ok: false, reason: `block header out of range: first seq ${firstSeq}, ${count} records` };
  if (firstSeq + count - 1 !== key)
    return { ok: false, reason: `block of seqs ${firstSeq}..${firstSeq + count - 1} stored under key ${key}` };
  return { ok: true, record: { firstSeq, count } };
}

/** Where and why reading a block stopped: `seq` is the first record not read. */
type BlockFailure = { readonly seq: number; readonly reason: string };

/** Checks one record at `seq` in buf[start, end) and uses it; returns null, or why it is refused. */
type BlockRecordVisitor = (start: number, end: number, seq: number) => string | null;

/**
 * Walks the records of a block whose header verified: each record's length must stay inside the
 * block, and the records must fill it exactly. Records from `fromSeq` on go to `visit`, which
 * checks each one itself; the ones before it (a block that pruning left straddling the mark) are
 * checked here and skipped. Returns null, or where it stopped; never throws on bad bytes.
 */
export function walkRecords(buf: Buffer, header: BlockHeader, fromSeq: number, visit: BlockRecordVisitor): BlockFailure | null {
  const lastSeq = header.firstSeq + header.count - 1;
  let at = BLOCK_HEADER_BYTES;
  for (let seq = header.firstSeq; seq <= lastSeq; seq++) {
    const end = recordEnd(buf, at, buf.length);
    if (end < 0) return { seq, reason: 'corrupt record (its length runs past its block)' };
    const reason = seq >= fromSeq ? visit(at, end, seq) : skipped(buf, at, end, seq);
    if (reason !== null) return { seq, reason: `corrupt record (${reason})` };
    at = end;
  }
  if (at !== buf.length)
    return { seq: lastSeq + 1, reason: `the block ending at seq ${lastSeq} has ${buf.length - at} bytes after its last record` };
  return null;
}

function skipped(buf: Buffer, start: number, end: number, seq: number): string | null {
  const decoded = decode(buf.subarray(start, end), seq);
  return decoded.ok ? null : decoded.reason;
}

/**
 * Encodes the records of one batch, as they are decided, into one reused buffer that grows as
 * needed: no allocation per record. `finish` copies the batch out into a buffer of its own (LMDB
 * reads it in place until the commit) and returns its blocks and processed entries as views of it.
 */
export class BatchEncoder {
  private buf: Buffer = Buffer.allocUnsafeSlow(64 * 1024);
  private view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  private used = 0;
  private firstSeq = 0;
  private nextSeq = 0;
  /** Where the open block starts, and how many records it has. */
  private blockStart = 0;
  private blockCount = 0;
  /** [start, end, lastSeq] of each closed block of the batch. */
  private readonly blockBounds: number[] = [];
  /** The processed entries' keys, written as records are added; copied after the blocks by finish. */
  private keyBuf: Buffer = Buffer.allocUnsafeSlow(16 * 1024);
  private keysUsed = 0;
  /** [record start, record end, key start, key end, seq] of each processed entry. */
  private readonly processedBounds: number[] = [];

  /** Records added since the last finish. */
  get records(): number {
    return this.firstSeq === 0 ? 0 : this.nextSeq - this.firstSeq;
  }

  /**
   * Adds the next record of the batch, with its processed-set entry when `processedKey` (the
   * ledger's name of the entry, opKeyOf) is given; the entry's key is written from the record.
   */
  add(record: WalRecord, processedKey: string | null): void {
    if (this.firstSeq === 0) {
      this.firstSeq = record.seq;
      this.nextSeq = record.seq;
    }
    if (record.seq !== this.nextSeq) throw new Error(`wal: record seq ${record.seq} added where ${this.nextSeq} was expected`);
    if (this.blockCount === WAL_BLOCK_RECORDS_MAX) this.closeBlock();
    if (this.used + BLOCK_HEADER_BYTES + RECORD_BYTES_MAX > this.buf.length) this.grow();
    if (this.blockCount === 0) {
      this.blockStart = this.used;
      this.used += BLOCK_HEADER_BYTES;
    }
    const start = this.used;
    this.used = encodeInto(record, this.buf, this.view, start);
    this.blockCount++;
    this.nextSeq++;
    if (processedKey !== null) {
      // Pair assertion, without building the text again: the entry named is this record's.
      if (record.kind !== 'op' || processedKey.length !== record.op.length + 1 + record.key.length) {
        throw new Error(`wal: processed key ${processedKey} does not name record ${record.seq}`);
      }
      if (this.keysUsed + PROCESSED_KEY_BYTES_MAX > this.keyBuf.length) this.keyBuf = grown(this.keyBuf, this.keysUsed);
      const keyStart = this.keysUsed;
      this.keysUsed = writeProcessedKey(record.op, record.key, this.keyBuf, keyStart);
      this.processedBounds.push(start, this.used, keyStart, this.keysUsed, record.seq);
    }
  }

  /** The batch built since the last finish, or null when no record was added; resets the encoder. */
  finish(): WalBatch | null {
    if (this.records === 0) return null;
    this.closeBlock();
    const bytes = Buffer.allocUnsafeSlow(this.used + this.keysUsed);
    this.buf.copy(bytes, 0, 0, this.used);
    this.keyBuf.copy(bytes, this.used, 0, this.keysUsed);
    const keysAt = this.used;
    const bounds = this.blockBounds;
    const blocks: WalBlock[] = [];
    for (let i = 0; i < bounds.length; i += 3)
      blocks.push({ lastSeq: bounds[i + 2] as number, bytes: bytes.subarray(bounds[i], bounds[i + 1]) });
    const pb = this.processedBounds;
    const processed: ProcessedWrite[] = new Array<ProcessedWrite>(pb.length / 5);
    for (let i = 0, b = 0; b < pb.length; i++, b += 5) {
      processed[i] = {
        key: bytes.subarray(keysAt + (pb[b + 2] as number), keysAt + (pb[b + 3] as number)),
        bytes: bytes.subarray(pb[b], pb[b + 1]),
        seq: pb[b + 4] as number,
      };
    }
    const batch: WalBatch = { firstSeq: this.firstSeq, lastSeq: this.nextSeq - 1, blocks, processed };
    this.used = 0;
    this.firstSeq = 0;
    this.nextSeq = 0;
    this.blockBounds.length = 0;
    this.keysUsed = 0;
    this.processedBounds.length = 0;
    return batch;
  }

  private closeBlock(): void {
    if (this.blockCount === 0) return;
    const lastSeq = this.nextSeq - 1;
    writeHeader(this.buf, this.view, this.blockStart, lastSeq - this.blockCount + 1, this.blockCount);
    this.blockBounds.push(this.blockStart, this.used, lastSeq);
    this.blockCount = 0;
  }

  private grow(): void {
    this.buf = grown(this.buf, this.used);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  }
}

/** A buffer twice the size of `buf` holding its first `used` bytes. */
function grown(buf: Buffer, used: number): Buffer {
  const bigger = Buffer.allocUnsafeSlow(buf.length * 2);
  buf.copy(bigger, 0, 0, used);
  return bigger;
}

/** Encodes `records` (consecutive seqs) as one batch, each keyed operation with its processed entry, as UBSCore does. */
export function encodeBatch(records: readonly WalRecord[]): WalBatch | null {
  const encoder = new BatchEncoder();
  for (const record of records) encoder.add(record, record.kind === 'op' ? opKeyOf(record.op, record.key) : null);
  return encoder.finish();
}
