// One process per database (rule 7). The owner holds a PostgreSQL session advisory lock on a
// connection of its own, for its whole life: not a pooled one, never recycled, never idle-closed.
// A second process asks for the same lock, is refused, names the holder from pg_stat_activity,
// and exits before it migrates or writes anything.
//
// When the owner's connection closes (the server restarted, the network dropped, an operator
// ended the session), the session and its lock are gone and another process may take them: the
// owner stops taking new work (`onLost`, once per loss) and takes the lock again on a new
// session once the server answers, with capped backoff between attempts. Then either the lock is
// ours again (`onRegained`: work may resume) or another process holds it (`onTakenByOther`, with
// its name: this process must not go on). The session that held the lock before (the network
// dropped but the server has not noticed yet) is not another process: known by its backend pid
// and start time, it is ended and the lock taken again.
//
// Once claimed, the ownership is a lease the owner renews (src/ownership/lease.ts). A
// process that wants the ownership takes it when the lock is free, or when the holder is the
// owner of record and its lease has passed by the server's clock, its row unchanged for a lease
// by this process's (a hung owner: SIGSTOPped, or its machine frozen, keeps its session and its
// lock for ever; src/ownership/lapsed.ts): then every session of that owner is ended, which frees
// the lock and rolls back its open transactions, and the lock taken.
// `mode: 'wait'` (a standby) waits for that moment instead of refusing after TAKE_WAIT_MS.
// A holder that is no owner of record (it took the lock, then froze before its claim) is ended
// once its session has not moved for OWNER_CLAIM_MS_MAX (src/ownership/unclaimed.ts); the lock
// session carries server-side bounds, so a process cut off loses it, and its lock, in seconds.

import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as delay } from 'node:timers/promises';
import postgres from 'postgres';
import { backoffMs } from '../backoff.js';
import { CLIENT_KEEPALIVE_S, reconnectBackoffS, SESSION_TCP_BOUNDS, type PgOwnerIdentity } from '../db/sql.js';
import { epochClaim } from './epoch-claim.js';
import { OwnershipError } from './errors.js';
import { endLapsedOwner, type LeaseWatch, leaseWatch } from './lapsed.js';
import { keepLease, type LeaseSettings, type LeaseState, type OwnerLease } from './lease.js';
import { claimHeartbeat, endUnclaimedHolder } from './unclaimed.js';
import {
  CONNECT_TIMEOUT_S,
  OWNER_RETAKE_BACKOFF_CAP_MS,
  OWNER_SESSION_IDLE_IN_TRANSACTION_MS,
  OWNER_SESSION_LOCK_TIMEOUT_MS,
  OWNER_SESSION_STATEMENT_TIMEOUT_MS,
  RETAKE_BACKOFF_BASE_MS,
  STANDBY_SETTLE_MS,
  TAKE_RETRY_MS,
  TAKE_WAIT_MS,
} from '../limits.js';

/** The advisory lock every owner of a database takes: "ledger-o" in ASCII. Per database, as every advisory lock is. */
export const OWNER_LOCK_KEY = 0x6c65646765722d6fn;

type OwnerEvents = {
  /** The connection holding the lock closed: stop taking new work until `onRegained`. */
  readonly onLost: (reason: string) => void;
  /** The lock is held again, on a new session, after `attempts` attempts. */
  readonly onRegained: (attempts: number) => void;
  /** Another process took the lock while it was not held: this process must not go on. */
  readonly onTakenByOther: (holder: string) => void;
  readonly log: { readonly info: (message: string, fields?: Record<string, unknown>) => void };
};

export type PgOwner = {
  /** Whether this process holds the owner lock now and, once claimed, its lease is proven. */
  readonly held: () => boolean;
  /**
   * Makes this process the owner of record: increments the owner epoch under the fence lock,
   * so every write of a former owner is refused from then on, and records this process's tag
   * and lease, then renews the lease. Runs once, after the schema is migrated (ledger_owner is
   * migration 0010's). `onEnded`: the ownership is gone (another epoch, or the lease lapsed
   * unnoticed): the process must stop at once.
   */
  readonly claim: (lease: LeaseSettings, onEnded: (reason: string) => void) => Promise<PgOwnerIdentity>;
  /** The lease's state (src/ownership/lease.ts); before the claim, `proven` while the lock is held. */
  readonly leaseState: () => LeaseState;
  /** Milliseconds of proven lease left (src/ownership/lease.ts); 0 before the claim. */
  readonly leaseLeftMs: () => number;
  /** The tag and epoch every pool that writes money carries; throws before claim. */
  readonly identity: () => PgOwnerIdentity;
  readonly release: () => Promise<void>;
};

