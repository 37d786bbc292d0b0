// WAL blocks read back from a copy of the log (PostgreSQL's spot_log, src/ubscore/spot-log/store.ts): the
// stored bytes are exactly the `wal` entries UBSCore wrote, so they are verified here as replay
// verifies LMDB's (each header against its key, every record's checksum, the records filling the
// block) and as a sequence (each block continuing the one before), and turned back into the
// processed-set entries and WalBatch that UBSCore's group commit built from them. A block that
// fails any check is refused naming its seq: a log with a hole or a damaged row is never applied.

import type { WalRecord } from '../src/domain/spot-records.js';
import { readBlockHeader, walkRecords } from './block.js';
import type { ProcessedWrite, WalBatch } from './block.js';
import { decode } from './codec.js';
import { PROCESSED_KEY_BYTES_MAX, writeProcessedKey } from './processed-key.js';

/** A block as a copy of the log holds it: keyed by its last seq, the bytes of LMDB's `wal` entry. */
export type StoredBlock = { readonly firstSeq: number; readonly lastSeq: number; readonly bytes: Buffer };

/** One processed-set entry of a block: its LMDB key, the op's record (a view of the block) and the record's seq. */
export type BlockEntry = { readonly key: Buffer; readonly record: Buffer; readonly seq: number };

/** A stored block that does not verify, or does not continue the log: never applied. */
export class BlockRefused extends Error {
  override readonly name = 'BlockRefused';
  constructor(
    readonly seq: number,
    reason: string,
  ) {
    super(`wal: the stored block ending at seq ${seq} is refused: ${reason}`);
  }
}

/**
 * Verifies one stored block whole (header, every record, nothing after the last) and returns its
 * records with their processed-set entries (every op record has one, as UBSCore's group commit
 * writes them); throws BlockRefused naming the block.
 */
export function readStoredBlock(block: StoredBlock): { readonly records: WalRecord[]; readonly entries: BlockEntry[] } {
  const header = readBlockHeader(block.bytes, block.lastSeq);
  if (!header.ok) throw new BlockRefused(block.lastSeq, header.reason);
  if (header.record.firstSeq !== block.firstSeq)
    throw new BlockRefused(block.lastSeq, `its header starts at seq ${header.record.firstSeq}, its row at ${block.firstSeq}`);
  const records: WalRecord[] = [];
  const entries: BlockEntry[] = [];
  const failure = walkRecords(block.bytes, header.record, header.record.firstSeq, (start, end, seq) => {
    const record = block.bytes.subarray(start, end);
    const decoded = decode(record, seq);
    if (!decoded.ok) return decoded.reason;
    records.push(decoded.record);
    if (decoded.record.kind === 'op') entries.push({ key: keyOf(decoded.record.op, decoded.record.key), record, seq });
    return null;
  });
  if (failure !== null) throw new BlockRefused(block.lastSeq, `at seq ${failure.seq}: ${failure.reason}`);
  return { records, entries };
}

function keyOf(op: Parameters<typeof writeProcessedKey>[0], key: string): Buffer {
  const buf = Buffer.allocUnsafe(PROCESSED_KEY_BYTES_MAX);
  return buf.subarray(0, writeProcessedKey(op, key, buf, 0));
}

/**
 * What is wrong with a block that should start at seq `expected` and does not, naming the seqs:
 * those missing before it (a hole), or those it holds again (an overlap, a fork).
 */
export function missingOrOverlap(block: { readonly firstSeq: number; readonly lastSeq: number }, expected: number): string {
  if (block.firstSeq > expected) return `seqs ${expected}..${block.firstSeq - 1} are missing`;
  return `it overlaps seqs ${block.firstSeq}..${Math.min(expected - 1, block.lastSeq)}`;
}

/** The processed-set entries of one stored block, verified whole (for the archive and a rebuild). */
export function blockEntries(block: StoredBlock): BlockEntry[] {
  return readStoredBlock(block).entries;
}

/**
 * Stored blocks that continue a log ending at `afterSeq`, as the WalBatch UBSCore's group commit
 * built from them, for `WalLog.appendBatch`: each verified whole and each continuing the one
 * before, or BlockRefused names the first that does not (a hole, an overlap, a damaged block).
 */
export function batchOfBlocks(blocks: readonly StoredBlock[], afterSeq: number): WalBatch {
  const first = blocks[0];
  if (first === undefined) throw new Error('wal: a batch of no stored blocks');
  let next = afterSeq + 1;
  const processed: ProcessedWrite[] = [];
  for (const block of blocks) {
    if (block.firstSeq !== next)
      throw new BlockRefused(
        block.lastSeq,
        `it starts at seq ${block.firstSeq} where seq ${next} was expected: ${missingOrOverlap(block, next)}`,
      );
    for (const entry of readStoredBlock(block).entries) processed.push({ key: entry.key, bytes: entry.record, seq: entry.seq });
    next = block.lastSeq + 1;
  }
  return {
    firstSeq: first.firstSeq,
    lastSeq: next - 1,
    blocks: blocks.map((block) => ({ lastSeq: block.lastSeq, bytes: block.bytes })),
    processed,
  };
}
