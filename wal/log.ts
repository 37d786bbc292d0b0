// UBSCore's write-ahead log in LMDB: the `wal` database (sequence number → encoded record) and
// the `processed` database (`${op}:${key}` → the same encoded record), written together in one
// LMDB transaction per batch, so the processed set can never disagree with the log.

import * as lmdb from 'lmdb';
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
  mapAsync: false,
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

// LMDB environment flags that would let a commit return before its data is on disk.
const MDB_OVERLAPPINGSYNC = 0x1000;
const MDB_NOSYNC = 0x10000;
const MDB_NOMETASYNC = 0x40000;
const MDB_MAPASYNC = 0x100000;
const UNDURABLE_FLAGS = MDB_OVERLAPPINGSYNC | MDB_NOSYNC | MDB_NOMETASYNC | MDB_MAPASYNC;

/**
 * Asserts the flags the environment really has. lmdb-js shares one environment per path within
 * a process, and a second `open` of a path silently keeps the first one's flags (verified with
 * lmdb 3.5.6: a path first opened with defaults stays overlappingSync when reopened with
 * `overlappingSync: false`). The flags are read back through lmdb-js's native addon.
 */
function assertDurableFlags(env: RootDatabase<Buffer, string>, dir: string): void {
  const addon = (lmdb as unknown as { nativeAddon?: { getEnvFlags?: (address: number) => number } }).nativeAddon;
  const address = (env as unknown as { env?: { address?: number } }).env?.address;
  if (addon?.getEnvFlags === undefined || address === undefined) {
    throw new Error('wal: cannot read the LMDB environment flags; recheck durability for this lmdb version');
  }
  const flags = addon.getEnvFlags(address);
  if ((flags & UNDURABLE_FLAGS) !== 0) {
    throw new Error(`wal: ${dir} is open with flags 0x${flags.toString(16)}, which do not sync each commit`);
  }
}

/** Opens the environment and both databases with the WAL's options (tests use it to corrupt one). */
export function openWalDatabases(dir: string): WalDatabases {
  const env = lmdb.open<Buffer, string>({ path: dir, ...WAL_ENV_OPTIONS });
  try {
    assertDurableFlags(env, dir);
  } catch (error) {
    void env.close();
    throw error;
  }
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
    // `batch` queues the puts as one conditional block for lmdb-js's write thread, which does
    // the B-tree work off this thread. A block is never split across transactions: the native
    // writer waits for the rest of an open block instead of committing (src/writer.cpp,
    // NO_INSTRUCTION_YET with conditionDepth > 0). Its promise settles after the synced commit.
    const lastSeq = this.appendedSeq;
    return env
      .batch(() => {
        for (const record of records) void wal.put(record.seq, record.bytes);
        for (const entry of processed) void processedDb.put(entry.opKey, entry.bytes);
      })
      .then((written) => {
        if (!written) throw new Error(`wal: the batch ending at seq ${lastSeq} was not written`);
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
