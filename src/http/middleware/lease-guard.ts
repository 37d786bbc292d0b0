// Rule 7 at the last moment: a process whose owner lease lapsed without its
// noticing (it was stopped with SIGSTOP, or its event loop blocked, past the lease) may have been
// replaced by another owner meanwhile, so it must not send one more answer. Every answer is
// checked here, the outermost layer, once the routes have made it, and again as the server
// writes its bytes; a request is checked as it arrives too. A lapsed lease destroys the connection
// without an answer and stops the process. Lapsed means only that: the process did not run for a
// whole lease. A process that kept running while a renewal was slow or failing stands by and is
// not stopped here: owner-gate.ts answers its requests 503 OWNER_LEASE_UNPROVEN, but for the
// probes, until a late renewal that still finds its epoch proves the lease again.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { MiddlewareHandler } from 'hono';
import type { LeaseState } from '../../ownership/lease.js';

type LeaseGuardOptions = {
  readonly state: () => LeaseState;
  /** Stops the process (the fatal stop): called once the connection is destroyed. */
  readonly onLapsed: (reason: string) => void;
};

export function leaseGuard(opts: LeaseGuardOptions): MiddlewareHandler {
  return async function leaseGuardMiddleware(c, next) {
    let refused = false;
    const refuse = (reason: string) => {
      if (refused) return;
      refused = true;
      unanswered(c.env, opts, reason);
    };
    if (opts.state() === 'lapsed') return refuse('a request arrived after the owner lease lapsed unnoticed');
    guardWrites(c.env, opts, refuse);
    await next();
    if (opts.state() === 'lapsed') refuse('an answer was ready after the owner lease lapsed unnoticed: not sent');
  };
}

/**
 * The last check, as the answer's bytes are written. node-server writes them after this
 * middleware has returned, a few awaits later: a process stopped there (a SIGSTOP in a burst of
 * answers that one group commit released) sent them all the moment it ran again, after its
 * successor was promoted (a failover drill saw four 200s 0.43 s after the promotion). Checked at
 * each write, what is left is the write call itself.
 */
function guardWrites(env: unknown, opts: LeaseGuardOptions, refuse: (reason: string) => void): void {
  const outgoing = (env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (outgoing === undefined) return;
  const lapsed = () => {
    if (opts.state() !== 'lapsed') return false;
    refuse('an answer was being written after the owner lease lapsed unnoticed: not sent');
    return true;
  };
  const { write, end, flushHeaders } = outgoing;
  outgoing.write = function guardedWrite(this: ServerResponse, ...args: Parameters<ServerResponse['write']>) {
    return lapsed() ? false : write.apply(this, args);
  } as ServerResponse['write'];
  outgoing.end = function guardedEnd(this: ServerResponse, ...args: Parameters<ServerResponse['end']>) {
    return lapsed() ? this : end.apply(this, args);
  } as ServerResponse['end'];
  outgoing.flushHeaders = function guardedFlushHeaders(this: ServerResponse) {
    if (!lapsed()) flushHeaders.call(this);
  };
}

/** Destroys the request's connection (node-server gives `{ incoming, outgoing }` as env), then stops. */
function unanswered(env: unknown, opts: LeaseGuardOptions, reason: string): void {
  const incoming = (env as { incoming?: IncomingMessage } | undefined)?.incoming;
  incoming?.socket.destroy();
  opts.onLapsed(reason);
}
