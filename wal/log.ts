// UBSCore's write-ahead log in LMDB: the `wal` database (a block's last sequence number → the
// block of records of one group commit, wal/block.ts) and the `processed` database (op code and
// key, wal/processed-key.ts → the operation's own encoded record, the same bytes as in its block), written
// together in one LMDB transaction per batch, so the processed set can never disagree with the log;
// the `processed_seq` database indexes the processed set by seq (wal/processed-index.ts), written
// in the same transaction.
// The `meta` database names the format version; a directory of another version is refused.
//
// Once a snapshot at seq S is durable (wal/snapshot-store.ts, the `snapshot` database), records 1..S
// are pruned from `wal` in bounded transactions, and the `meta` database remembers how far
// (`walPrunedThroughSeq`), so the log's last sequence number and its continuity checks still hold
// when it no longer starts at 1, or holds no record at all. The processed set lives in its own
// database, so a repeated (req_id, op) is answered as a duplicate whatever snapshots and pruning
// have removed from `wal`; its entries go only by the retention (`pruneProcessed`), once
// the layers above prove their command can never come again.

import * as lmdb from 'lmdb';
import type { RootDatabase } from 'lmdb';
import type { OpRecord, ReplayRecord, WalRecord } from '../src/domain/spot-records.js';
import { readBlockHeader, walkRecords } from './block.js';
import type { WalBatch } from './block.js';
import { RecordReader, decode, decodeProcessed } from './codec.js';
import type { SnapshotKey, WalDatabases } from './databases.js';
import { PRUNED_THROUGH_KEY, checkFormatVersion, decodeMetaSeq, encodeMetaSeq } from './meta.js';
import { processedKeyOf } from './processed-key.js';
import { ensureProcessedIndex, oldestProcessedSeq, putProcessed } from './processed-index.js';
import { scanProcessed, type ProcessedPruneStep } from './processed-prune.js';

/**
 * Environment options, every durability-relevant one explicit. With `overlappingSync` off and
 * neither `noSync` nor `noMetaSync`, LMDB's `mdb_txn_commit` fsyncs the data pages and then
 * writes the meta page through the O_DSYNC descriptor before it returns, and lmdb-js resolves a
 * write's promise only after the commit returned. So a resolved promise means durable. With
 * `overlappingSync` (lmdb-js's default on Linux) the promise would resolve at commit, before the
 * flush, which is exactly the reply-before-durability bug the actor must never have.
 */
const WAL_ENV_OPTIONS = {
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
  // wal, processed, processed_seq, snapshot and meta, with room to add one without touching every open.
  maxDbs: 8,
} as const;

const WAL_DB_NAME = 'wal';
const PROCESSED_DB_NAME = 'processed';
const PROCESSED_SEQ_DB_NAME = 'processed_seq';
const SNAPSHOT_DB_NAME = 'snapshot';
const META_DB_NAME = 'meta';

