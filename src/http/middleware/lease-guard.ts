// Rule 7 at the last moment: a process whose owner lease lapsed without its
// noticing (it was stopped with SIGSTOP, or its event loop blocked, past the lease) may have been
// replaced by another owner meanwhile, so it must not send one more answer. Every answer is
// checked here, the outermost layer, once the routes have made it and just before the server
// writes it; a request is checked as it arrives too. A lapsed lease destroys the connection
// without an answer and stops the process. Lapsed means only that: the process did not run for a
// whole lease. A process that kept running while a renewal was slow or failing stands by and is
// not stopped here: owner-gate.ts answers its requests 503 OWNER_LEASE_UNPROVEN, but for the
// probes, until a late renewal that still finds its epoch proves the lease again.

import type { IncomingMessage } from 'node:http';
import type { MiddlewareHandler } from 'hono';
import type { LeaseState } from '../../ownership/lease.js';

type LeaseGuardOptions = {
  readonly state: () => LeaseState;
  /** Stops the process (the fatal stop): called once the connection is destroyed. */
  readonly onLapsed: (reason: string) => void;
};

export function leaseGuard(opts: LeaseGuardOptions): MiddlewareHandler {
  return async function leaseGuardMiddleware(c, next) {
    if (opts.state() === 'lapsed') return unanswered(c.env, opts, 'a request arrived after the owner lease lapsed unnoticed');
    await next();
    if (opts.state() === 'lapsed') unanswered(c.env, opts, 'an answer was ready after the owner lease lapsed unnoticed: not sent');
  };
}

/** Destroys the request's connection (node-server gives `{ incoming, outgoing }` as env), then stops. */
function unanswered(env: unknown, opts: LeaseGuardOptions, reason: string): void {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  incoming?.socket.destroy();
  opts.onLapsed(reason);
}
