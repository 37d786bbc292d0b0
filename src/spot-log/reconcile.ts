// The start-up reconciliation of UBSCore's two logs (issue 26): the local LMDB WAL and PostgreSQL's
// spot_log. Runs in the main thread after the owner epoch is claimed and before UBSCore opens its
// directory, so nothing else writes either log meanwhile. Every batch UBSCore answered is in both
// (it answers only once both are durable), so the two can differ only by batches nobody was told:
// - local behind PostgreSQL (this machine's disk lost its tail, or a standby catching up): PG's
//   blocks after the local last seq are appended to LMDB, in bounded batches;
// - local ahead (a crash between LMDB's flush and PG's commit): a primary appends the missing
//   blocks to PG; a standby never writes, it rebuilds from PG instead;
// - the same seq with other bytes (the local WAL was written by a former owner and never
//   answered): the local directory is moved aside (`ubscore.diverged-<time>`) and rebuilt;
// - no local ledger (an empty DATA_DIR) and PG holding one: rebuilt from PG (rebuild.ts);
// - PG holding no SPOT log and the local WAL holding state: PG seeded from it (seed.ts).
// Divergence is looked for where the two logs meet (the block ending at the lower last seq): a
// former owner's unanswered writes can only follow the last block both hold.

import fs from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Sql } from '../db/sql.js';
import { SPOT_LOG_PAGE_BLOCKS } from '../limits.js';
import type { Logger } from '../log.js';
import { readBlockHeader } from '../../wal/block.js';
import { batchOfBlocks, blockEntries, BlockRefused } from '../../wal/import.js';
import { openWal } from '../../wal/log.js';
import type { WalLog } from '../../wal/log.js';
import { holdsLedgerState } from '../../wal/meta.js';
import { rebuildFromPostgres } from './rebuild.js';
import { seedPostgres } from './seed.js';
import type { LogBlock, SpotLogStore } from './store.js';

export type ReconcileOptions = {
  readonly sql: Sql;
  readonly store: SpotLogStore;
  readonly walDir: string;
  readonly role: 'primary' | 'standby';
  /** The owner epoch this process claimed ('standby': it writes nothing). */
  readonly epoch: number | 'standby';
  readonly log: Logger;
};

export type ReconcileOutcome =
  | { readonly kind: 'empty' }
  | { readonly kind: 'in-step'; readonly seq: number }
  | { readonly kind: 'caught-up'; readonly fromSeq: number; readonly toSeq: number; readonly records: number }
  | { readonly kind: 'pushed'; readonly fromSeq: number; readonly toSeq: number; readonly blocks: number }
  | {
      readonly kind: 'rebuilt';
      readonly reason: string;
      readonly snapshotSeq: number;
      readonly lastSeq: number;
      readonly records: number;
      readonly processedEntries: number;
      readonly ms: number;
    }
  | { readonly kind: 'seeded'; readonly snapshotSeq: number; readonly blocks: number; readonly processedEntries: number };

/** What to do once the local WAL is closed: nothing more, or move it aside and rebuild from PostgreSQL. */
type Plan = { readonly done: ReconcileOutcome } | { readonly rebuild: string; readonly diverged: boolean };

/** The file of an LMDB environment opened on a directory (lmdb-js, without noSubdir). */
const LMDB_DATA_FILE = 'data.mdb';

