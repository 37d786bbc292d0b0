// The SPOT ledger's LMDB rebuilt from PostgreSQL alone (rule 8): the newest snapshot
// PostgreSQL keeps that verifies, every archived processed-set entry, and every block still in
// spot_log, written into a fresh LMDB environment exactly as UBSCore would have written them, so
// that UBSCore's ordinary start (src/ubscore/durability/restore.ts: the snapshot, then the WAL after it) loads it.
//
// The environment is built in a directory beside the WAL's (`<walDir>-rebuilding`) and renamed
// into place only once complete: a crash at any point leaves either no WAL directory (the next
// start rebuilds again) or a complete one, never a half-built ledger that looks whole.

import fs from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Sql } from '../../db/sql.js';
import { SPOT_LOG_PAGE_BLOCKS, SPOT_PROCESSED_PAGE_ROWS } from '../../limits.js';
import { openWal, openWalDatabases } from '../../../wal/log.js';
import type { WalLog } from '../../../wal/log.js';
import type { WalDatabases } from '../../../wal/databases.js';
import { batchOfBlocks, blockEntries, BlockRefused, missingOrOverlap } from '../../../wal/import.js';
import { PRUNED_THROUGH_KEY, checkFormatVersion, encodeMetaSeq, writeLedgerId } from '../../../wal/meta.js';
import { putProcessed } from '../../../wal/processed-index.js';
import { decodeSnapshotBody, decodeSnapshotHeader } from '../../../wal/snapshot.js';
import type { SnapshotInfo } from '../../../wal/snapshot.js';
import { SnapshotStore } from '../../../wal/snapshot-store.js';
import type { ArchivedEntry, LogBlock, SpotLogStore, StoredSnapshot } from './store.js';

export type Rebuilt = {
  /** The snapshot the ledger starts from (0: none, the log from seq 1). */
  readonly snapshotSeq: number;
  /** The last seq written: the ledger's once UBSCore replays the log after the snapshot. */
  readonly lastSeq: number;
  /** Records of spot_log written as WAL blocks (after the snapshot). */
  readonly records: number;
  /** Processed-set entries written: archived ones and those of every block read. */
  readonly processedEntries: number;
  readonly ms: number;
};

type Verified = { readonly stored: StoredSnapshot; readonly info: SnapshotInfo };

/** Rebuilds `walDir` from PostgreSQL; `walDir` must not exist (the caller moved or removed it). */
export async function rebuildFromPostgres(sql: Sql, store: SpotLogStore, walDir: string): Promise<Rebuilt> {
  const started = performance.now();
  const ledgerId = await pgLedgerId(sql);
  const archived = await store.archivedThrough();
  const snapshot = await newestVerifiedSnapshot(store, archived);
  if (snapshot === null && archived > 0)
    throw new Error(`spot log: the log is archived through seq ${archived} but no snapshot PostgreSQL keeps covers it: cannot rebuild`);
  const snapshotSeq = snapshot?.stored.seq ?? 0;
  // The block holding seq S + 1: it may start at or before S (a snapshot inside a block).
  const [next] = await store.read(snapshotSeq + 1, 1);
  if (next !== undefined && next.firstSeq > snapshotSeq + 1)
    throw new Error(
      `spot log: the log after the snapshot at seq ${snapshotSeq} starts at seq ${next.firstSeq}: ${missingOrOverlap(next, snapshotSeq + 1)}, cannot rebuild`,
    );
  const straddling = next !== undefined && next.firstSeq <= snapshotSeq ? next : null;
  // No dot in the name: lmdb-js takes a path with an extension for a file (noSubdir).
  const building = `${walDir}-rebuilding`;
  await fs.rm(building, { recursive: true, force: true });
  await fs.mkdir(building, { recursive: true });
  await writeBase(building, ledgerId, snapshot, straddling);
  const wal = openWal(building);
  let written: Written;
  try {
    written = await writeLog(store, wal, snapshotSeq, straddling);
  } finally {
    await wal.close();
  }
  await fs.rename(building, walDir);
  await syncDir(path.dirname(walDir));
  return {
    snapshotSeq,
    lastSeq: written.lastSeq,
    records: written.records,
    processedEntries: written.entries,
    ms: performance.now() - started,
  };
}

async function pgLedgerId(sql: Sql): Promise<string> {
  const [row] = await sql<{ id: string }[]>`SELECT ledger_id::text AS id FROM ledger_identity`;
  if (row === undefined) throw new Error('spot log: the database has no ledger id: cannot rebuild a SPOT ledger for it');
  return row.id;
}

