// Snapshots of the spot ledger in LMDB, version 1: every account (user id, asset, available,
// status) as it stood after WAL record S, so a restart replays only records S+1.. and the WAL
// before S can be pruned. A snapshot lives in the `snapshot` database of the WAL's environment
// under the keys [S, 0] (the header) and [S, 1..n] (the chunks), and is written in ONE LMDB
// transaction: a crash leaves either the whole snapshot or none of it (wal/snapshot-store.ts).
//
// Header, big-endian:
//   offset  size  field
//   0       4     magic "UBSS"
//   4       1     format version (1)
//   5       8     S, the sequence number covered: u32 high, u32 low
//   13      4     account count
//   17      4     chunk count, exactly ceil(account count / SNAPSHOT_CHUNK_ACCOUNTS_MAX)
//   21      8     body bytes, the sum of every chunk's length: u32 high, u32 low
//   29      4     body CRC-32C: over every chunk, in order, as one byte string
//   33      8     written at, ms since the epoch (information only): u32 high, u32 low
//   41      2     asset count a
//   43      ..    a assets: length u8, then ASCII bytes; an account refers to its asset by index
//   ..      4     CRC-32C of every preceding header byte
// Chunk i (1-based):
//   0       4     i
//   4       4     k, the accounts in this chunk (SNAPSHOT_CHUNK_ACCOUNTS_MAX except in the last)
//   8       19k   accounts: user id u64, asset index u16, available u64, status code u8
//   ..      4     CRC-32C of every preceding chunk byte: names a damaged chunk on load
//
// Pair assertions: the encoder checks every field as it writes it and computes both checksums;
// the loader verifies both checksums and every count before it reads an account, and then checks
// every field again; the ledger checks each account once more as it restores it.

import { BALANCE_UNITS_MAX } from '../src/domain/money.js';
import type { AccountStatus } from '../src/domain/types.js';
import { USER_ID_MAX, isAssetSymbol } from '../src/domain/checks.js';
import type { AccountVisitor } from '../src/domain/spot-records.js';
import { STATUS_BY_CODE, STATUS_CODES } from './codes.js';
import type { Decoded } from './codec.js';
import { crc32c, crc32cUpdate } from './crc32.js';
import { SNAPSHOT_CHUNK_BYTES_MAX } from '../src/limits.js';

const SNAPSHOT_FORMAT_VERSION = 1;
const SNAPSHOT_MAGIC = 0x55425353;
const ACCOUNT_BYTES = 19;
const CHUNK_PREFIX_BYTES = 8;
const CHECKSUM_BYTES = 4;
export const SNAPSHOT_CHUNK_ACCOUNTS_MAX = Math.floor((SNAPSHOT_CHUNK_BYTES_MAX - CHUNK_PREFIX_BYTES - CHECKSUM_BYTES) / ACCOUNT_BYTES);
const HEADER_FIXED_BYTES = 43;
/** Asset indexes are u16. */
const SNAPSHOT_ASSETS_MAX = 0xffff;
/** Counts are u32. */
const SNAPSHOT_ACCOUNTS_MAX = 0xffffffff;

export type SnapshotInfo = {
  readonly seq: number;
  readonly accountCount: number;
  readonly chunkCount: number;
  readonly bodyBytes: number;
  readonly bodyCrc: number;
  readonly writtenAtMs: number;
  readonly assets: readonly string[];
};

export type EncodedSnapshot = { readonly info: SnapshotInfo; readonly header: Buffer; readonly chunks: readonly Buffer[] };

function chunkCountFor(accountCount: number): number {
  return Math.ceil(accountCount / SNAPSHOT_CHUNK_ACCOUNTS_MAX);
}

function bodyBytesFor(accountCount: number): number {
  return accountCount * ACCOUNT_BYTES + chunkCountFor(accountCount) * (CHUNK_PREFIX_BYTES + CHECKSUM_BYTES);
}

function fail(reason: string): { readonly ok: false; readonly reason: string } {
  return { ok: false, reason };
}

function writeU64Number(view: DataView, offset: number, value: number): void {
  view.setUint32(offset, Math.floor(value / 2 ** 32));
  view.setUint32(offset + 4, value >>> 0);
}

function readU64Number(view: DataView, offset: number): number {
  return view.getUint32(offset) * 2 ** 32 + view.getUint32(offset + 4);
}

