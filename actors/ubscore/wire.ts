// The packed form of UBSCore's requests on a client's port. A structured clone costs about 2 µs
// per request object across the two threads (measured: 4,096 requests of a nested command with
// two bigints, serialized on one side and read on the other), which was as much as UBSCore spent
// deciding the command. Packed as bytes, the same message is one buffer handed over whole.
//
// Keyed operations (transfer_op, external_op), the hot path, are packed. Every other command, and
// a keyed one whose fields do not fit the wire exactly (text that is not ASCII or longer than 255,
// a bigint outside u64, an unknown op), travels as an object in `others`; a tag keeps its place in
// the arrival order. Packing never judges a command: UBSCore still checks every field it decodes,
// and an unpacked command gets exactly the answer it got before.
//
// One entry, big-endian:
//   offset  size  field
//   0       1     tag: 1 transfer_op, 2 external_op, 3 the next object of `others`
//   1       8     request id, f64
//   then for tags 1 and 2 only:
//   9       1     op code (OP_CODES)
//   10      8     user id, u64
//   18      8     amount, u64
//   26      1+n   asset: length u8, then n ASCII bytes
//   ..      1+m   key (req_id or ref): length u8, then m ASCII bytes

import type { MessagePort } from 'node:worker_threads';
import type { UbsCommand } from '../../src/domain/spot-commands.js';
// The WAL's op codes serve the wire too: one table of which number is which operation.
import { OP_CODES } from '../../wal/codes.js';
import type { Replies } from '../../src/ubscore/durability/batch.js';
import type { UbsPortMessage, UbsPortReply, UbsRequest } from '../protocol.js';
import { UNPACKER_ASSETS_MAX } from '../../src/limits.js';
import { errorText } from '../../src/error-text.js';
import { logger } from '../../src/ubscore/log.js';

const TAG_TRANSFER_OP = 1;
const TAG_EXTERNAL_OP = 2;
const TAG_OBJECT = 3;
const CODE_BY_OP: ReadonlyMap<unknown, number> = new Map(Object.entries(OP_CODES));
const OP_BY_CODE: ReadonlyMap<number, string> = new Map(Object.entries(OP_CODES).map(([name, code]) => [code, name]));

const ENTRY_FIXED_BYTES = 28;
const TEXT_LENGTH_MAX = 255;
/** The largest packed entry: both texts at their wire maximum. */
const ENTRY_BYTES_MAX = ENTRY_FIXED_BYTES + 2 * TEXT_LENGTH_MAX;
const U64_MAX = 2n ** 64n - 1n;
const SAFE_HIGH_MAX = 0x1fffff;
/** The packer's first buffer; it doubles when a message needs more. */
const PACKER_INITIAL_BYTES = 64 * 1024;

function isU64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= 0n && value <= U64_MAX;
}

