// UBSCore's write-ahead log in LMDB: the `wal` database (sequence number → encoded record) and
// the `processed` database (`${op}:${key}` → the same encoded record), written together in one
// LMDB transaction per batch, so the processed set can never disagree with the log.

import { open } from 'lmdb';
import type { Database, RootDatabase } from 'lmdb';
import type { OpRecord, WalRecord } from '../src/ubscore/core.js';
import { decode, decodeProcessed } from './codec.js';

/**
 * Environment options, every durability-relevant one explicit. With `overlappingSync` off and
 * neither `noSync` nor `noMetaSync`, LMDB's `mdb_txn_commit` fsyncs the data pages and then
 * writes the meta page through the O_DSYNC descriptor before it returns, and lmdb-js resolves a
 * write's promise only after the commit returned. So a resolved promise means durable. With
 * `overlappingSync` (lmdb-js's default on Linux) the promise would resolve at commit, before the
 * flush, which is exactly the reply-before-durability bug the actor must never have.
 */
export const WAL_ENV_OPTIONS = {
  overlappingSync: false,
  noSync: false,
  noMetaSync: false,
  useWritemap: false,
  // The actor does its own group commit; lmdb-js should start each transaction as soon as asked.
  commitDelay: 0,
  eventTurnBatching: true,
  // Values are our own checksummed bytes: no compression, no msgpack, no value cache.
  compression: false,
  cache: false,
  maxDbs: 4,
} as const;

export const WAL_DB_NAME = 'wal';
export const PROCESSED_DB_NAME = 'processed';

export type WalWrite = { readonly seq: number; readonly bytes: Buffer };
export type ProcessedWrite = { readonly opKey: string; readonly bytes: Buffer };

export type WalLog = {
  /** Writes a batch in one LMDB transaction; resolves only once it is durable on disk. */
  appendBatch(records: readonly WalWrite[], processed: readonly ProcessedWrite[]): Promise<void>;
  /** The durable processed-set entry for `opKey`. Throws on a corrupt entry (fatal corruption). */
  getProcessed(opKey: string): OpRecord | undefined;
  /** Every record from seq 1 in order; throws an Error naming the first bad sequence number. */
  replay(): Iterable<WalRecord>;
  /** The highest sequence number on disk, 0 for an empty log. */
  lastSeq(): number;
  close(): Promise<void>;
};

export type WalDatabases = {
  readonly env: RootDatabase<Buffer, string>;
  readonly wal: Database<Buffer, number>;
  readonly processed: Database<Buffer, string>;
};

/** Opens the environment and both databases with the WAL's options (tests use it to corrupt one). */
export function openWalDatabases(dir: string): WalDatabases {
  const env = open<Buffer, string>({ path: dir, ...WAL_ENV_OPTIONS });
  const wal = env.openDB<Buffer, number>({ name: WAL_DB_NAME, encoding: 'binary' });
  const processed = env.openDB<Buffer, string>({ name: PROCESSED_DB_NAME, encoding: 'binary' });
  return { env, wal, processed };
}

export function openWal(dir: string): WalLog {
  return new LmdbWal(openWalDatabases(dir));
}

class LmdbWal implements WalLog {
  /** The last sequence number handed to `appendBatch`: the next batch must continue it. */
  private appendedSeq: number;
  private closed = false;

  constructor(private readonly dbs: WalDatabases) {
    this.appendedSeq = this.lastSeq();
  }

  appendBatch(records: readonly WalWrite[], processed: readonly ProcessedWrite[]): Promise<void> {
    if (this.closed) throw new Error('wal: append after close');
    records.forEach((record, index) => {
      if (record.seq !== this.appendedSeq + 1 + index) {
        throw new Error(`wal: batch seq ${record.seq} does not continue ${this.appendedSeq + index}`);
      }
    });
    this.appendedSeq += records.length;
    const { env, wal, processed: processedDb } = this.dbs;
    // Inside a transaction callback every put goes into that one transaction; its promise
    // resolves after the synced commit (see WAL_ENV_OPTIONS).
    return env.transaction(() => {
      for (const record of records) void wal.put(record.seq, record.bytes);
      for (const entry of processed) void processedDb.put(entry.opKey, entry.bytes);
    });
  }

  getProcessed(opKey: string): OpRecord | undefined {
    // The fast buffer is only valid until the next read; decode copies every field out of it.
    const bytes = this.dbs.processed.getBinaryFast(opKey);
    if (bytes === undefined) return undefined;
    const decoded = decodeProcessed(bytes, opKey);
    if (!decoded.ok) throw new Error(`wal: processed entry ${opKey} is corrupt: ${decoded.reason}`);
    return decoded.record;
  }

  *replay(): Generator<WalRecord> {
    let expected = 1;
    for (const { key, value } of this.dbs.wal.getRange()) {
      if (key !== expected) {
        throw new Error(`wal: replay stopped at seq ${expected}: found key ${String(key)} instead`);
      }
      const decoded = decode(value, expected);
      if (!decoded.ok) {
        throw new Error(`wal: replay stopped at seq ${expected}: corrupt record (${decoded.reason})`);
      }
      yield decoded.record;
      expected++;
    }
  }

  lastSeq(): number {
    for (const key of this.dbs.wal.getKeys({ reverse: true, limit: 1 })) {
      if (!Number.isSafeInteger(key) || key < 1) throw new Error(`wal: last key is not a sequence number: ${String(key)}`);
      return key;
    }
    return 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.dbs.env.close();
  }
}