function viewOf(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// ---------------------------------------------------------------------------------------------
// Encoding.

/**
 * Encodes the accounts of one capture, fed one at a time (`add` is an AccountVisitor), so the
 * caller can spread the work over many event-loop turns. Chunks are sized exactly, from the
 * account count declared up front.
 */
export class SnapshotEncoder {
  private readonly assetIndex = new Map<string, number>();
  private readonly assets: string[] = [];
  private readonly chunks: Buffer[] = [];
  private chunk: Buffer | null = null;
  private view: DataView | null = null;
  private used = 0;
  private chunkAccounts = 0;
  private accounts = 0;
  private bodyCrc = 0;
  private bodyBytes = 0;
  private finished = false;

  constructor(
    readonly seq: number,
    readonly accountCount: number,
    private readonly writtenAtMs: number,
  ) {
    if (!Number.isSafeInteger(seq) || seq < 1) throw new Error(`snapshot: seq out of range: ${seq}`);
    if (!Number.isSafeInteger(accountCount) || accountCount < 0 || accountCount > SNAPSHOT_ACCOUNTS_MAX) {
      throw new Error(`snapshot: account count out of range: ${accountCount}`);
    }
    if (!Number.isSafeInteger(writtenAtMs) || writtenAtMs < 0) throw new Error(`snapshot: bad time ${writtenAtMs}`);
  }

  readonly add: AccountVisitor = (userId, asset, available, status) => {
    if (this.finished) throw new Error('snapshot: add after finish');
    if (this.accounts >= this.accountCount) throw new Error(`snapshot: more than the ${this.accountCount} accounts declared`);
    if (userId < 1n || userId > USER_ID_MAX) throw new Error(`snapshot: user id out of range: ${userId}`);
    if (available < 0n || available > BALANCE_UNITS_MAX) throw new Error(`snapshot: balance out of range: ${available}`);
    const statusCode = STATUS_CODES[status];
    if (statusCode === undefined) throw new Error(`snapshot: invalid status ${String(status)}`);
    const assetCode = this.assetIndex.get(asset) ?? this.newAsset(asset);
    if (this.chunk === null || this.view === null) this.openChunk();
    const view = this.view as DataView;
    const at = this.used;
    view.setBigUint64(at, userId);
    view.setUint16(at + 8, assetCode);
    view.setBigUint64(at + 10, available);
    view.setUint8(at + 18, statusCode);
    this.used = at + ACCOUNT_BYTES;
    this.accounts++;
    if (++this.chunkAccounts === SNAPSHOT_CHUNK_ACCOUNTS_MAX) this.sealChunk();
  };

  /** The header and chunks; asserts that exactly the declared accounts were added. */
  finish(): EncodedSnapshot {
    if (this.finished) throw new Error('snapshot: finish twice');
    if (this.accounts !== this.accountCount) throw new Error(`snapshot: ${this.accounts} accounts added, ${this.accountCount} declared`);
    if (this.chunk !== null) this.sealChunk();
    this.finished = true;
    const info: SnapshotInfo = {
      seq: this.seq,
      accountCount: this.accountCount,
      chunkCount: this.chunks.length,
      bodyBytes: this.bodyBytes,
      bodyCrc: this.bodyCrc,
      writtenAtMs: this.writtenAtMs,
      assets: this.assets,
    };
    if (info.chunkCount !== chunkCountFor(info.accountCount) || info.bodyBytes !== bodyBytesFor(info.accountCount)) {
      throw new Error(`snapshot: ${info.chunkCount} chunks of ${info.bodyBytes} bytes for ${info.accountCount} accounts`);
    }
    return { info, header: encodeHeader(info), chunks: this.chunks };
  }

  private newAsset(asset: string): number {
    if (!isAssetSymbol(asset)) throw new Error(`snapshot: invalid asset ${String(asset)}`);
    if (this.assets.length >= SNAPSHOT_ASSETS_MAX) throw new Error(`snapshot: more than ${SNAPSHOT_ASSETS_MAX} assets`);
    const code = this.assets.length;
    this.assets.push(asset);
    this.assetIndex.set(asset, code);
    return code;
  }

  private openChunk(): void {
    const accounts = Math.min(this.accountCount - this.accounts, SNAPSHOT_CHUNK_ACCOUNTS_MAX);
    // A chunk is handed to LMDB by address and must not share memory that is reused meanwhile.
    this.chunk = Buffer.allocUnsafeSlow(CHUNK_PREFIX_BYTES + accounts * ACCOUNT_BYTES + CHECKSUM_BYTES);
    this.view = viewOf(this.chunk);
    this.used = CHUNK_PREFIX_BYTES;
    this.chunkAccounts = 0;
  }

  private sealChunk(): void {
    const chunk = this.chunk;
    const view = this.view;
    if (chunk === null || view === null) throw new Error('snapshot: seal without a chunk');
    if (this.used + CHECKSUM_BYTES !== chunk.length)
      throw new Error(`snapshot: chunk filled ${this.used} of ${chunk.length - CHECKSUM_BYTES} bytes`);
    view.setUint32(0, this.chunks.length + 1);
    view.setUint32(4, this.chunkAccounts);
    view.setUint32(this.used, crc32c(chunk, 0, this.used));
    this.bodyCrc = crc32cUpdate(this.bodyCrc, chunk);
    this.bodyBytes += chunk.length;
    this.chunks.push(chunk);
    this.chunk = null;
    this.view = null;
  }
}

function encodeHeader(info: SnapshotInfo): Buffer {
  const assetBytes = info.assets.reduce((sum, asset) => sum + 1 + asset.length, 0);
  const header = Buffer.alloc(HEADER_FIXED_BYTES + assetBytes + CHECKSUM_BYTES);
  const view = viewOf(header);
  view.setUint32(0, SNAPSHOT_MAGIC);
  view.setUint8(4, SNAPSHOT_FORMAT_VERSION);
  writeU64Number(view, 5, info.seq);
  view.setUint32(13, info.accountCount);
  view.setUint32(17, info.chunkCount);
  writeU64Number(view, 21, info.bodyBytes);
  view.setUint32(29, info.bodyCrc);
  writeU64Number(view, 33, info.writtenAtMs);
  view.setUint16(41, info.assets.length);
  let offset = HEADER_FIXED_BYTES;
  for (const asset of info.assets) {
    header[offset] = asset.length;
    header.write(asset, offset + 1, 'latin1');
    offset += 1 + asset.length;
  }
  view.setUint32(offset, crc32c(header, 0, offset));
  return header;
}

// ---------------------------------------------------------------------------------------------
// Decoding: never throws on bad bytes; a failure comes back as a value naming what is wrong.

function readAssets(header: Buffer, count: number, end: number): Decoded<string[]> {
  const assets: string[] = [];
  let offset = HEADER_FIXED_BYTES;
  for (let i = 0; i < count; i++) {
    if (offset >= end) return fail(`asset ${i} starts past the header`);
    const next = offset + 1 + (header[offset] as number);
    if (next > end) return fail(`asset ${i} runs past the header`);
    const asset = header.toString('latin1', offset + 1, next);
    if (!isAssetSymbol(asset) || assets.includes(asset)) return fail(`asset ${i} ${JSON.stringify(asset)} is invalid or repeated`);
    assets.push(asset);
    offset = next;
  }
  if (offset !== end) return fail(`the asset list ends at ${offset}, the header at ${end}`);
  return { ok: true, record: assets };
}

/** Decodes and checks the header stored under [seq, 0]. */
export function decodeSnapshotHeader(bytes: Uint8Array, seq: number): Decoded<SnapshotInfo> {
  const header = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (header.length < HEADER_FIXED_BYTES + CHECKSUM_BYTES) return fail(`header of ${header.length} bytes is too short`);
  const end = header.length - CHECKSUM_BYTES;
  const view = viewOf(header);
  const stored = view.getUint32(end);
  const computed = crc32c(header, 0, end);
  if (stored !== computed) return fail(`header checksum mismatch: stored ${stored}, computed ${computed}`);
  if (view.getUint32(0) !== SNAPSHOT_MAGIC) return fail('header magic is not UBSS');
  if (view.getUint8(4) !== SNAPSHOT_FORMAT_VERSION) return fail(`unknown format version ${view.getUint8(4)}`);
  const info = {
    seq: readU64Number(view, 5),
    accountCount: view.getUint32(13),
    chunkCount: view.getUint32(17),
    bodyBytes: readU64Number(view, 21),
    bodyCrc: view.getUint32(29),
    writtenAtMs: readU64Number(view, 33),
  };
  if (info.seq !== seq) return fail(`header says seq ${info.seq}, stored under seq ${seq}`);
  if (info.chunkCount !== chunkCountFor(info.accountCount)) return fail(`${info.chunkCount} chunks for ${info.accountCount} accounts`);
  if (info.bodyBytes !== bodyBytesFor(info.accountCount)) return fail(`${info.bodyBytes} body bytes for ${info.accountCount} accounts`);
  const assets = readAssets(header, view.getUint16(41), end);
  if (!assets.ok) return assets;
  return { ok: true, record: { ...info, assets: assets.record } };
}

/** Checks every chunk's own checksum, index and count, then the body checksum over all of them. */
function verifyChunks(info: SnapshotInfo, chunks: readonly Uint8Array[]): string | null {
  if (chunks.length !== info.chunkCount) return `${chunks.length} chunks found, the header declares ${info.chunkCount}`;
  let bodyCrc = 0;
  let bodyBytes = 0;
  for (let i = 0; i < chunks.length; i++) {
    const chunk = chunks[i] as Uint8Array;
    const accounts = i === chunks.length - 1 ? info.accountCount - i * SNAPSHOT_CHUNK_ACCOUNTS_MAX : SNAPSHOT_CHUNK_ACCOUNTS_MAX;
    if (chunk.length !== CHUNK_PREFIX_BYTES + accounts * ACCOUNT_BYTES + CHECKSUM_BYTES)
      return `chunk ${i + 1} is ${chunk.length} bytes, expected ${accounts} accounts`;
    const view = viewOf(chunk);
    const end = chunk.length - CHECKSUM_BYTES;
    if (view.getUint32(end) !== crc32c(chunk, 0, end)) return `chunk ${i + 1} checksum mismatch`;
    if (view.getUint32(0) !== i + 1 || view.getUint32(4) !== accounts)
      return `chunk ${i + 1} is labelled chunk ${view.getUint32(0)} of ${view.getUint32(4)} accounts`;
    bodyCrc = crc32cUpdate(bodyCrc, chunk);
    bodyBytes += chunk.length;
  }
  if (bodyBytes !== info.bodyBytes) return `body is ${bodyBytes} bytes, the header declares ${info.bodyBytes}`;
  if (bodyCrc !== info.bodyCrc) return `body checksum mismatch: stored ${info.bodyCrc}, computed ${bodyCrc}`;
  return null;
}

/** Streams the accounts of one verified chunk to `visit`, checking every field again. */
function decodeChunk(info: SnapshotInfo, chunk: Uint8Array, index: number, visit: AccountVisitor): string | null {
  const view = viewOf(chunk);
  const end = chunk.length - CHECKSUM_BYTES;
  const assets = info.assets;
  for (let at = CHUNK_PREFIX_BYTES; at < end; at += ACCOUNT_BYTES) {
    const userId = view.getBigUint64(at);
    const asset = assets[view.getUint16(at + 8)];
    const available = view.getBigUint64(at + 10);
    const status: AccountStatus | undefined = STATUS_BY_CODE.get(view.getUint8(at + 18));
    if (userId < 1n || userId > USER_ID_MAX) return `chunk ${index}: user id out of range: ${userId}`;
    if (asset === undefined) return `chunk ${index}: asset index ${view.getUint16(at + 8)} out of range`;
    if (available > BALANCE_UNITS_MAX) return `chunk ${index}: balance out of range: ${available}`;
    if (status === undefined) return `chunk ${index}: unknown status code ${view.getUint8(at + 18)}`;
    visit(userId, asset, available, status);
  }
  return null;
}

/** Verifies a whole snapshot first, then streams its accounts; nothing is visited if any check fails. */
export function decodeSnapshotBody(info: SnapshotInfo, chunks: readonly Uint8Array[], visit: AccountVisitor): string | null {
  const damage = verifyChunks(info, chunks);
  if (damage !== null) return damage;
  for (let i = 0; i < chunks.length; i++) {
    const reason = decodeChunk(info, chunks[i] as Uint8Array, i + 1, visit);
    if (reason !== null) return reason;
  }
  return null;
}