function fitsText(value: unknown): value is string {
  if (typeof value !== 'string' || value.length > TEXT_LENGTH_MAX) return false;
  for (let i = 0; i < value.length; i++) if (value.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * Packs the requests of one message on the client. Nothing is allocated per request but the
 * bytes themselves; `take` copies them out into a buffer of their own, which the port transfers.
 */
export class RequestPacker {
  private buf = Buffer.allocUnsafeSlow(PACKER_INITIAL_BYTES);
  private view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength);
  private used = 0;
  private count = 0;
  private others: UbsRequest[] = [];

  get size(): number {
    return this.count;
  }

  add(id: number, command: UbsCommand): void {
    if (this.used + ENTRY_BYTES_MAX > this.buf.length) this.grow();
    this.count++;
    if (this.packKeyed(id, command)) return;
    this.buf[this.used] = TAG_OBJECT;
    this.view.setFloat64(this.used + 1, id);
    this.used += 9;
    this.others.push({ id, command });
  }

  /** Packs a keyed command that fits the wire exactly; false leaves it to the object path. */
  private packKeyed(id: number, command: UbsCommand): boolean {
    if (typeof command !== 'object' || command === null) return false;
    let tag: number;
    let key: unknown;
    if (command.kind === 'transfer_op') {
      tag = TAG_TRANSFER_OP;
      key = command.reqId;
    } else if (command.kind === 'external_op') {
      tag = TAG_EXTERNAL_OP;
      key = command.ref;
    } else {
      return false;
    }
    const code = CODE_BY_OP.get(command.op);
    if (code === undefined || !fitsText(key) || !fitsText(command.asset) || !isU64(command.userId) || !isU64(command.amount)) return false;
    const at = this.used;
    this.buf[at] = tag;
    this.view.setFloat64(at + 1, id);
    this.buf[at + 9] = code;
    this.view.setBigUint64(at + 10, command.userId);
    this.view.setBigUint64(at + 18, command.amount);
    this.used = this.writeText(this.writeText(at + 26, command.asset), key);
    return true;
  }

  /** The message holding every request added since the last take, and the buffer to transfer. */
  take(): UbsPortMessage {
    const bytes = new Uint8Array(this.used);
    bytes.set(this.buf.subarray(0, this.used));
    const message: UbsPortMessage = { kind: 'ubs.requests', count: this.count, bytes, others: this.others };
    this.used = 0;
    this.count = 0;
    this.others = [];
    return message;
  }

  private writeText(at: number, text: string): number {
    const buf = this.buf;
    buf[at] = text.length;
    for (let i = 0; i < text.length; i++) buf[at + 1 + i] = text.charCodeAt(i);
    return at + 1 + text.length;
  }

  private grow(): void {
    const bigger = Buffer.allocUnsafeSlow(this.buf.length * 2);
    this.buf.copy(bigger, 0, 0, this.used);
    this.buf = bigger;
    this.view = new DataView(bigger.buffer, bigger.byteOffset, bigger.byteLength);
  }
}

/** Receives one request of a message, in arrival order. */
type RequestVisitor = (id: number, command: unknown) => void;

/**
 * Reads packed messages on the UBSCore thread. Every read is bounds-checked: a malformed message
 * stops with a reason, after the requests before the damage were visited, and never throws.
 */
export class RequestUnpacker {
  private readonly assets: string[] = [];

  /** Visits every request of `message` in order; returns null, or why it stopped early. */
  unpack(message: UbsPortMessage, visit: RequestVisitor): string | null {
    const { bytes, others, count } = message;
    if (!(bytes instanceof Uint8Array) || !Array.isArray(others) || !Number.isSafeInteger(count)) return 'not a packed message';
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let at = 0;
    let other = 0;
    for (let n = 0; n < count; n++) {
      if (at + 9 > buf.length) return `entry ${n} runs past the message`;
      const tag = buf[at] as number;
      const id = buf.readDoubleBE(at + 1);
      if (tag === TAG_OBJECT) {
        const request = others[other++] as { id?: unknown; command?: unknown } | undefined;
        if (typeof request !== 'object' || request === null || request.id !== id) return `entry ${n} has no matching object`;
        visit(id, request.command);
        at += 9;
        continue;
      }
      const end = this.readKeyed(buf, at, tag, id, visit);
      if (end < 0) return `entry ${n} is malformed`;
      at = end;
    }
    if (at !== buf.length || other !== others.length) return 'the message holds more than its count';
    return null;
  }

  /** Reads one keyed entry at `at` and visits it; returns its end, or -1 if it is malformed. */
  private readKeyed(buf: Buffer, at: number, tag: number, id: number, visit: RequestVisitor): number {
    if ((tag !== TAG_TRANSFER_OP && tag !== TAG_EXTERNAL_OP) || at + ENTRY_FIXED_BYTES > buf.length) return -1;
    const op = OP_BY_CODE.get(buf[at + 9] as number);
    const assetEnd = at + 27 + (buf[at + 26] as number);
    if (op === undefined || assetEnd >= buf.length) return -1;
    const keyEnd = assetEnd + 1 + (buf[assetEnd] as number);
    if (keyEnd > buf.length) return -1;
    const userId = readU64(buf, at + 10);
    const amount = readU64(buf, at + 18);
    const asset = this.assetOf(buf, at + 27, assetEnd);
    const key = buf.toString('latin1', assetEnd + 1, keyEnd);
    // The objects are built as the client's own are, so decide sees the same shapes either way. The
    // op is whatever the client sent with this kind: decide, not the wire, refuses a wrong pair.
    if (tag === TAG_TRANSFER_OP) visit(id, { kind: 'transfer_op', op, reqId: key, userId, asset, amount });
    else visit(id, { kind: 'external_op', op, ref: key, userId, asset, amount });
    return keyEnd;
  }

  private assetOf(buf: Buffer, start: number, end: number): string {
    for (const known of this.assets) {
      if (known.length !== end - start) continue;
      let same = true;
      for (let i = 0; i < known.length && same; i++) same = known.charCodeAt(i) === buf[start + i];
      if (same) return known;
    }
    const text = buf.toString('latin1', start, end);
    if (this.assets.length < UNPACKER_ASSETS_MAX) this.assets.push(text);
    return text;
  }
}

/** A u64, big-endian; below 2^53 (every realistic id and amount) one BigInt call suffices. */
function readU64(buf: Buffer, at: number): bigint {
  const high = buf.readUInt32BE(at);
  const low = buf.readUInt32BE(at + 4);
  return high <= SAFE_HIGH_MAX ? BigInt(high * 2 ** 32 + low) : (BigInt(high) << 32n) | BigInt(low);
}

// ---------------------------------------------------------------------------------------------
// The core's side of a port.

export function isPortMessage(message: unknown): message is UbsPortMessage {
  if (typeof message !== 'object' || message === null) return false;
  const candidate = message as { kind?: unknown };
  return candidate.kind === 'ubs.requests';
}

/** Posts one port's answers as one message. */
export function postReplies(port: MessagePort, replies: Replies): void {
  if (replies.ids.length === 0) return;
  const reply: UbsPortReply = { kind: 'ubs.replies', ids: Float64Array.from(replies.ids), results: replies.results };
  try {
    port.postMessage(reply);
  } catch (error) {
    // The client is gone; its effects are durable and a retry will read them as duplicates.
    logger.error('could not post replies', { reason: errorText(error) });
  }
}