export async function reconcileSpotLog(o: ReconcileOptions): Promise<ReconcileOutcome> {
  const started = performance.now();
  const pgHolds = await o.store.holdsLedger();
  const local = await openLocal(o.walDir);
  let plan: Plan;
  try {
    plan = await planWith(o, local, pgHolds);
  } finally {
    await local?.close();
  }
  if ('done' in plan) {
    o.log.info('SPOT log reconciled', { ...plan.done, ms: Math.round(performance.now() - started) });
    return plan.done;
  }
  const aside = await clearLocal(o.walDir);
  if (aside !== null) {
    const fields = { reason: plan.rebuild, moved_to: aside };
    if (plan.diverged) o.log.critical('the local SPOT WAL diverged from PostgreSQL: moved aside, rebuilding from PostgreSQL', fields);
    else o.log.warn('the local SPOT WAL cannot follow PostgreSQL: moved aside, rebuilding from PostgreSQL', fields);
  }
  const rebuilt = await rebuildFromPostgres(o.sql, o.store, o.walDir);
  const outcome: ReconcileOutcome = { kind: 'rebuilt', reason: plan.rebuild, ...rebuilt };
  o.log.info('SPOT ledger rebuilt from PostgreSQL', {
    reason: plan.rebuild,
    snapshot_seq: rebuilt.snapshotSeq,
    last_seq: rebuilt.lastSeq,
    records_pulled: rebuilt.records,
    processed_entries: rebuilt.processedEntries,
    ms: Math.round(performance.now() - started),
  });
  return outcome;
}

/** The local WAL, or null when DATA_DIR holds no environment or one with no ledger state. */
async function openLocal(walDir: string): Promise<WalLog | null> {
  const exists = await fs.access(path.join(walDir, LMDB_DATA_FILE)).then(
    () => true,
    () => false,
  );
  if (!exists) return null;
  const wal = openWal(walDir);
  if (holdsLedgerState(wal.databases)) return wal;
  await wal.close();
  return null;
}

async function planWith(o: ReconcileOptions, local: WalLog | null, pgHolds: boolean): Promise<Plan> {
  if (local === null) return pgHolds ? { rebuild: 'the local WAL holds no SPOT ledger', diverged: false } : { done: { kind: 'empty' } };
  if (!pgHolds) {
    if (o.role === 'standby' || o.epoch === 'standby')
      throw new Error('spot log: PostgreSQL holds no SPOT log and a standby writes nothing: start the primary first, which seeds it');
    const seeded = await seedPostgres(o.store, o.epoch, local);
    o.log.warn('PostgreSQL held no SPOT log: seeded it from the local WAL', { ...seeded, ms: Math.round(seeded.ms) });
    return { done: { kind: 'seeded', ...seeded } };
  }
  const localSeq = local.lastSeq();
  const pgSeq = await o.store.lastSeq();
  const divergence = await divergenceAt(o.store, local, Math.min(localSeq, pgSeq));
  if (divergence !== null) return { rebuild: `${divergence} (local last seq ${localSeq}, PostgreSQL's ${pgSeq})`, diverged: true };
  if (localSeq === pgSeq) return { done: { kind: 'in-step', seq: localSeq } };
  if (localSeq < pgSeq) {
    const caught = await catchUp(o.store, local, localSeq);
    if (caught !== null) return { done: { kind: 'caught-up', fromSeq: localSeq + 1, toSeq: local.lastSeq(), records: caught } };
    return { rebuild: `PostgreSQL archived its log past the local last seq ${localSeq}`, diverged: false };
  }
  if (o.role === 'standby' || o.epoch === 'standby')
    return {
      rebuild: `the local WAL (seq ${localSeq}) is ahead of PostgreSQL (seq ${pgSeq}) and a standby writes nothing`,
      diverged: false,
    };
  const pushed = await push(o.store, o.epoch, local, pgSeq);
  if (pushed !== null) return { done: { kind: 'pushed', fromSeq: pgSeq + 1, toSeq: localSeq, blocks: pushed } };
  // The local WAL holds records PostgreSQL never got and no longer holds them as blocks (pruned
  // behind a local snapshot): PostgreSQL's log went stale (a run with SPOT_LOG=off, or a database
  // restored from an older backup). A rebuild from PostgreSQL would lose those records, which may
  // have been answered: refuse, loudly.
  throw new Error(
    `spot log: the local WAL (seq ${localSeq}) is ahead of PostgreSQL's SPOT log (seq ${pgSeq}) by records it no longer holds as blocks after seq ${pgSeq}; PostgreSQL's log is stale (was the service run with SPOT_LOG=off, or the database restored alone?): refusing to start rather than lose them`,
  );
}

