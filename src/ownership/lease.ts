// The owner's lease (rule 7). After its claim the owner renews `ledger_owner.lease_until`
// every LEASE_RENEW_MS on its lock session, and only while that epoch is still its own. It keeps
// a local proof too, on the monotonic clock: the lease is proven until the send time of the last
// renewal that succeeded + LEASE_MS - a margin. The server set lease_until from a later instant
// (when the statement ran), so the local proof always ends first: once another process may take
// over (lease_until < now() by the server's clock), this one has already stopped answering.
//
// Three states. `proven`: the owner may work and answer. `standing-by`: the proof ended, but the
// process kept running (its renewal timer came every period): a renewal is slow (a transaction
// holds ledger_owner's row, PostgreSQL is paused or restarting) or failed, and the process knows
// its proof ended, so it answers nothing that needs the lease (the HTTP edge refuses with 503)
// while it renews again. A late renewal that still finds its own epoch proves the lease again:
// the lease_until it wrote is the server's word that no other process could have taken over.
// `lapsed`: the process did not run for a whole lease (it was stopped with SIGSTOP, or its event
// loop blocked past LEASE_MS): its work in flight would resume after another owner may have taken
// over, as a failover drill saw (answering COMMITTED 186 ms after a promotion), so it must stop
// at once, answering nothing more. Only that gap, or a renewal that finds another epoch (0 rows:
// the ownership is gone), ends the process; a slow or failed renewal never does.

import { performance } from 'node:perf_hooks';
import type postgres from 'postgres';

/**
 * The local proof ends LEASE_MS / 10 before the lease it renewed (200 ms of 2 s): room for
 * clocks that run at slightly different rates and for the moment between the last check of an
 * answer and its bytes leaving.
 */
const MARGIN_DIVISOR = 10;

export type LeaseState = 'proven' | 'standing-by' | 'lapsed';

export type LeaseSettings = {
  /** LEASE_MS: how long a renewal extends the lease. */
  readonly ms: number;
  /** LEASE_RENEW_MS: how often the owner renews; under ms / 3. */
  readonly renewMs: number;
};

export type OwnerLease = {
  /** Whether the lease is proven now: only until (send time of the last good renewal) + LEASE_MS - margin. */
  readonly valid: () => boolean;
  readonly state: () => LeaseState;
  /** Milliseconds of proven lease left now (0 once the proof ended): what an operator sees as the lease. */
  readonly provenMs: () => number;
  /** The lock session closed: the renewal in flight on it will not prove anything; logged, the next one is sent on the new session. */
  readonly lost: () => void;
  readonly stop: () => void;
};

type LeaseOptions = {
  readonly sql: postgres.Sql;
  readonly tag: string;
  readonly epoch: number;
  readonly settings: LeaseSettings;
  /** performance.now() when the claim that set the first lease was sent. */
  readonly claimSentAt: number;
  /** Whether the lock session is open and holds the lock: renewals run on it only then. */
  readonly lockHeld: () => boolean;
  /** The process no longer owns the ledger (superseded, or the lease lapsed unnoticed): it must stop. */
  readonly onEnded: (reason: string) => void;
  readonly log: { readonly info: (message: string, fields?: Record<string, unknown>) => void };
};

/** Starts renewing the lease claimed at `claimSentAt`; `stop` ends the renewals (release, process stop). */
export function keepLease(opts: LeaseOptions): OwnerLease {
  const { ms, renewMs } = opts.settings;
  const margin = Math.ceil(ms / MARGIN_DIVISOR);
  let provenUntil = opts.claimSentAt + ms - margin;
  /** Renewals that failed or were seen unanswered since the last good one (logged when one proves the lease again). */
  let failures = 0;
  let inFlight = false;
  let stopped = false;
  /** When the renewal timer last ran: a gap of a whole lease is a process that was not running. */
  let lastTickAt = performance.now();

  const valid = () => performance.now() < provenUntil;
  // Only the gap since the last tick tells lapsed from standing-by: while the timer kept coming,
  // the process knew when its proof ended, however long a renewal takes.
  const state = (): LeaseState => {
    if (valid()) return 'proven';
    return performance.now() - lastTickAt < ms ? 'standing-by' : 'lapsed';
  };
  const noticeFailure = () => {
    failures += 1;
  };
  const end = (reason: string) => {
    if (stopped) return;
    stop();
    opts.onEnded(reason);
  };

  const renew = () => {
    inFlight = true;
    const sentAt = performance.now();
    const seconds = ms / 1000;
    opts.sql<{ epoch: string }[]>`
      UPDATE ledger_owner SET lease_until = now() + make_interval(secs => ${seconds})
       WHERE epoch = ${opts.epoch} AND owner = ${opts.tag} RETURNING epoch::text AS epoch`.then(
      (rows) => {
        inFlight = false;
        if (rows.length === 0) return end(`the owner epoch ${opts.epoch} was superseded: another process owns the ledger now`);
        // From the send time, not the answer's: the server may have set lease_until any time in
        // between. An answer so late that this is already past proves nothing new; the next
        // renewal, sent now, will.
        const wasValid = valid();
        provenUntil = Math.max(provenUntil, sentAt + ms - margin);
        if (!wasValid && valid()) opts.log.info('the owner lease is proven again: the epoch is still ours', { failures });
        if (valid()) failures = 0;
      },
      (error: unknown) => {
        inFlight = false;
        noticeFailure();
        opts.log.info('the owner lease could not be renewed', { error: String(error) });
      },
    );
  };

  const tick = () => {
    if (stopped) return;
    if (state() === 'lapsed')
      return end(`the owner lease lapsed unnoticed (the process was stopped or its event loop blocked past LEASE_MS ${ms} ms)`);
    lastTickAt = performance.now();
    // A renewal still unanswered after a whole period, or no lock session to send one on: failing.
    if (inFlight || !opts.lockHeld()) return noticeFailure();
    renew();
  };

  const timer = setInterval(tick, renewMs);
  timer.unref();
  function stop(): void {
    stopped = true;
    clearInterval(timer);
  }
  const provenMs = () => Math.max(0, provenUntil - performance.now());
  return { valid, state, provenMs, lost: noticeFailure, stop };
}
