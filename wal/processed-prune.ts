// One step of issue 29's retention over the processed set (`processed` database, keyed by
// wal/processed-key.ts): read a bounded run of entries from a key on, and pick the ones that may
// go. Reading is done here, on the caller's thread; the deletes then go in one LMDB transaction
// (wal/log.ts `pruneProcessed`). An entry is picked only if it decodes, carries a seq at or below
// the horizon, and the caller does not keep it; anything else stays, so a step never deletes
// what it could not read.

import type { Database } from 'lmdb';
import { decodeProcessed } from './codec.js';
import { opKeyOfProcessedKey } from './processed-key.js';

/** What one step read: the keys to delete, where the next step starts (null: the end), and the oldest seq it left. */
export type ProcessedScan = {
  readonly doomed: readonly Buffer[];
  readonly next: Buffer | null;
  readonly scanned: number;
  readonly oldestKeptSeq: number | null;
};

/** What one step did, once its transaction is durable. */
export type ProcessedPruneStep = {
  readonly next: Buffer | null;
  readonly scanned: number;
  readonly pruned: number;
  readonly oldestKeptSeq: number | null;
};

/**
 * Reads up to `entriesMax` entries from `from` (inclusive; null: the first key) and returns
 * those with seq <= `throughSeq` for which `keep(opKey)` is false. `keep` is asked with the
 * ledger's name of the entry (`${op}:${key}`). Throws, having picked nothing, on an entry that
 * does not decode: a corrupt processed set is not the pruner's to repair.
 */
export function scanProcessed(
  processed: Database<Buffer, Buffer>,
  from: Buffer | null,
  entriesMax: number,
  throughSeq: number,
  keep: (opKey: string) => boolean,
): ProcessedScan {
  if (!Number.isSafeInteger(entriesMax) || entriesMax < 1) throw new Error(`wal: entriesMax must be a positive integer, got ${entriesMax}`);
  if (!Number.isSafeInteger(throughSeq) || throughSeq < 0) throw new Error(`wal: throughSeq must be a seq, got ${throughSeq}`);
  const doomed: Buffer[] = [];
  let scanned = 0;
  let next: Buffer | null = null;
  let oldestKeptSeq: number | null = null;
  // One more than the step reads: its key is where the next step starts. The loop runs to the
  // end of the range or breaks, and either way lmdb-js ends the range's read transaction.
  const range = processed.getRange(from === null ? { limit: entriesMax + 1 } : { start: from, limit: entriesMax + 1 });
  for (const { key, value } of range) {
    if (scanned === entriesMax) {
      next = Buffer.from(key);
      break;
    }
    scanned++;
    const opKey = opKeyOfProcessedKey(key);
    if (opKey === null) throw new Error(`wal: processed key ${Buffer.from(key).toString('hex')} names no operation`);
    const decoded = decodeProcessed(value, opKey);
    if (!decoded.ok) throw new Error(`wal: processed entry ${opKey} is corrupt: ${decoded.reason}`);
    const { seq } = decoded.record;
    if (seq <= throughSeq && !keep(opKey)) {
      doomed.push(Buffer.from(key));
    } else if (oldestKeptSeq === null || seq < oldestKeptSeq) {
      oldestKeptSeq = seq;
    }
  }
  return { doomed, next, scanned, oldestKeptSeq };
}