export type WalLog = {
  /** Writes a batch in one LMDB transaction; resolves only once it is durable on disk. */
  appendBatch(batch: WalBatch): Promise<void>;
  /** The durable processed-set entry for `opKey`. Throws on a corrupt entry (fatal corruption). */
  getProcessed(opKey: string): OpRecord | undefined;
  /** How many processed-set entries are durable (LMDB keeps the count; nothing is read). */
  processedCount(): number;
  /** The seq of the oldest durable processed-set entry, or null when there is none (one index read). */
  oldestProcessedSeq(): number | null;
  /**
   * Every record from `fromSeq` (default 1) in order; throws an Error naming the first bad or
   * missing sequence number, after yielding every record before it. For tests and tools: it
   * reads the whole log into memory first.
   */
  replay(fromSeq?: number): Iterable<WalRecord>;
  /**
   * Replay's fast path: hands every record from `fromSeq` in order to `apply` as one reused
   * object (valid only during the call), with the same checks as `replay`; returns the count.
   */
  replayInto(fromSeq: number, apply: (record: ReplayRecord) => void): number;
  /** The highest sequence number appended: the last record on disk, or the pruned-through seq. */
  lastSeq(): number;
  /**
   * The first record still on disk, or null when the log holds none. Pruning deletes whole blocks,
   * so records up to the pruned-through seq may remain in the first block; replay skips them.
   */
  firstSeq(): number | null;
  /** Every record up to this one was deliberately deleted after a durable snapshot; 0 for none. */
  prunedThroughSeq(): number;
  /**
   * Deletes the blocks after `prunedThroughSeq()` that end by `throughSeq`, about `recordsMax`
   * records of them (at least one block), in one transaction that also moves the pruned-through
   * mark; resolves the new mark once durable. The caller prunes only records a durable snapshot
   * covers, and calls again until the mark reaches `throughSeq`.
   */
  pruneThrough(throughSeq: number, recordsMax: number): Promise<number>;
  /**
   * One step of a processed-set retention pass (wal/processed-prune.ts): reads, in seq order, up to
   * `entriesMax` entries with seq from `fromSeq` to `throughSeq`, and deletes, in one transaction,
   * those `keep(opKey)` does not keep; resolves once durable. Throws before deleting anything if an
   * entry does not decode. Steps never overlap.
   */
  pruneProcessed(fromSeq: number, entriesMax: number, throughSeq: number, keep: (opKey: string) => boolean): Promise<ProcessedPruneStep>;
  /** The LMDB databases, for the snapshot store that shares this environment. */
  readonly databases: WalDatabases;
  close(): Promise<void>;
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
  const processed = env.openDB<Buffer, Buffer>({ name: PROCESSED_DB_NAME, encoding: 'binary', keyEncoding: 'binary' });
  const processedSeq = env.openDB<Buffer, number>({ name: PROCESSED_SEQ_DB_NAME, encoding: 'binary' });
  const snapshot = env.openDB<Buffer, SnapshotKey>({ name: SNAPSHOT_DB_NAME, encoding: 'binary' });
  const meta = env.openDB<Buffer, string>({ name: META_DB_NAME, encoding: 'binary' });
  return { env, wal, processed, processedSeq, snapshot, meta };
}

export function openWal(dir: string): WalLog {
  const databases = openWalDatabases(dir);
  try {
    checkFormatVersion(databases, dir);
    ensureProcessedIndex(databases);
  } catch (error) {
    void databases.env.close();
    throw error;
  }
  return new LmdbWal(databases);
}

function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Checks and uses one record of the log, buf[start, end) at `seq`; returns null, or why it is refused. */
type RecordVisitor = (buf: Buffer, start: number, end: number, seq: number) => string | null;

class LmdbWal implements WalLog {
  /** The last sequence number handed to `appendBatch`: the next batch must continue it. */
  private appendedSeq: number;
  /** The durable pruned-through mark, cached: this object is its only writer. */
  private prunedThrough: number;
  /** True while a prune transaction is in flight: prunes never overlap. */
  private pruning = false;
  private closed = false;

  constructor(readonly databases: WalDatabases) {
    this.prunedThrough = this.readPrunedThrough();
    this.appendedSeq = this.lastSeq();
  }

  appendBatch(batch: WalBatch): Promise<void> {
    if (this.closed) throw new Error('wal: append after close');
    if (batch.firstSeq !== this.appendedSeq + 1) throw new Error(`wal: batch seq ${batch.firstSeq} does not continue ${this.appendedSeq}`);
    // Pair assertion: every block header is checked where it is written, as replay checks it.
    let next = batch.firstSeq;
    for (const block of batch.blocks) {
      const header = readBlockHeader(block.bytes, block.lastSeq);
      if (!header.ok) throw new Error(`wal: the block ending at seq ${block.lastSeq} does not verify: ${header.reason}`);
      if (header.record.firstSeq !== next) throw new Error(`wal: block seq ${header.record.firstSeq} does not continue ${next - 1}`);
      next = block.lastSeq + 1;
    }
    if (next - 1 !== batch.lastSeq) throw new Error(`wal: the blocks of the batch end at seq ${next - 1}, not ${batch.lastSeq}`);
    this.appendedSeq = batch.lastSeq;
    const { env, wal } = this.databases;
    // `batch` queues the puts as one conditional block for lmdb-js's write thread, which does
    // the B-tree work off this thread. A block is never split across transactions: the native
    // writer waits for the rest of an open block instead of committing (src/writer.cpp,
    // NO_INSTRUCTION_YET with conditionDepth > 0). Its promise settles after the synced commit.
    // LMDB reads the values in place until then: the batch's bytes must not change meanwhile.
    return env
      .batch(() => {
        for (const block of batch.blocks) void wal.put(block.lastSeq, block.bytes);
        for (const entry of batch.processed) putProcessed(this.databases, entry.key, entry.bytes, entry.seq);
      })
      .then((written) => {
        if (!written) throw new Error(`wal: the batch ending at seq ${batch.lastSeq} was not written`);
      });
  }

