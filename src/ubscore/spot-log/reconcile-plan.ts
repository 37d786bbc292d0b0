// The decision of the start-up reconciliation (reconcile.ts, whose top comment holds the table):
// what the local WAL covers, what PostgreSQL's log covers, and what proves the two agree where
// they meet, turned into one of a few plans. `decide` is pure: every case of the table is one
// line of it, so a reader checks the table against the code, and a test can feed it ranges.

import type { WalLog } from '../../../wal/log.js';
import { missingOrOverlap } from '../../../wal/import.js';
import { SnapshotStore } from '../../../wal/snapshot-store.js';
import type { PgRange, SpotLogStore } from './store.js';

/** What the local WAL covers: its first block's first seq (null: none), its last seq, its pruned mark. */
export type LocalRange = { readonly first: number | null; readonly last: number; readonly pruned: number };

/** Whether the two logs agree at the seq where they meet. */
export type Evidence =
  | { readonly kind: 'same'; readonly how: string }
  | { readonly kind: 'differs'; readonly reason: string }
  | { readonly kind: 'unverifiable'; readonly reason: string };

export type Decision =
  | { readonly kind: 'in-step'; readonly seq: number }
  | { readonly kind: 'catch-up'; readonly fromSeq: number }
  | { readonly kind: 'push'; readonly fromSeq: number }
  | { readonly kind: 'rebuild'; readonly reason: string; readonly diverged: boolean }
  | { readonly kind: 'refuse'; readonly message: string };

/**
 * Where the two logs must be compared: the lower of the two last seqs. Null when no comparison
 * can decide anything: the local WAL ends inside what PostgreSQL archived and PostgreSQL holds
 * more after it (the blocks to compare with are gone; the local WAL is rebuilt whatever it holds).
 */
export function meetingSeq(local: LocalRange, pg: PgRange): number | null {
  if (local.last < pg.archived) return null;
  if (local.last === pg.archived && pg.last > pg.archived) return null;
  return Math.min(local.last, pg.last);
}

/** The plan for `local` against `pg`, given what was found where they meet (unused when `meetingSeq` is null). */
export function decide(local: LocalRange, pg: PgRange, role: 'primary' | 'standby', evidence: Evidence): Decision {
  const L = local.last;
  const where = `local last seq ${L}, PostgreSQL's ${pg.last}, archived through ${pg.archived}`;
  const rebuild = (reason: string, diverged = false): Decision => ({ kind: 'rebuild', reason: `${reason} (${where})`, diverged });
  // Behind across the archive boundary (also: past PostgreSQL's blocks, yet under its archive mark).
  if (L < pg.archived) return rebuild(`PostgreSQL archived its log past the local last seq ${L}: the local WAL cannot be verified`);
  // At the archive boundary, PostgreSQL's blocks after it: the block to compare with was archived.
  if (L === pg.archived && pg.last > L)
    return rebuild(
      `the local WAL ends at the archive boundary ${L} and PostgreSQL holds blocks after it: the local WAL cannot be verified`,
    );
  // Diverged where they meet: a former owner's unanswered writes.
  if (evidence.kind === 'differs') return rebuild(evidence.reason, true);
  // Equal.
  if (L === pg.last)
    return evidence.kind === 'same' ? { kind: 'in-step', seq: L } : rebuild(`the logs cannot be proven in step: ${evidence.reason}`);
  // Behind within the log.
  if (L < pg.last)
    return evidence.kind === 'same'
      ? { kind: 'catch-up', fromSeq: L + 1 }
      : rebuild(`the local WAL cannot be verified: ${evidence.reason}`);
  // Ahead: a standby writes nothing.
  if (role === 'standby') return rebuild(`the local WAL is ahead of PostgreSQL and a standby writes nothing`);
  // Ahead by records the local WAL pruned behind a snapshot: PostgreSQL's log is stale, and a
  // rebuild from it would lose records that may have been answered (a run with SPOT_LOG=off).
  if (local.pruned > pg.last)
    return {
      kind: 'refuse',
      message: `spot log: the local WAL (seq ${L}) is ahead of PostgreSQL's SPOT log (seq ${pg.last}) by records it no longer holds as blocks after seq ${pg.last}; PostgreSQL's log is stale (was the service run with SPOT_LOG=off, or the database restored alone?): refusing to start rather than lose them`,
    };
  // Ahead, but not proven to continue PostgreSQL's chain: the tail was never answered (a batch is
  // answered only once PostgreSQL holds it), so the rebuild loses nothing anyone was told.
  if (evidence.kind === 'unverifiable')
    return rebuild(`the local WAL is ahead, but not proven to continue PostgreSQL's log: ${evidence.reason}`);
  // Ahead, continuing PostgreSQL's chain: a primary pushes its tail.
  return { kind: 'push', fromSeq: pg.last + 1 };
}