/** A server session, told from any other by its backend pid and start time. */
type Session = { readonly pid: number; readonly backendStart: string };
type Take = { readonly kind: 'held'; readonly session: Session } | { readonly kind: 'other'; readonly holder: string };
type Holder = { pid: number; application_name: string; client_addr: string | null; backend_start: Date; backend_start_text: string };

/** Takes the database's owner lock, or throws OwnershipError naming the process that holds it. */
export type OwnOptions = {
  readonly retakeBackoffCapMs: number;
  /** LEASE_MS: a lapsed owner's row must stay unchanged this long, as this process sees it, before the owner is ended (lapsed.ts). */
  readonly leaseMs: number;
  /** `refuse` (default): give up after TAKE_WAIT_MS; `wait`: wait until the ownership can be taken. */
  readonly mode?: 'refuse' | 'wait';
  /** Ends a wait: the promise rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /**
   * `wait` only: a try failed on PostgreSQL (restarted, failed over, the connection reset), with
   * why: the wait goes on after a capped backoff; null once PostgreSQL answers again.
   */
  readonly onWaitTrouble?: (reason: string | null) => void;
};

/** A standby's way in: resolves once this process holds the owner lock (then `claim`). */
export function waitForOwnership(url: string, events: OwnerEvents, opts: Omit<OwnOptions, 'mode'>): Promise<PgOwner> {
  return ownDatabase(url, events, { ...opts, mode: 'wait' });
}

export async function ownDatabase(url: string, events: OwnerEvents, opts: OwnOptions): Promise<PgOwner> {
  const tag = ownerTag();
  // application_name is at most 63 bytes: enough to name the process in the refusal.
  const applicationName = `${tag} owner lock`.slice(0, 63);
  const st: LockState = { held: false, released: false, lease: null };
  let closes = 0;
  let closedAt = Number.NEGATIVE_INFINITY; // the lock session's last close: a waiting standby settles from then too
  let retaking = false;
  let ours: Session | null = null; // the session that took the lock last: after a loss, only it may be ended as ours
  const watch = leaseWatch(); // ledger_owner's row as this process saw it, across every try
  const sql = postgres(
    url,
    lockSessionOptions(applicationName, () => {
      closes += 1;
      closedAt = performance.now();
      if (!st.held || st.released) return;
      st.held = false;
      st.lease?.lost();
      events.onLost('the connection holding the owner lock closed: another process may now own the database');
      if (!retaking) void retake();
    }),
  );

  const base = { tag, events, watch, leaseMs: opts.leaseMs };
  /** Takes the lock on a session that stayed open from before the ask to the answer. */
  const takeOnOneSession = async (how: TakeHow = { ...base, wait: false }): Promise<Take> => {
    for (;;) {
      const before = closes;
      const taken = await take(sql, ours, how);
      if (taken.kind === 'held') ours = taken.session;
      if (taken.kind === 'other' || closes === before) return taken;
    }
  };

  const retake = async (): Promise<void> => {
    retaking = true;
    const capMs = Math.min(opts.retakeBackoffCapMs, OWNER_RETAKE_BACKOFF_CAP_MS);
    try {
      for (let attempt = 1; !st.released; attempt++) {
        await delay(Math.min(capMs, RETAKE_BACKOFF_BASE_MS * 2 ** Math.min(attempt - 1, 20)));
        if (st.released) return;
        events.log.info('taking the owner lock again', { attempt });
        const taken = await takeOnOneSession().catch((error: unknown) => {
          events.log.info('the owner lock could not be taken yet', { attempt, error: String(error) });
          return null;
        });
        if (taken === null || st.released) continue;
        if (taken.kind === 'other') return events.onTakenByOther(taken.holder);
        st.held = true;
        return events.onRegained(attempt);
      }
    } finally {
      retaking = false;
    }
  };

  try {
    const how: TakeHow = { ...base, wait: opts.mode === 'wait', ...(opts.signal ? { signal: opts.signal } : {}) };
    const taken = how.wait ? await waitThroughTrouble(takeOnOneSession, how, opts, () => closedAt) : await takeOnOneSession(how);
    if (taken.kind === 'other')
      throw new OwnershipError(
        `the database is owned by another process: ${taken.holder}. Stop it first; two processes on one database would split the SPOT ledger.`,
      );
  } catch (error) {
    st.released = true;
    await sql.end({ timeout: 5 }).catch(() => undefined);
    throw error;
  }
  st.held = true;
  return ownerApi(sql, tag, st, events);
}

