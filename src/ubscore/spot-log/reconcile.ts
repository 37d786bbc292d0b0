// The start-up reconciliation of UBSCore's two logs: the local LMDB WAL and PostgreSQL's spot_log.
// Runs in the main thread after the owner epoch is claimed and before UBSCore opens its directory,
// so nothing else writes either log meanwhile. Every batch UBSCore answered is in PostgreSQL (it
// answers only once both logs hold it), so PostgreSQL is the truth and the local WAL may differ
// only by batches nobody was told, or by being stale (an old primary restarted on its old DATA_DIR
// after a newer owner ran). It decides from whole ranges, never from one seq:
//
//   local:  L = last seq, P = pruned-through mark (records <= P only in a local snapshot);
//   PG:     A = archived_through_seq (blocks <= A deleted, their state in a snapshot and
//           spot_processed), G = max(A, newest block's last seq); blocks run A+1..G as a chain
//           (migration 0012); snapshots at some seqs >= A.
//
//   case                                   | what proves it            | plan
//   ---------------------------------------+---------------------------+-------------------------------
//   no local ledger, PG holds one          |                           | rebuild from PG
//   no local ledger, PG none               |                           | empty
//   local ledger, PG none                  |                           | primary: seed PG; standby: refuse
//   behind across the archive: L < A       | nothing: blocks are gone  | move aside, rebuild
//     (also "ahead of PG's blocks, but PG archived past L")
//   at the boundary, PG newer: L = A < G   | nothing: block L is gone  | move aside, rebuild
//   equal at the boundary: L = A = G       | the snapshot at A, same   | in step; else move aside,
//                                          | bytes on both sides       | rebuild (see below)
//   equal inside the log: A < L = G        | block L, same bytes       | in step; differs: diverged
//   behind within the log: A < L < G       | block L, same bytes       | catch up L+1..G; differs:
//                                          |                           | diverged
//   ahead: L > G                           | block G (or the snapshot  | primary: push G+1..L;
//                                          | at G when G = A), same    | standby: move aside, rebuild
//   ahead, local pruned past G: P > G      |                           | refuse (PG's log is stale)
//   ahead, not proven to continue PG       | neither block nor snapshot| move aside, rebuild
//   diverged at the meeting block          | block bytes differ, or    | move aside (CRITICAL), rebuild
//                                          | one side's block spans it |
//
// Where the local WAL pruned the block ending at the meeting seq (P >= it), the snapshot at that
// seq stands in for it, as at the archive boundary. Equal at the boundary (L = A = G) has only one
// piece of evidence left: the snapshot at A. Byte-equal snapshots are one snapshot (its header
// carries the time it was taken), taken by this WAL's owner and copied to PostgreSQL, or copied
// from PostgreSQL into this WAL by a rebuild: the WAL is PostgreSQL's state. Anything else (no
// snapshot on one side, other bytes) proves nothing, and a WAL that cannot be proven in step is
// rebuilt, never opened: a rebuild from PostgreSQL loses nothing anyone was told, an unproven WAL
// may hold a former owner's unanswered tail under the owner's blocks. Equal balances would not
// prove it either: another history may reach them under other processed keys. The common restart
// (this owner snapshotted at A, the archive moved to A) keeps its WAL; a rare one rebuilds.
//
// A rebuilt WAL is moved aside first (`ubscore.diverged-<time>`), never deleted: CRITICAL when it
// diverged, a warning when it was only stale or unproven. The decision itself is reconcile-plan.ts.

import fs from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Sql } from '../../db/sql.js';
import { SPOT_LOG_PAGE_BLOCKS } from '../../limits.js';
import type { Logger } from '../../log.js';
import { readBlockHeader } from '../../../wal/block.js';
import { batchOfBlocks, blockEntries, BlockRefused } from '../../../wal/import.js';
import { openWal } from '../../../wal/log.js';
import type { WalLog } from '../../../wal/log.js';
import { holdsLedgerState } from '../../../wal/meta.js';
import { rebuildFromPostgres } from './rebuild.js';
import { seedPostgres } from './seed.js';
import { decide, evidenceAt, meetingSeq, type Evidence, type LocalRange } from './reconcile-plan.js';
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
  const range: LocalRange = { first: local.firstSeq(), last: local.lastSeq(), pruned: local.prunedThroughSeq() };
  const pg = await o.store.range();
  const meeting = meetingSeq(range, pg);
  const evidence: Evidence =
    meeting === null ? { kind: 'unverifiable', reason: 'no comparison' } : await evidenceAt(o.store, local, pg, meeting);
  const role = o.role === 'standby' || o.epoch === 'standby' ? 'standby' : 'primary';
  const decision = decide(range, pg, role, evidence);
  o.log.info('SPOT log ranges', { local: range, postgres: pg, meeting_seq: meeting, evidence, decision: decision.kind });
  switch (decision.kind) {
    case 'in-step':
      return { done: { kind: 'in-step', seq: decision.seq } };
    case 'catch-up': {
      const records = await catchUp(o.store, local, pg.last);
      return { done: { kind: 'caught-up', fromSeq: decision.fromSeq, toSeq: local.lastSeq(), records } };
    }
    case 'push': {
      if (o.epoch === 'standby') throw new Error('spot log: a standby never pushes');
      const pushed = await push(o.store, o.epoch, local, decision.fromSeq - 1);
      if (pushed !== null) return { done: { kind: 'pushed', fromSeq: decision.fromSeq, toSeq: range.last, blocks: pushed } };
      // The local block holding seq G + 1 starts before it: the two logs were cut differently after
      // the meeting snapshot, and the local tail was never answered (PostgreSQL lacks it).
      return { rebuild: `the local WAL's block after seq ${pg.last} does not start at seq ${decision.fromSeq}`, diverged: true };
    }
    case 'rebuild':
      return { rebuild: decision.reason, diverged: decision.diverged };
    case 'refuse':
      throw new Error(decision.message);
  }
}

/**
 * PostgreSQL's blocks after the local last seq appended to LMDB, in bounded pages, through `toSeq`
 * at least. The plan proved the logs meet at the local last seq; each block is verified and must
 * continue the one before (wal/import.ts names a hole's missing seqs), and PostgreSQL must hold
 * blocks up to `toSeq`: a log that ends early has lost blocks, and the start is refused.
 */
async function catchUp(store: SpotLogStore, local: WalLog, toSeq: number): Promise<number> {
  let records = 0;
  for (;;) {
    const page = await store.read(local.lastSeq() + 1, SPOT_LOG_PAGE_BLOCKS);
    if (page[0] === undefined) break;
    const batch = batchOfBlocks(page, local.lastSeq());
    await local.appendBatch(batch);
    records += batch.lastSeq - batch.firstSeq + 1;
  }
  if (local.lastSeq() < toSeq)
    throw new Error(
      `spot log: PostgreSQL's log reaches seq ${toSeq} but holds no block after seq ${local.lastSeq()}: seqs ${local.lastSeq() + 1}..${toSeq} are missing; refusing to start`,
    );
  return records;
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
