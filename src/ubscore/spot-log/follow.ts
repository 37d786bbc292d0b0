// A standby's UBSCore follows the owner's log: the blocks the owner wrote to
// PostgreSQL's spot_log, bytes exactly as its LMDB holds them, are verified here (each header and
// record checksum, and seq continuity from this core's last seq), then written to this core's LMDB
// as the owner's group commit wrote them (the same blocks, the same processed entries) and applied
// to RAM as replay applies them. So a standby's DATA_DIR is, byte for byte, the owner's.

import type { OpRecord, WalRecord } from '../../domain/spot-records.js';
import { opKeyOf } from '../../domain/spot-records.js';
import type { UbsFollowOutcome } from '../control.js';
import type { LogBlock } from './store.js';
import { readBlockHeader, walkRecords, type ProcessedWrite, type WalBatch } from '../../../wal/block.js';
import { decode } from '../../../wal/codec.js';
import { PROCESSED_KEY_BYTES_MAX, writeProcessedKey } from '../../../wal/processed-key.js';
import { missingOrOverlap } from '../../../wal/import.js';
import type { CoreState } from '../state.js';

/** What a follow call will write and apply: nothing is applied unless every block verified. */
export type FollowPlan = {
  readonly kind: 'plan';
  /** Null when every block was already held. */
  readonly batch: WalBatch | null;
  readonly records: readonly WalRecord[];
  readonly skippedBlocks: number;
};

/** A decoded record and its bytes inside its block (what its processed entry holds). */
type Decoded = { readonly record: WalRecord; readonly bytes: Buffer };

type Refusal = Exclude<UbsFollowOutcome, { kind: 'applied' }>;

/**
 * Comlink hands a Buffer over as a plain Uint8Array (a structured clone): the bytes are viewed
 * as a Buffer again, without a copy.
 */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Whether a block the core already holds is the same one: the bytes under its key, or a pruned block (checked at its start-up reconciliation). */
function heldBlockProblem(state: CoreState, block: LogBlock, bytes: Buffer): string | null {
  if (block.lastSeq <= state.log.prunedThroughSeq()) return null;
  const held = state.log.databases.wal.getBinary(block.lastSeq);
  if (held === undefined) return `no local block ends at seq ${block.lastSeq}: the two logs are cut differently`;
  return held.equals(bytes) ? null : `the local block ending at seq ${block.lastSeq} holds other bytes`;
}

/** Decodes every record of a block whose header verified; a refusal names the first bad seq. */
function decodeBlock(bytes: Buffer, block: LogBlock, into: Decoded[]): string | null {
  const header = readBlockHeader(bytes, block.lastSeq);
  if (!header.ok) return `the block ending at seq ${block.lastSeq}: ${header.reason}`;
  if (header.record.firstSeq !== block.firstSeq)
    return `the block ending at seq ${block.lastSeq} starts at seq ${header.record.firstSeq}, its row says ${block.firstSeq}`;
  const failure = walkRecords(bytes, header.record, header.record.firstSeq, (start, end, seq) => {
    const decoded = decode(bytes.subarray(start, end), seq);
    if (!decoded.ok) return decoded.reason;
    into.push({ record: decoded.record, bytes: bytes.subarray(start, end) });
    return null;
  });
  return failure === null ? null : `seq ${failure.seq}: ${failure.reason}`;
}

/**
 * Verifies `blocks` (in order) against the core's log and plans their write. Blocks ending at or
 * before the core's last seq must be the ones it holds; the first new one must start right after
 * it, and each next one right after the one before. Never throws on bad bytes.
 */
export function planFollow(state: CoreState, blocks: readonly LogBlock[]): FollowPlan | Refusal {
  const lastSeq = state.ledger.lastSeq;
  let next = lastSeq + 1;
  let skippedBlocks = 0;
  const fresh: { readonly lastSeq: number; readonly bytes: Buffer }[] = [];
  const records: Decoded[] = [];
  for (const block of blocks) {
    const bytes = asBuffer(block.bytes);
    if (block.lastSeq <= lastSeq && fresh.length === 0) {
      const header = readBlockHeader(bytes, block.lastSeq);
      if (!header.ok) return { kind: 'corrupt', lastSeq, reason: `the block ending at seq ${block.lastSeq}: ${header.reason}` };
      const problem = heldBlockProblem(state, block, bytes);
      if (problem !== null) return { kind: 'divergent', lastSeq, reason: problem };
      skippedBlocks++;
      continue;
    }
    if (block.firstSeq !== next)
      return {
        kind: 'gap',
        lastSeq,
        reason: `the block of seqs ${block.firstSeq}..${block.lastSeq} does not continue seq ${next - 1}: ${missingOrOverlap(block, next)}`,
      };
    const problem = decodeBlock(bytes, block, records);
    if (problem !== null) return { kind: 'corrupt', lastSeq, reason: problem };
    fresh.push({ lastSeq: block.lastSeq, bytes });
    next = block.lastSeq + 1;
  }
  if (fresh.length === 0) return { kind: 'plan', batch: null, records: [], skippedBlocks };
  const batch: WalBatch = { firstSeq: lastSeq + 1, lastSeq: next - 1, blocks: fresh, processed: processedOf(records) };
  return { kind: 'plan', batch, records: records.map((d) => d.record), skippedBlocks };
}

/**
 * The processed entries of the records, as the owner's BatchEncoder wrote them: for every
 * operation record, its key (wal/processed-key.ts) and the record's own bytes in its block.
 */
function processedOf(records: readonly Decoded[]): ProcessedWrite[] {
  const ops = records.filter((d) => d.record.kind === 'op');
  const keys = Buffer.allocUnsafeSlow(PROCESSED_KEY_BYTES_MAX * ops.length);
  let keysUsed = 0;
  return ops.map(({ record, bytes }) => {
    const op = record as OpRecord;
    const keyStart = keysUsed;
    keysUsed = writeProcessedKey(op.op, op.key, keys, keyStart);
    return { key: keys.subarray(keyStart, keysUsed), bytes, seq: op.seq };
  });
}

/**
 * Applies the planned records to RAM and to the processed set's open batch, as replay and a
 * decision would. A throw here means the log breaks the ledger's rules: the caller stops.
 */
export function applyFollowed(state: CoreState, records: readonly WalRecord[]): void {
  for (const record of records) {
    state.ledger.applyRecord(record);
    if (record.kind === 'op') state.processed.add(opKeyOf(record.op, record.key), record as OpRecord);
  }
}
