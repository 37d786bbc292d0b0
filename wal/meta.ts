// The `meta` database of UBSCore's LMDB environment: a few named numbers, each checksummed, and
// the check of the environment's format version.

import { WAL_FORMAT_VERSION } from './codec.js';
import { crc32c } from './crc32.js';
import type { WalDatabases } from './databases.js';

/** The `meta` key holding the highest sequence number deliberately pruned from `wal`. */
export const PRUNED_THROUGH_KEY = 'walPrunedThroughSeq';
/** The `meta` key naming the format version of everything in the environment (wal/codec.ts). */
const FORMAT_VERSION_KEY = 'walFormatVersion';
/** A meta sequence number: u32 high, u32 low, CRC-32C of those 8 bytes. */
const META_SEQ_BYTES = 12;

/** Encodes a meta number (a sequence number or a version) with its checksum. */
export function encodeMetaSeq(seq: number): Buffer {
  if (!Number.isSafeInteger(seq) || seq < 0) throw new Error(`wal: meta seq out of range: ${seq}`);
  const bytes = Buffer.alloc(META_SEQ_BYTES);
  bytes.writeUInt32BE(Math.floor(seq / 2 ** 32), 0);
  bytes.writeUInt32BE(seq >>> 0, 4);
  bytes.writeUInt32BE(crc32c(bytes, 0, 8), 8);
  return bytes;
}

/** Reads a meta sequence number back, checking the checksum it was written with. */
export function decodeMetaSeq(bytes: Uint8Array, name: string): number {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length !== META_SEQ_BYTES) throw new Error(`wal: meta ${name} is ${buf.length} bytes, expected ${META_SEQ_BYTES}`);
  if (buf.readUInt32BE(8) !== crc32c(buf, 0, 8)) throw new Error(`wal: meta ${name} fails its checksum`);
  const seq = buf.readUInt32BE(0) * 2 ** 32 + buf.readUInt32BE(4);
  if (!Number.isSafeInteger(seq)) throw new Error(`wal: meta ${name} is above 2^53 - 1`);
  return seq;
}

/**
 * Refuses an environment written in another format, and stamps a new one with this format. A
 * directory without the stamp is new only if it holds nothing: version 1 wrote no stamp.
 */
export function checkFormatVersion(databases: WalDatabases, dir: string): void {
  const { meta } = databases;
  const stored = meta.getBinary(FORMAT_VERSION_KEY);
  if (stored !== undefined) {
    const version = decodeMetaSeq(stored, FORMAT_VERSION_KEY);
    if (version !== WAL_FORMAT_VERSION)
      throw new Error(`wal: ${dir} holds format version ${version}; this build reads only version ${WAL_FORMAT_VERSION}`);
    return;
  }
  if (holdsLedgerState(databases)) {
    throw new Error(
      `wal: ${dir} holds a UBSCore log of format version 1 (one WAL entry per record); this build reads only version ${WAL_FORMAT_VERSION} (one block per batch). ` +
        'Replay it with the build that wrote it, or start from an empty directory',
    );
  }
  meta.putSync(FORMAT_VERSION_KEY, encodeMetaSeq(WAL_FORMAT_VERSION));
}

/** The `meta` key naming the ledger this environment belongs to (the same id is in PostgreSQL). */
const LEDGER_ID_KEY = 'ledgerId';
const LEDGER_ID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The ledger id stamped on the environment, or null if none is. */
export function readLedgerId({ meta }: WalDatabases): string | null {
  const stored = meta.getBinary(LEDGER_ID_KEY);
  if (stored === undefined) return null;
  const text = Buffer.from(stored.buffer, stored.byteOffset, stored.byteLength).toString('utf8');
  if (!LEDGER_ID_PATTERN.test(text)) throw new Error(`wal: meta ${LEDGER_ID_KEY} is not a ledger id: ${JSON.stringify(text.slice(0, 40))}`);
  return text;
}

/** Stamps the environment with its ledger id, durably, before UBSCore writes anything. */
export function writeLedgerId({ meta }: WalDatabases, id: string): void {
  if (!LEDGER_ID_PATTERN.test(id)) throw new Error(`wal: not a ledger id: ${JSON.stringify(id)}`);
  meta.putSync(LEDGER_ID_KEY, Buffer.from(id, 'utf8'));
}

/** Whether the environment holds any ledger state: WAL records, processed operations or snapshots. */
export function holdsLedgerState({ wal, processed, snapshot }: WalDatabases): boolean {
  return [wal, processed, snapshot].some((db) => db.getKeysCount({ limit: 1 }) > 0);
}
