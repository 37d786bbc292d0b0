// The five LMDB databases of UBSCore's environment, typed once beneath everything that opens or
// reads them (wal/log.ts opens them; wal/meta.ts and wal/snapshot-store.ts read them).

import type { Database, RootDatabase } from 'lmdb';

/** Snapshot keys: [seq, 0] is a snapshot's header, [seq, i] for i >= 1 its i-th chunk. */
export type SnapshotKey = [seq: number, part: number];

export type WalDatabases = {
  readonly env: RootDatabase<Buffer, string>;
  readonly wal: Database<Buffer, number>;
  /** Keyed by wal/processed-key.ts: the op's code, then the key. */
  readonly processed: Database<Buffer, Buffer>;
  /** Each processed-set entry's seq → its key (wal/processed-index.ts), written with the entry. */
  readonly processedSeq: Database<Buffer, number>;
  readonly snapshot: Database<Buffer, SnapshotKey>;
  readonly meta: Database<Buffer, string>;
};