/** The lock session: one connection, never recycled nor idle-closed; `onclose` on each close. */
function lockSessionOptions(applicationName: string, onclose: () => void): postgres.Options<Record<string, postgres.PostgresType>> {
  return {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    connect_timeout: CONNECT_TIMEOUT_S,
    backoff: reconnectBackoffS,
    keep_alive: CLIENT_KEEPALIVE_S,
    onnotice: () => undefined,
    // Server-side bounds: cut off, this session (and the lock) goes within seconds; a claim frozen
    // inside its transaction is ended before the fence lock it holds stops every write for long.
    connection: {
      ...SESSION_TCP_BOUNDS,
      application_name: applicationName,
      lock_timeout: OWNER_SESSION_LOCK_TIMEOUT_MS,
      statement_timeout: OWNER_SESSION_STATEMENT_TIMEOUT_MS,
      idle_in_transaction_session_timeout: OWNER_SESSION_IDLE_IN_TRANSACTION_MS,
    },
    onclose,
  };
}

/**
 * A standby's wait outlives PostgreSQL's restarts and failovers: a try that fails is tried again
 * after a capped backoff (the next primary loss needs someone to take over), and reported
 * (`onWaitTrouble`) until PostgreSQL answers again; then, as after its own start or a close of its
 * session, it only watches for STANDBY_SETTLE_MS, while the owner takes its own lock back. Only
 * the signal ends the wait.
 */
async function waitThroughTrouble(
  takeOnOneSession: (how: TakeHow) => Promise<Take>,
  how: TakeHow,
  opts: OwnOptions,
  closedAt: () => number,
): Promise<Take> {
  let troubled = false;
  // Tries that failed in a row: the backoff grows with them, and starts again once PostgreSQL
  // answers (a standby with a long history of outages is not slower to take over after the next).
  let failures = 0;
  // A standby that has just started is back from trouble too: a free lock may be the owner's,
  // lost to a PostgreSQL restart a moment ago and about to be taken back.
  let backAt = performance.now();
  const onReached = () => {
    if (!troubled) return;
    troubled = false;
    failures = 0;
    backAt = performance.now();
    opts.onWaitTrouble?.(null);
  };
  // A session closed between two tries (PostgreSQL restarted within a poll, the next query
  // reconnected) is trouble too, though no try failed.
  const settlingMs = () =>
    troubled ? STANDBY_SETTLE_MS : Math.max(0, Math.max(backAt, closedAt()) + STANDBY_SETTLE_MS - performance.now());
  for (;;) {
    try {
      const taken = await takeOnOneSession({ ...how, onReached, settlingMs });
      onReached();
      return taken;
    } catch (error) {
      if (how.signal?.aborted) throw error;
      troubled = true;
      const waitMs = backoffMs({ baseMs: RETAKE_BACKOFF_BASE_MS, capMs: opts.retakeBackoffCapMs }, failures);
      failures += 1;
      how.events.log.info('waiting for the ownership: PostgreSQL did not answer; trying again', { error: String(error), wait_ms: waitMs });
      opts.onWaitTrouble?.(`PostgreSQL did not answer the wait for the ownership: ${String(error)}`);
      await delay(waitMs, undefined, how.signal ? { signal: how.signal } : {});
    }
  }
}

/** What the owner is while it runs: the lock's state, its lease once claimed. */
type LockState = { held: boolean; released: boolean; lease: OwnerLease | null };

function ownerApi(sql: postgres.Sql, tag: string, st: LockState, events: OwnerEvents): PgOwner {
  const claimOnce = epochClaim(sql, tag);
  // Until the claim, this process holds the lock as no owner of record: it shows it is alive.
  const heartbeat = claimHeartbeat(sql);
  return {
    held: () => st.held && (st.lease === null || st.lease.valid()),
    claim: async (settings, onEnded) => {
      const claimSentAt = performance.now();
      const identity = await claimOnce.claim(settings.ms);
      heartbeat.stop();
      const epoch = Number(identity.epoch);
      st.lease = keepLease({ sql, tag, epoch, settings, claimSentAt, lockHeld: () => st.held, onEnded, log: events.log });
      return identity;
    },
    identity: claimOnce.identity,
    leaseState: () => st.lease?.state() ?? (st.held ? 'proven' : 'standing-by'),
    leaseLeftMs: () => st.lease?.provenMs() ?? 0,
    release: async () => {
      heartbeat.stop();
      st.released = true;
      st.held = false;
      st.lease?.stop();
      await sql.end({ timeout: 5 });
    },
  };
}

/** How a take waits: `wait` until the lock can be had (a standby), else TAKE_WAIT_MS. */
type TakeHow = {
  readonly tag: string;
  readonly wait: boolean;
  readonly events: Pick<OwnerEvents, 'log'>;
  readonly watch: LeaseWatch;
  readonly leaseMs: number;
  readonly signal?: AbortSignal;
  /** PostgreSQL answered a try (a waiting standby reports itself well again). */
  readonly onReached?: () => void;
  /** A standby back from trouble: how long it still only watches before it may take the lock (STANDBY_SETTLE_MS). */
  readonly settlingMs?: () => number;
};