/**
 * The newest snapshot PostgreSQL keeps that verifies whole and still has the log after it (its
 * seq at or after the archive mark); a damaged one is skipped for an older one.
 */
async function newestVerifiedSnapshot(store: SpotLogStore, archived: number): Promise<Verified | null> {
  for (const seq of await store.snapshotSeqs()) {
    if (seq < archived) return null;
    const stored = await store.snapshot(seq);
    if (stored === null) continue;
    const header = decodeSnapshotHeader(stored.header, seq);
    if (!header.ok) continue;
    const reason = decodeSnapshotBody(header.record, stored.chunks, () => undefined);
    if (reason === null) return { stored, info: header.record };
  }
  return null;
}

/**
 * The environment's base, before any block is appended: the format and ledger id, the snapshot,
 * the WAL marked pruned through its seq (UBSCore replays after it), and the block that holds the
 * snapshot's seq when the snapshot falls inside one (replay skips its records up to the mark).
 */
async function writeBase(dir: string, ledgerId: string, snapshot: Verified | null, straddling: LogBlock | null): Promise<void> {
  const dbs = openWalDatabases(dir);
  try {
    checkFormatVersion(dbs, dir);
    writeLedgerId(dbs, ledgerId);
    if (snapshot === null) return;
    await new SnapshotStore(dbs).write({ info: snapshot.info, header: snapshot.stored.header, chunks: snapshot.stored.chunks });
    const written = await dbs.env.batch(() => {
      void dbs.meta.put(PRUNED_THROUGH_KEY, encodeMetaSeq(snapshot.stored.seq));
      if (straddling !== null) {
        blockEntries(straddling); // verified before it is written
        void dbs.wal.put(straddling.lastSeq, straddling.bytes);
      }
    });
    if (!written) throw new Error('spot log: the rebuilt WAL base was not written');
  } finally {
    await dbs.env.close();
  }
}

/**
 * Every archived entry, then spot_log in pages: the blocks the snapshot covers give only their
 * processed-set entries, the later ones are appended as UBSCore's group commit wrote them. The
 * whole log is checked for continuity from the archive mark: a hole below the snapshot would lose
 * processed-set entries, a hole above it records.
 */
async function writeLog(store: SpotLogStore, wal: WalLog, snapshotSeq: number, straddling: LogBlock | null): Promise<Written> {
  let entries = 0;
  await store.eachArchived(SPOT_PROCESSED_PAGE_ROWS, async (page) => {
    await putEntries(wal.databases, page);
    entries += page.length;
  });
  let records = 0;
  const start = (await store.archivedThrough()) + 1;
  let next = start;
  for (;;) {
    const page = await store.read(next, SPOT_LOG_PAGE_BLOCKS);
    if (page.length === 0) break;
    next = checkContinues(page, next, next === start);
    const covered = page.filter((block) => block.lastSeq <= snapshotSeq || block.lastSeq === straddling?.lastSeq);
    const covering = covered.flatMap((block) => blockEntries(block));
    await putEntries(wal.databases, covering);
    entries += covering.length;
    const after = page.filter((block) => !covered.includes(block));
    if (after.length > 0) {
      const batch = batchOfBlocks(after, wal.lastSeq());
      await wal.appendBatch(batch);
      records += batch.lastSeq - batch.firstSeq + 1;
      entries += batch.processed.length;
    }
  }
  return { records, entries, lastSeq: wal.lastSeq() };
}

type Written = { readonly records: number; readonly entries: number; readonly lastSeq: number };

/**
 * Checks that `page` continues the log at `next` (the `first` page's first block may start before it: the
 * archive mark or a seed's pruned mark may fall inside a block); returns the seq after the page.
 */
function checkContinues(page: readonly LogBlock[], next: number, first: boolean): number {
  let expected = next;
  for (const block of page) {
    const continues = first && block === page[0] ? block.firstSeq <= expected : block.firstSeq === expected;
    if (!continues)
      throw new BlockRefused(
        block.lastSeq,
        `it starts at seq ${block.firstSeq} where seq ${expected} was expected: ${missingOrOverlap(block, expected)}`,
      );
    expected = block.lastSeq + 1;
  }
  return expected;
}

async function putEntries(dbs: WalDatabases, entries: readonly ArchivedEntry[]): Promise<void> {
  if (entries.length === 0) return;
  const written = await dbs.env.batch(() => {
    for (const entry of entries) putProcessed(dbs, entry.key, entry.record, entry.seq);
  });
  if (!written) throw new Error('spot log: processed-set entries of the rebuild were not written');
}

/** Makes a rename in `dir` durable. */
async function syncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
