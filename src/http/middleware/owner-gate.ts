// Rule 7 at the HTTP edge: a process answers clients only while it can prove it owns the ledger,
// its owner lock held and its lease proven (src/ownership/lease.ts). Once either is in doubt (the
// lock session closed and is being taken again; a renewal failed and the lease is `standing-by`),
// another process may own the ledger already, or soon: what this one holds in memory (SPOT
// balances, a transfer's state, the halt) may be stale, so it answers every request 503
// OWNER_LEASE_UNPROVEN with `"owner": false`, reads included, until a renewal proves the lease
// again. Only the probes answer: GET /healthz (alive) and GET /readyz, which says why it is not
// ready. A lease that `lapsed` unnoticed never gets here: lease-guard.ts, outermost, answers
// nothing and stops the process.

import type { Context, MiddlewareHandler } from 'hono';
import type { LeaseState } from '../../ownership/lease.js';
import { fail } from '../errors.js';

type OwnerGateOptions = {
  /** Whether this process holds the owner lock now (and, once claimed, its lease is proven). */
  readonly held: () => boolean;
  /** The owner lease's state now. */
  readonly leaseState: () => LeaseState;
};

/** The probes, answered whatever the ownership: an orchestrator must see the process alive, and why it is not ready. */
const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz']);
const PROBE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

/** Whether the request is a probe (GET or HEAD of /healthz or /readyz). */
export function isProbe(c: Context): boolean {
  return PROBE_PATHS.has(c.req.path) && PROBE_METHODS.has(c.req.method);
}

/** Whether this process may answer now: the owner lock held and the lease proven. */
export function ownsLedger(opts: OwnerGateOptions): boolean {
  return opts.held() && opts.leaseState() === 'proven';
}

/** Why it may not, for /readyz and the log; null while it may. */
export function ownerReason(opts: OwnerGateOptions): string | null {
  const lease = opts.leaseState();
  if (lease !== 'proven') return `the owner lease is ${lease}: a renewal failed and none has proven it again since`;
  if (!opts.held()) return 'the owner lock is not held: its session closed and the lock is being taken again';
  return null;
}

/** The refusal of a process that cannot prove it owns the ledger now: 503 OWNER_LEASE_UNPROVEN. */
export function unprovenAnswer(c: Context, lease: LeaseState): Response {
  return fail(c, 'OWNER_LEASE_UNPROVEN', { owner: false, lease });
}

export function ownerGate(opts: OwnerGateOptions): MiddlewareHandler {
  return async function ownerGateMiddleware(c, next) {
    if (!isProbe(c) && !ownsLedger(opts)) return unprovenAnswer(c, opts.leaseState());
    await next();
  };
}