/**
 * Why the two logs disagree at `seq` (the lower of their last seqs), or null: both hold the
 * block ending there with the same bytes, or one of them no longer holds it (pruned, archived).
 */
async function divergenceAt(store: SpotLogStore, local: WalLog, seq: number): Promise<string | null> {
  if (seq === 0) return null;
  const [theirs] = await store.read(seq, 1);
  const mine = local.databases.wal.getBinary(seq);
  if (theirs === undefined) return null;
  if (theirs.lastSeq !== seq) {
    // PostgreSQL has no block ending at `seq`: archived (its next starts after), or cut elsewhere.
    return theirs.firstSeq <= seq ? `PostgreSQL's block of seqs ${theirs.firstSeq}..${theirs.lastSeq} spans seq ${seq}` : null;
  }
  if (mine === undefined) return seq <= local.prunedThroughSeq() ? null : `the local WAL has no block ending at seq ${seq}, PostgreSQL has`;
  return theirs.bytes.equals(mine) ? null : `the block ending at seq ${seq} differs`;
}

/** PostgreSQL's blocks after `localSeq` appended to LMDB; null when PG no longer holds the first of them. */
async function catchUp(store: SpotLogStore, local: WalLog, localSeq: number): Promise<number | null> {
  let records = 0;
  for (;;) {
    const page = await store.read(local.lastSeq() + 1, SPOT_LOG_PAGE_BLOCKS);
    const first = page[0];
    if (first === undefined) return records;
    if (records === 0 && local.lastSeq() === localSeq && first.firstSeq > localSeq + 1) return null;
    const batch = batchOfBlocks(page, local.lastSeq());
    await local.appendBatch(batch);
    records += batch.lastSeq - batch.firstSeq + 1;
  }
}

/** The local blocks after `pgSeq` appended to PostgreSQL at `epoch`; null when they do not start right after it. */
async function push(store: SpotLogStore, epoch: number, local: WalLog, pgSeq: number): Promise<number | null> {
  let page: LogBlock[] = [];
  let expected = pgSeq + 1;
  let count = 0;
  for (const { key, value } of local.databases.wal.getRange({ start: pgSeq + 1 })) {
    const bytes = Buffer.from(value);
    const header = readBlockHeader(bytes, key);
    if (!header.ok) throw new BlockRefused(key, `the local block does not verify: ${header.reason}`);
    if (header.record.firstSeq !== expected) {
      if (count === 0) return null;
      throw new BlockRefused(key, `the local block starts at seq ${header.record.firstSeq}, not ${expected}`);
    }
    const block = { firstSeq: header.record.firstSeq, lastSeq: key, bytes };
    blockEntries(block); // nothing damaged is copied to PostgreSQL
    page.push(block);
    expected = key + 1;
    count++;
    if (page.length === SPOT_LOG_PAGE_BLOCKS) {
      await store.append(epoch, page);
      page = [];
    }
  }
  await store.append(epoch, page);
  return count;
}

/**
 * Makes room for the rebuild: a WAL directory holding ledger state is moved aside (never deleted:
 * an operator may want it) and its new name returned; one holding no state (an environment only
 * stamped with the ledger id) is removed. Null when nothing was moved.
 */
async function clearLocal(walDir: string): Promise<string | null> {
  const local = await openLocal(walDir).catch(() => 'unreadable' as const);
  if (local === null) {
    await fs.rm(walDir, { recursive: true, force: true });
    return null;
  }
  if (local !== 'unreadable') await local.close();
  const aside = `${walDir}.diverged-${new Date().toISOString()}`;
  await fs.rename(walDir, aside);
  return aside;
}
