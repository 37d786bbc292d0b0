// PostgreSQL's SPOT log seeded from a local ledger that predates it (a ledger from before the SPOT
// log in PostgreSQL, or one run with SPOT_LOG=off): afterwards every balance and every processed key must be
// recoverable from PostgreSQL alone. The simplest correct way, in ONE PostgreSQL transaction
// (SpotLogStore.seed, so a crash leaves all of it or none):
// - the newest local snapshot that verifies and covers the pruned records (seq >= the pruned mark);
// - every block still in the local WAL, verified, into spot_log (the first may straddle the mark);
// - EVERY local processed-set entry into spot_processed, not only those of pruned records: the
//   processed set keeps no mark of which records it came from, the entries of the blocks also
//   stored are the same bytes under the same keys, and a rebuild writes both without harm;
// - archived_through_seq = the seq before the first block stored, so a rebuild knows the log before
//   it is gone and the chain of migration 0012 holds from that block: the local pruned mark, or
//   below it when the first block straddles the mark (pruning deletes whole blocks), since every
//   record from that block on is in spot_log. The chain is checked at commit, so the order of the
//   writes inside the transaction does not matter.
// A rebuild then finds what the local start would: the snapshot, every processed key, the records
// after the snapshot.

import { performance } from 'node:perf_hooks';
import { SPOT_LOG_PAGE_BLOCKS, SPOT_PROCESSED_PAGE_ROWS } from '../../limits.js';
import type { WalLog } from '../../../wal/log.js';
import { decodeProcessed } from '../../../wal/codec.js';
import { readBlockHeader } from '../../../wal/block.js';
import { blockEntries, BlockRefused } from '../../../wal/import.js';
import { opKeyOfProcessedKey } from '../../../wal/processed-key.js';
import { SnapshotStore } from '../../../wal/snapshot-store.js';
import type { ArchivedEntry, LogBlock, SeedWriter, SpotLogStore, StoredSnapshot } from './store.js';

export type Seeded = {
  readonly snapshotSeq: number;
  readonly blocks: number;
  readonly processedEntries: number;
  readonly archivedThrough: number;
  readonly ms: number;
};

/** Seeds PostgreSQL (which holds no SPOT ledger) from the local WAL, at the owner's `epoch`. */
export async function seedPostgres(store: SpotLogStore, epoch: number, wal: WalLog): Promise<Seeded> {
  const started = performance.now();
  const pruned = wal.prunedThroughSeq();
  const snapshot = newestLocalSnapshot(wal, pruned);
  if (snapshot === null && pruned > 0)
    throw new Error(`spot log: the local WAL is pruned through seq ${pruned} but no local snapshot covers it: cannot seed PostgreSQL`);
  const first = wal.firstSeq();
  if (first !== null && first > pruned + 1)
    throw new Error(
      `spot log: the local WAL is pruned through seq ${pruned} but its first block starts at seq ${first}: seqs ${pruned + 1}..${first - 1} are missing, cannot seed PostgreSQL`,
    );
  const archivedThrough = first === null ? pruned : first - 1;
  let blocks = 0;
  let processedEntries = 0;
  await store.seed(epoch, async (writer) => {
    if (snapshot !== null) await writer.snapshot(snapshot);
    blocks = await seedBlocks(wal, writer);
    processedEntries = await seedEntries(wal, writer);
    await writer.archivedThrough(archivedThrough);
  });
  return { snapshotSeq: snapshot?.seq ?? 0, blocks, processedEntries, archivedThrough, ms: performance.now() - started };
}

/** The newest local snapshot that verifies whole and covers the pruned records, as stored (header and chunks). */
function newestLocalSnapshot(wal: WalLog, pruned: number): StoredSnapshot | null {
  const snapshots = new SnapshotStore(wal.databases);
  const db = wal.databases.snapshot;
  for (const seq of snapshots.seqs()) {
    if (seq < pruned) return null;
    if (!snapshots.load(seq, () => undefined).ok) continue;
    const header = db.getBinary([seq, 0]);
    if (header === undefined) continue;
    const chunks: Buffer[] = [];
    for (const { value } of db.getRange({ start: [seq, 1], end: [seq + 1, 0] })) chunks.push(value);
    return { seq, header: Buffer.from(header), chunks };
  }
  return null;
}

/** Every block of the local WAL, each verified and continuing the one before, in pages. */
async function seedBlocks(wal: WalLog, writer: SeedWriter): Promise<number> {
  let page: LogBlock[] = [];
  let count = 0;
  let expected: number | null = null;
  for (const { key, value } of wal.databases.wal.getRange({})) {
    const bytes = Buffer.from(value);
    const header = readBlockHeader(bytes, key);
    if (!header.ok) throw new BlockRefused(key, header.reason);
    const { firstSeq } = header.record;
    const block = { firstSeq, lastSeq: key, bytes };
    blockEntries(block); // throws BlockRefused for a damaged block: nothing damaged is copied
    if (expected !== null && firstSeq !== expected)
      throw new Error(`spot log: the local WAL's block ending at seq ${key} starts at ${firstSeq}, not ${expected}: cannot seed`);
    expected = key + 1;
    page.push(block);
    count++;
    if (page.length === SPOT_LOG_PAGE_BLOCKS) {
      await writer.blocks(page);
      page = [];
    }
  }
  await writer.blocks(page);
  return count;
}

/** Every local processed-set entry, each verified against its key, in pages. */
async function seedEntries(wal: WalLog, writer: SeedWriter): Promise<number> {
  let page: ArchivedEntry[] = [];
  let count = 0;
  for (const { key, value } of wal.databases.processed.getRange({})) {
    const opKey = opKeyOfProcessedKey(key);
    if (opKey === null) throw new Error(`spot log: a local processed-set key is not one: ${Buffer.from(key).toString('hex')}`);
    const decoded = decodeProcessed(value, opKey);
    if (!decoded.ok) throw new Error(`spot log: the local processed-set entry ${opKey} is corrupt: ${decoded.reason}`);
    page.push({ key: Buffer.from(key), record: Buffer.from(value), seq: decoded.record.seq });
    count++;
    if (page.length === SPOT_PROCESSED_PAGE_ROWS) {
      await writer.entries(page);
      page = [];
    }
  }
  await writer.entries(page);
  return count;
}