/**
 * Asks for the lock for up to TAKE_WAIT_MS (or a lease and two polls, if longer: a lapsed owner is
 * ended only once its row has stayed lapsed that long). A holder that is `ours`, the session this
 * process took the lock on before, is ended: it would hold the lock until the server notices its
 * dead socket (if it cannot be ended, it is reported as the holder once the wait is over). Throws
 * when the server does not answer.
 *
 * A waiting process takes the lock only on a session connected for STANDBY_SETTLE_MS at least. A
 * try that waited for its connection (while PostgreSQL fails over no node is read-write, and
 * postgres.js holds the query until one is) reaches a server that is back only just now, as the
 * owner's own try to take its lock back does: a chaos run saw both held 11 s by a leader kill, the
 * standby's settle time passed meanwhile, and the standby took the lock 0.4 s before the owner.
 */
async function take(sql: postgres.Sql, ours: Session | null, how: TakeHow): Promise<Take> {
  const deadline = Date.now() + Math.max(TAKE_WAIT_MS, how.leaseMs + 2 * TAKE_RETRY_MS);
  const settleSeconds = STANDBY_SETTLE_MS / 1000;
  let waitLogged = false;
  for (;;) {
    how.signal?.throwIfAborted();
    if ((how.settlingMs?.() ?? 0) > 0) {
      // Back from trouble: only watch (the owner takes its own lock back meanwhile).
      await how.watch.look(sql);
      how.onReached?.();
      await delay(Math.min(TAKE_RETRY_MS, how.settlingMs?.() ?? 0));
      continue;
    }
    const [row] = await sql<{ ok: boolean | null; pid: number; backend_start: string; age_ms: number }[]>`
      SELECT CASE WHEN ${how.wait}::boolean AND a.backend_start > now() - make_interval(secs => ${settleSeconds}) THEN NULL
                  ELSE pg_try_advisory_lock(${OWNER_LOCK_KEY.toString()}::bigint) END AS ok,
             a.pid, a.backend_start::text AS backend_start, (extract(epoch FROM now() - a.backend_start) * 1000)::float8 AS age_ms
        FROM pg_stat_activity AS a WHERE a.pid = pg_backend_pid()`;
    if (row === undefined) throw new Error('the owner session is missing from pg_stat_activity');
    how.onReached?.();
    if (row.ok === true) return { kind: 'held', session: { pid: row.pid, backendStart: row.backend_start } };
    if (row.ok === null) {
      // A waiting process on a session too young to take the lock: it watches meanwhile.
      await how.watch.look(sql);
      await delay(Math.max(0, Math.min(TAKE_RETRY_MS, STANDBY_SETTLE_MS - row.age_ms)));
      continue;
    }
    const holder = await findHolder(sql);
    const ended = holder === null ? null : await endLapsedOwner(sql, holder, how);
    if (ended !== null) {
      how.events.log.info('the owner lease had passed: ended every session of the hung owner', ended);
      continue;
    }
    if (holder !== null && (await endUnclaimedHolder(sql, holder, how.tag))) {
      how.events.log.info('ended a holder of the owner lock that had not claimed the ownership and did not move', {
        holder: describeHolder(holder),
      });
      continue;
    }
    if (!how.wait && Date.now() >= deadline) return { kind: 'other', holder: describeHolder(holder) };
    if (how.wait && !waitLogged) {
      waitLogged = true;
      how.events.log.info('waiting for the ownership: the owner lock is held', { holder: describeHolder(holder) });
    }
    if (holder !== null && ours !== null && holder.pid === ours.pid && holder.backend_start_text === ours.backendStart) {
      await sql`SELECT pg_terminate_backend(${holder.pid}::int)`;
    }
    await delay(TAKE_RETRY_MS);
  }
}

async function findHolder(sql: postgres.Sql): Promise<Holder | null> {
  const rows = await sql<Holder[]>`
    SELECT a.pid, a.application_name, host(a.client_addr) AS client_addr, a.backend_start, a.backend_start::text AS backend_start_text
      FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.objsubid = 1 AND (l.classid::bigint << 32 | l.objid::bigint) = ${OWNER_LOCK_KEY.toString()}::bigint`;
  return rows[0] ?? null;
}

function describeHolder(r: Holder | null): string {
  if (r === null) return 'a session that has just let go of the owner lock (try again)';
  return `"${r.application_name}" (backend pid ${r.pid}, from ${r.client_addr ?? 'a local socket'}, connected ${r.backend_start.toISOString()})`;
}

/**
 * A tag no other process shares: pid, a random part (a pid is reused across hosts and restarts)
 * and the host, short enough to leave room in application_name for what the connection is for.
 */
function ownerTag(): string {
  return `transfer-${process.pid}-${randomBytes(3).toString('hex')}@${os.hostname().slice(0, 16)}`;
}
