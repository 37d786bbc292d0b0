// Where snapshots live: the `snapshot` database of the WAL's LMDB environment, the header of the
// snapshot covering record S under [S, 0] and its chunks under [S, 1..n] (the format is
// wal/snapshot.ts). A snapshot is written in ONE LMDB transaction, so a crash leaves either the
// whole snapshot or none of it; it is read back whole and verified before one account is visited.

import type { AccountVisitor } from '../src/domain/spot-records.js';
import { errorText } from '../src/error-text.js';
import type { Decoded } from './codec.js';
import type { SnapshotKey, WalDatabases } from './databases.js';
import { decodeSnapshotBody, decodeSnapshotHeader, type EncodedSnapshot, type SnapshotInfo } from './snapshot.js';

function fail(reason: string): { readonly ok: false; readonly reason: string } {
  return { ok: false, reason };
}

function isSnapshotKey(key: unknown): key is SnapshotKey {
  return Array.isArray(key) && key.length === 2 && key.every((part) => Number.isSafeInteger(part) && (part as number) >= 0);
}

export class SnapshotStore {
  constructor(private readonly dbs: WalDatabases) {}

  /** The sequence numbers of every snapshot with a header, newest first. */
  seqs(): number[] {
    const seqs: number[] = [];
    for (const key of this.dbs.snapshot.getKeys()) {
      if (!isSnapshotKey(key)) throw new Error(`snapshot: a key is not [seq, part]: ${JSON.stringify(key)}`);
      if (key[1] === 0) seqs.push(key[0]);
    }
    return seqs.reverse();
  }

  /**
   * Reads the snapshot at `seq`, verifies it whole, then streams its accounts to `visit`. A
   * throw from `visit` (the ledger refusing an account) comes back as a failure too.
   */
  load(seq: number, visit: AccountVisitor): Decoded<SnapshotInfo> {
    const headerBytes = this.dbs.snapshot.getBinary([seq, 0]);
    if (headerBytes === undefined) return fail(`no snapshot header at seq ${seq}`);
    const header = decodeSnapshotHeader(headerBytes, seq);
    if (!header.ok) return header;
    const chunks: Buffer[] = [];
    // getRange copies each binary value out of the map, so the chunks stay valid as they are held.
    for (const { key, value } of this.dbs.snapshot.getRange({ start: [seq, 1], end: [seq + 1, 0] })) {
      if (!isSnapshotKey(key) || key[1] !== chunks.length + 1)
        return fail(`chunk ${chunks.length + 1} is missing (found key ${JSON.stringify(key)})`);
      chunks.push(value);
    }
    try {
      const reason = decodeSnapshotBody(header.record, chunks, visit);
      return reason === null ? header : fail(reason);
    } catch (error) {
      return fail(`an account was refused: ${errorText(error)}`);
    }
  }

  /**
   * The snapshot at `seq` exactly as stored, its header and chunks in order and not decoded (a
   * copy to PostgreSQL; whoever loads it verifies it); null without a header or with a chunk missing.
   */
  stored(seq: number): { readonly seq: number; readonly header: Buffer; readonly chunks: Buffer[] } | null {
    const header = this.dbs.snapshot.getBinary([seq, 0]);
    if (header === undefined) return null;
    const chunks: Buffer[] = [];
    for (const { key, value } of this.dbs.snapshot.getRange({ start: [seq, 1], end: [seq + 1, 0] })) {
      if (!isSnapshotKey(key) || key[1] !== chunks.length + 1) return null;
      chunks.push(value);
    }
    return { seq, header: Buffer.from(header), chunks };
  }

  /**
   * Writes a whole snapshot in one transaction; resolves once it is durable. Whatever is stored
   * at the same seq already goes in that transaction: only the remains of a corrupt snapshot a
   * restart fell back from can be there, since the worker never snapshots a seq twice otherwise.
   */
  async write(snapshot: EncodedSnapshot): Promise<void> {
    const { seq } = snapshot.info;
    const stale = [...this.dbs.snapshot.getKeys({ start: [seq, 0], end: [seq + 1, 0] })];
    const { env, snapshot: db } = this.dbs;
    // One `batch` is one LMDB transaction (see appendBatch in wal/log.ts): all of it or nothing.
    const written = await env.batch(() => {
      for (const key of stale) void db.remove(key);
      void db.put([seq, 0], snapshot.header);
      snapshot.chunks.forEach((chunk, index) => void db.put([seq, index + 1], chunk));
    });
    if (!written) throw new Error(`snapshot: the snapshot at seq ${seq} was not written`);
  }

  /**
   * Deletes every entry of the snapshots older than `seq` (orphaned chunks included) in one
   * transaction, bounded by the few snapshots kept times their chunks; resolves their count.
   */
  async deleteBefore(seq: number): Promise<number> {
    const keys: SnapshotKey[] = [];
    for (const key of this.dbs.snapshot.getKeys({ end: [seq, 0] })) {
      if (!isSnapshotKey(key)) throw new Error(`snapshot: a key is not [seq, part]: ${JSON.stringify(key)}`);
      keys.push(key);
    }
    if (keys.length === 0) return 0;
    const { env, snapshot: db } = this.dbs;
    const written = await env.batch(() => {
      for (const key of keys) void db.remove(key);
    });
    if (!written) throw new Error(`snapshot: deleting the snapshots before seq ${seq} was not written`);
    return keys.filter((key) => key[1] === 0).length;
  }
}