/**
 * What proves the logs agree at `seq`. Inside spot_log: the block ending there, byte for byte
 * (PostgreSQL's block spanning `seq`, or the local WAL's, means they were cut differently: they
 * diverged). At or below the archive mark, or where the local WAL pruned its block: the snapshot
 * at `seq`, byte for byte, on both sides; anything less proves nothing. Throws when spot_log has
 * a hole where the block holding `seq` should be.
 */
export async function evidenceAt(store: SpotLogStore, local: WalLog, pg: PgRange, seq: number): Promise<Evidence> {
  if (seq === 0) return { kind: 'same', how: 'both logs are empty' };
  if (seq <= pg.archived) return sameSnapshot(store, local, seq);
  const [theirs] = await store.read(seq, 1);
  if (theirs === undefined || theirs.firstSeq > seq) {
    const missing = missingOrOverlap({ firstSeq: theirs?.firstSeq ?? pg.last + 1, lastSeq: theirs?.lastSeq ?? pg.last }, seq);
    throw new Error(`spot log: PostgreSQL's log reaches seq ${pg.last} but holds no block with seq ${seq}: ${missing}; refusing to start`);
  }
  if (theirs.lastSeq !== seq)
    return { kind: 'differs', reason: `PostgreSQL's block of seqs ${theirs.firstSeq}..${theirs.lastSeq} spans seq ${seq}` };
  const mine = local.databases.wal.getBinary(seq);
  if (mine === undefined) {
    if (seq <= local.prunedThroughSeq()) return sameSnapshot(store, local, seq);
    return { kind: 'differs', reason: `the local WAL has no block ending at seq ${seq}, PostgreSQL has` };
  }
  if (!theirs.bytes.equals(mine)) return { kind: 'differs', reason: `the block ending at seq ${seq} differs` };
  return { kind: 'same', how: `the block ending at seq ${seq}` };
}

/**
 * The snapshots at `seq`, compared byte for byte. Equal bytes prove the local WAL is the one
 * PostgreSQL's state came from: a snapshot's header carries the time it was taken, so equal
 * bytes are one snapshot, taken by this WAL's owner and copied to PostgreSQL, or copied from
 * PostgreSQL into this WAL by a rebuild. Equal balances alone would not do: another owner's
 * history may reach the same balances under other processed keys.
 */
async function sameSnapshot(store: SpotLogStore, local: WalLog, seq: number): Promise<Evidence> {
  const theirs = await store.snapshot(seq);
  const mine = new SnapshotStore(local.databases).stored(seq);
  if (theirs === null || mine === null) {
    const lacking = theirs === null && mine === null ? 'neither side' : theirs === null ? 'PostgreSQL' : 'the local WAL';
    return { kind: 'unverifiable', reason: `the block ending at seq ${seq} is gone and ${lacking} keeps a snapshot at seq ${seq}` };
  }
  const same = theirs.header.equals(mine.header) && theirs.chunks.length === mine.chunks.length;
  if (same && theirs.chunks.every((chunk, i) => chunk.equals(mine.chunks[i] as Buffer)))
    return { kind: 'same', how: `the snapshot at seq ${seq}` };
  return { kind: 'unverifiable', reason: `the block ending at seq ${seq} is gone and the snapshots at seq ${seq} differ` };
}
