// A hung owner (SIGSTOPped, its machine frozen) keeps its lock session, and its lock, for ever;
// pg-owner.ts's waiting process ends it once its lease has passed. By the server's clock alone
// that is not enough: a claim or a renewal sets lease_until from its transaction's now(), and its
// commit may wait long after that (for a synchronous standby after a PostgreSQL failover, 5 s and
// more), so a live owner's row can come out of its commit with its lease already passed, and stay
// so until its next renewal. A chaos run saw a standby end an owner 150 ms after its claim
// committed, and the ownership move twice for one failover. So the waiting process also watches
// the row (`leaseWatch`): it ends the owner only once the row has stayed as it is, lapsed, for a
// whole lease by its own clock (less one poll: it saw the row change up to TAKE_RETRY_MS after
// the change). A live owner renews more than three times a lease, so its row changes well within
// that; a hung one's row was written a lease before it lapses, so the wait is no longer for it.

import { performance } from 'node:perf_hooks';
import type postgres from 'postgres';
import { STANDBY_SETTLE_MS, TAKE_RETRY_MS } from '../limits.js';

/** The holder as pg-owner.ts finds it: its backend pid and start time, and what it calls itself. */
type Holder = { readonly application_name: string; readonly backend_start_text: string };

/** ledger_owner's row as a waiting process last read it. */
type SeenLease = {
  readonly epoch: string;
  readonly leaseUntil: string;
  /** The owner of record's lease has passed by the server's clock. */
  readonly lapsed: boolean;
  /** How long the row has been exactly this (epoch and lease_until), by this process's clock. */
  readonly unchangedMs: number;
};

/** Reads ledger_owner's row and tells how long it has stayed as it is; null before migration 0010. */
export type LeaseWatch = { readonly look: (sql: postgres.Sql) => Promise<SeenLease | null> };

export function leaseWatch(): LeaseWatch {
  let last: { readonly key: string; readonly since: number } | null = null;
  return {
    look: async (sql) => {
      const rows = await sql<{ epoch: string; lease_until: string; lapsed: boolean }[]>`
        SELECT epoch::text AS epoch, lease_until::text AS lease_until, (owner <> '' AND lease_until < now()) AS lapsed
          FROM ledger_owner`.catch((error: unknown) => {
        // Before migration 0010 there is no ledger_owner, and no lease to have passed.
        if ((error as { code?: unknown }).code === '42P01') return [];
        throw error;
      });
      const row = rows[0];
      const at = performance.now();
      if (row === undefined) {
        last = null;
        return null;
      }
      const key = `${row.epoch} ${row.lease_until}`;
      if (last?.key !== key) last = { key, since: at };
      return { epoch: row.epoch, leaseUntil: row.lease_until, lapsed: row.lapsed, unchangedMs: at - last.since };
    },
  };
}

type LapsedHow = {
  /** This process's tag: its own former session is ended by pg-owner.ts's `take` alone, never its pools with it. */
  readonly tag: string;
  readonly watch: LeaseWatch;
  /** How long the lapsed row must have stayed unchanged (less one poll): this process's LEASE_MS. */
  readonly leaseMs: number;
};

/**
 * Ends a hung owner: when the lock's holder is a session of the owner of record, that owner's
 * lease has passed by the server's clock and its row has stayed as it is for `leaseMs` (less one
 * poll) by this process's, its lock session is older than STANDBY_SETTLE_MS and its row is not locked, every
 * session whose application_name starts with its tag is ended. Answers who was ended, or null.
 *
 * A locked row is a renewal in flight (waiting for a synchronous standby after a failover, say):
 * the owner is alive. Waiting behind it stalled this wait until lock_timeout, which a standby
 * took for PostgreSQL not answering (it backed off and only watched again for STANDBY_SETTLE_MS),
 * and once the row came free it ended the live owner (seen after a leader kill).
 *
 * A younger lock session is an owner taking its lock back after a PostgreSQL restart or
 * failover, its lease passed during the outage: it renews within LEASE_RENEW_MS, and ending it
 * would move the ownership for nothing (a chaos run saw a leader kill become a takeover, ready
 * only 21.6 s after the kill); if it does not renew within the settle time it is hung, and ended
 * then. ledger_owner's row stays locked meanwhile, so a renewal that arrives now waits, and its
 * backend, ended, never renews.
 */
export async function endLapsedOwner(
  sql: postgres.Sql,
  holder: Holder,
  how: LapsedHow,
): Promise<{ readonly owner: string; readonly sessions: number; readonly unchanged_ms: number } | null> {
  const seen = await how.watch.look(sql);
  if (seen === null || !seen.lapsed || seen.unchangedMs + TAKE_RETRY_MS < how.leaseMs) return null;
  const settleSeconds = STANDBY_SETTLE_MS / 1000;
  return sql.begin(async (tx) => {
    // The row as it was seen: a claim or a renewal committed since is a live owner. Compared as
    // text: a timestamptz parameter goes through a JS Date, and loses its microseconds.
    const [row] = await tx<{ owner: string }[]>`
      SELECT owner FROM ledger_owner
       WHERE owner <> '' AND lease_until < now() AND epoch::text = ${seen.epoch} AND lease_until::text = ${seen.leaseUntil}
         AND ${holder.backend_start_text}::timestamptz < now() - make_interval(secs => ${settleSeconds})
         FOR UPDATE SKIP LOCKED`;
    if (row === undefined || row.owner === how.tag || !holder.application_name.startsWith(`${row.owner} `)) return null;
    const [n] = await tx<{ ended: number }[]>`
      SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))::int AS ended FROM pg_stat_activity
       WHERE left(application_name, length(${row.owner}) + 1) = ${`${row.owner} `} AND pid <> pg_backend_pid()`;
    return { owner: row.owner, sessions: n?.ended ?? 0, unchanged_ms: Math.round(seen.unchangedMs) };
  });
}
