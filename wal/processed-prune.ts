// One step of the retention over the processed set: read, in seq order through the seq index
// (`processed_seq`, wal/processed-index.ts), a bounded run of entries at or below the horizon, and
// pick the ones that may go. So a pass reads the entries it prunes and the few it keeps, never the
// live set above the horizon. Reading is done here, on the caller's thread; the deletes then go in
// one LMDB transaction (wal/log.ts `pruneProcessed`). An entry is picked only if it decodes,
// carries the seq its index entry names, and the caller does not keep it; anything else stays, so
// a step never deletes what it could not read. An index entry whose processed entry is gone, or
// carries another seq, indexes nothing: it goes alone (`unindexed`), and no entry with it.

import type { WalDatabases } from './databases.js';
import { decodeProcessed } from './codec.js';
import { opKeyOfProcessedKey } from './processed-key.js';

/** What one step read: the entries to delete, index entries that index nothing, where the next step starts (null: the end), and the oldest seq it left. */
export type ProcessedScan = {
  readonly doomed: readonly { readonly key: Buffer; readonly seq: number }[];
  readonly unindexed: readonly number[];
  readonly next: number | null;
  readonly scanned: number;
  readonly oldestKeptSeq: number | null;
};

/** What one step did, once its transaction is durable. */
export type ProcessedPruneStep = {
  /** The seq the next step reads from; null: the pass reached its horizon. */
  readonly next: number | null;
  readonly scanned: number;
  readonly pruned: number;
  readonly oldestKeptSeq: number | null;
};

/**
 * Reads up to `entriesMax` index entries with seq from `fromSeq` through `throughSeq` and returns
 * the entries for which `keep(opKey)` is false. `keep` is asked with the ledger's name of the entry
 * (`${op}:${key}`). Throws, having picked nothing, on an entry that does not decode: a corrupt
 * processed set is not the pruner's to repair.
 */
export function scanProcessed(
  { processed, processedSeq }: Pick<WalDatabases, 'processed' | 'processedSeq'>,
  fromSeq: number,
  entriesMax: number,
  throughSeq: number,
  keep: (opKey: string) => boolean,
): ProcessedScan {
  if (!Number.isSafeInteger(entriesMax) || entriesMax < 1) throw new Error(`wal: entriesMax must be a positive integer, got ${entriesMax}`);
  if (!Number.isSafeInteger(throughSeq) || throughSeq < 0) throw new Error(`wal: throughSeq must be a seq, got ${throughSeq}`);
  if (!Number.isSafeInteger(fromSeq) || fromSeq < 0) throw new Error(`wal: fromSeq must be a seq, got ${fromSeq}`);
  const doomed: { key: Buffer; seq: number }[] = [];
  const unindexed: number[] = [];
  let scanned = 0;
  let next: number | null = null;
  let oldestKeptSeq: number | null = null;
  // One more than the step reads: its seq is where the next step starts. The loop runs to the
  // end of the range or breaks, and either way lmdb-js ends the range's read transaction.
  for (const { key: seq, value } of processedSeq.getRange({ start: fromSeq, end: throughSeq + 1, limit: entriesMax + 1 })) {
    if (scanned === entriesMax) {
      next = seq;
      break;
    }
    scanned++;
    // A copy: the read below may reuse the buffer a range value lives in.
    const key = Buffer.from(value);
    const opKey = opKeyOfProcessedKey(key);
    if (opKey === null) throw new Error(`wal: the processed seq index names no operation at seq ${seq}`);
    // The fast buffer is valid until the next read: decoded (copied out) before it.
    const bytes = processed.getBinaryFast(key);
    const decoded = bytes === undefined ? null : decodeProcessed(bytes, opKey);
    if (decoded !== null && !decoded.ok) throw new Error(`wal: processed entry ${opKey} is corrupt: ${decoded.reason}`);
    if (decoded === null || decoded.record.seq !== seq) {
      unindexed.push(seq);
    } else if (keep(opKey)) {
      if (oldestKeptSeq === null) oldestKeptSeq = seq;
    } else {
      doomed.push({ key, seq });
    }
  }
  return { doomed, unindexed, next, scanned, oldestKeptSeq };
}