  getProcessed(opKey: string): OpRecord | undefined {
    const key = processedKeyOf(opKey);
    if (key === null) throw new Error(`wal: ${opKey} names no processed-set entry`);
    // The fast buffer is only valid until the next read; decode copies every field out of it.
    const bytes = this.databases.processed.getBinaryFast(key);
    if (bytes === undefined) return undefined;
    const decoded = decodeProcessed(bytes, opKey);
    if (!decoded.ok) throw new Error(`wal: processed entry ${opKey} is corrupt: ${decoded.reason}`);
    return decoded.record;
  }

  processedCount(): number {
    // lmdb-js types getStats() as {}; it returns LMDB's mdb_stat, entryCount included.
    const count = (this.databases.processed.getStats() as { entryCount?: unknown }).entryCount;
    if (typeof count !== 'number' || !Number.isSafeInteger(count))
      throw new Error('wal: LMDB reported no entry count for the processed set');
    return count;
  }

  oldestProcessedSeq(): number | null {
    return oldestProcessedSeq(this.databases);
  }

  /**
   * Visits every record from `fromSeq` in order, and checks the framing on the way: each block's
   * header against its key, each block continuing the one before, and its records filling it
   * (walkRecords). The first block may start before `fromSeq`, since pruning deletes whole
   * blocks. Throws an Error naming the first seq it cannot read; returns the records visited.
   */
  private walk(fromSeq: number, visit: RecordVisitor): number {
    if (!Number.isSafeInteger(fromSeq) || fromSeq < 1) throw new Error(`wal: replay from an invalid seq ${fromSeq}`);
    if (fromSeq <= this.prunedThrough) {
      throw new Error(`wal: replay from seq ${fromSeq} asked, but records through ${this.prunedThrough} were pruned`);
    }
    let expected = fromSeq;
    for (const { key, value } of this.databases.wal.getRange({ start: fromSeq })) {
      const buf = asBuffer(value);
      const header = Number.isSafeInteger(key)
        ? readBlockHeader(buf, key)
        : { ok: false as const, reason: `key ${String(key)} is not a sequence number` };
      if (!header.ok) throw new Error(`wal: replay stopped at seq ${expected}: corrupt block (${header.reason})`);
      const { firstSeq } = header.record;
      if (expected === fromSeq ? firstSeq > fromSeq : firstSeq !== expected) {
        throw new Error(`wal: replay stopped at seq ${expected}: found the block of seqs ${firstSeq}..${key} instead`);
      }
      const failure = walkRecords(buf, header.record, fromSeq, (start, end, seq) => visit(buf, start, end, seq));
      if (failure !== null) throw new Error(`wal: replay stopped at seq ${failure.seq}: ${failure.reason}`);
      expected = key + 1;
    }
    return expected - fromSeq;
  }

  replayInto(fromSeq: number, apply: (record: ReplayRecord) => void): number {
    const reader = new RecordReader();
    return this.walk(fromSeq, (buf, start, end, seq) => {
      const record = reader.read(buf, start, end, seq);
      if (record === null) return reader.reason;
      apply(record);
      return null;
    });
  }

  *replay(fromSeq = 1): Generator<WalRecord> {
    const records: WalRecord[] = [];
    let failure: unknown = null;
    try {
      this.walk(fromSeq, (buf, start, end, seq) => {
        const decoded = decode(buf.subarray(start, end), seq);
        if (!decoded.ok) return decoded.reason;
        records.push(decoded.record);
        return null;
      });
    } catch (error) {
      failure = error;
    }
    yield* records;
    if (failure !== null) throw failure;
  }

