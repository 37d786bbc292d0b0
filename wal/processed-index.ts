// The processed set's seq index: the `processed_seq` database maps each processed-set
// entry's seq to its key (wal/processed-key.ts). Every writer of an entry writes its index entry in
// the same LMDB transaction (putProcessed), and the retention deletes both together
// (wal/processed-prune.ts), so a retention pass reads only the entries at or below its horizon, in
// seq order: its work follows what it prunes, not the size of the set, which with a week's
// retention is hundreds of millions of entries.
//
// An environment written before the index existed carries no `processedSeqIndex` mark in `meta`;
// openWal builds its index once (ensureProcessedIndex), in bounded transactions, and sets the mark
// last, so a crash during the build only means it is done again (every put is idempotent).

import { PROCESSED_INDEX_BUILD_ENTRIES } from '../src/limits.js';
import { decodeProcessed } from './codec.js';
import type { WalDatabases } from './databases.js';
import { decodeMetaSeq, encodeMetaSeq } from './meta.js';
import { opKeyOfProcessedKey } from './processed-key.js';

/** The `meta` key saying the seq index holds every processed-set entry; its value is the index's version. */
export const PROCESSED_INDEX_KEY = 'processedSeqIndex';
const PROCESSED_INDEX_VERSION = 1;

/** Queues one processed-set entry and its index entry; call inside the transaction or batch that writes the entry. */
export function putProcessed(dbs: Pick<WalDatabases, 'processed' | 'processedSeq'>, key: Buffer, bytes: Buffer, seq: number): void {
  void dbs.processed.put(key, bytes);
  void dbs.processedSeq.put(seq, key);
}

/** The lowest seq of a live processed-set entry, or null when the set is empty. */
export function oldestProcessedSeq({ processedSeq }: Pick<WalDatabases, 'processedSeq'>): number | null {
  for (const key of processedSeq.getKeys({ limit: 1 })) {
    if (!Number.isSafeInteger(key) || key < 1) throw new Error(`wal: processed seq index key ${String(key)} is not a seq`);
    return key;
  }
  return null;
}

/**
 * Builds the seq index of an environment that has none yet (written before it existed), then marks
 * it built; a no-op once marked. Returns how many entries it indexed.
 */
export function ensureProcessedIndex(dbs: WalDatabases): number {
  const mark = dbs.meta.getBinary(PROCESSED_INDEX_KEY);
  if (mark !== undefined) {
    const version = decodeMetaSeq(mark, PROCESSED_INDEX_KEY);
    if (version !== PROCESSED_INDEX_VERSION)
      throw new Error(`wal: the processed seq index is of version ${version}, not ${PROCESSED_INDEX_VERSION}`);
    return 0;
  }
  let indexed = 0;
  let from: Buffer | null = null;
  for (;;) {
    const page: { key: Buffer; seq: number }[] = [];
    let next: Buffer | null = null;
    const range = dbs.processed.getRange(
      from === null ? { limit: PROCESSED_INDEX_BUILD_ENTRIES + 1 } : { start: from, limit: PROCESSED_INDEX_BUILD_ENTRIES + 1 },
    );
    for (const { key, value } of range) {
      if (page.length === PROCESSED_INDEX_BUILD_ENTRIES) {
        next = Buffer.from(key);
        break;
      }
      const opKey = opKeyOfProcessedKey(key);
      if (opKey === null) throw new Error(`wal: processed key ${Buffer.from(key).toString('hex')} names no operation`);
      const decoded = decodeProcessed(value, opKey);
      if (!decoded.ok) throw new Error(`wal: processed entry ${opKey} is corrupt: ${decoded.reason}`);
      page.push({ key: Buffer.from(key), seq: decoded.record.seq });
    }
    if (page.length > 0)
      dbs.env.transactionSync(() => {
        for (const entry of page) void dbs.processedSeq.put(entry.seq, entry.key);
      });
    indexed += page.length;
    if (next === null) break;
    from = next;
  }
  dbs.meta.putSync(PROCESSED_INDEX_KEY, encodeMetaSeq(PROCESSED_INDEX_VERSION));
  return indexed;
}
