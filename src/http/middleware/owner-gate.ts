// Rule 7 at the HTTP edge (issue 12 item 4). While this process does not hold the database's
// owner lock (its connection closed and the lock is being taken again), another process could
// own the ledger, so no new work is taken: every mutating request (anything but GET, HEAD and
// OPTIONS) is answered 503 SERVICE_UNAVAILABLE with `"owner": false`. Reads go on; /readyz says
// why it is not ready. Work resumes once the lock is held again.

import type { MiddlewareHandler } from 'hono';
import { fail } from '../errors.js';

type OwnerGateOptions = {
  /** Whether this process holds the owner lock now. */
  readonly held: () => boolean;
};

const READ_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

export function ownerGate(opts: OwnerGateOptions): MiddlewareHandler {
  return async function ownerGateMiddleware(c, next) {
    if (!READ_METHODS.has(c.req.method) && !opts.held()) return fail(c, 'SERVICE_UNAVAILABLE', { owner: false });
    await next();
  };
}