  lastSeq(): number {
    for (const key of this.databases.wal.getKeys({ reverse: true, limit: 1 })) {
      if (!Number.isSafeInteger(key) || key < 1) throw new Error(`wal: last key is not a sequence number: ${String(key)}`);
      // A block ending at or below the mark would be one that pruning deleted and something rewrote.
      if (key <= this.prunedThrough) throw new Error(`wal: last key ${key} is not above the pruned-through seq ${this.prunedThrough}`);
      return key;
    }
    return this.prunedThrough;
  }

  firstSeq(): number | null {
    for (const { key, value } of this.databases.wal.getRange({ limit: 1 })) {
      const header = readBlockHeader(asBuffer(value), key);
      if (!header.ok) throw new Error(`wal: the first block, ending at seq ${key}, is corrupt: ${header.reason}`);
      return header.record.firstSeq;
    }
    return null;
  }

  prunedThroughSeq(): number {
    return this.prunedThrough;
  }

  async pruneThrough(throughSeq: number, recordsMax: number): Promise<number> {
    if (this.closed) throw new Error('wal: prune after close');
    if (this.pruning) throw new Error('wal: a prune is already in flight');
    if (!Number.isSafeInteger(recordsMax) || recordsMax < 1)
      throw new Error(`wal: recordsMax must be a positive integer, got ${recordsMax}`);
    if (!Number.isSafeInteger(throughSeq) || throughSeq > this.appendedSeq) {
      throw new Error(`wal: prune through ${throughSeq} asked, only ${this.appendedSeq} appended`);
    }
    if (throughSeq <= this.prunedThrough) return this.prunedThrough;
    const { keys, mark } = this.blocksToPrune(throughSeq, recordsMax);
    const { env, wal, meta } = this.databases;
    this.pruning = true;
    try {
      const written = await env.batch(() => {
        for (const key of keys) void wal.remove(key);
        void meta.put(PRUNED_THROUGH_KEY, encodeMetaSeq(mark));
      });
      if (!written) throw new Error(`wal: the prune through seq ${mark} was not written`);
      this.prunedThrough = mark;
      return mark;
    } finally {
      this.pruning = false;
    }
  }

  /**
   * The keys of the blocks ending by `throughSeq`, about `recordsMax` records' worth, and the mark
   * once they are gone: `throughSeq` when none such is left (a block that ends later stays, and
   * replay skips its records up to the mark), else the last deleted block's end.
   */
  private blocksToPrune(throughSeq: number, recordsMax: number): { keys: number[]; mark: number } {
    const keys: number[] = [];
    let previous = this.prunedThrough;
    for (const key of this.databases.wal.getKeys({ start: this.prunedThrough + 1, end: throughSeq + 1 })) {
      if (keys.length > 0 && key - this.prunedThrough > recordsMax) return { keys, mark: previous };
      keys.push(key);
      previous = key;
    }
    return { keys, mark: throughSeq };
  }

  pruneProcessed(fromSeq: number, entriesMax: number, throughSeq: number, keep: (opKey: string) => boolean): Promise<ProcessedPruneStep> {
    if (this.closed) throw new Error('wal: prune after close');
    if (this.pruning) throw new Error('wal: a prune is already in flight');
    const { doomed, unindexed, next, scanned, oldestKeptSeq } = scanProcessed(this.databases, fromSeq, entriesMax, throughSeq, keep);
    const step = { next, scanned, pruned: doomed.length, oldestKeptSeq };
    if (doomed.length === 0 && unindexed.length === 0) return Promise.resolve(step);
    const { env, processed, processedSeq } = this.databases;
    this.pruning = true;
    return env
      .batch(() => {
        for (const entry of doomed) {
          void processed.remove(entry.key);
          void processedSeq.remove(entry.seq);
        }
        for (const seq of unindexed) void processedSeq.remove(seq);
      })
      .then(
        (written) => {
          this.pruning = false;
          if (!written) throw new Error('wal: a processed-set prune step was not written');
          return step;
        },
        (error: unknown) => {
          this.pruning = false;
          throw error;
        },
      );
  }

  private readPrunedThrough(): number {
    const bytes = this.databases.meta.getBinary(PRUNED_THROUGH_KEY);
    return bytes === undefined ? 0 : decodeMetaSeq(bytes, PRUNED_THROUGH_KEY);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.databases.env.close();
  }
}
