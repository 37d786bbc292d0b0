// Every answer names the owner epoch of the process that made it, in the header x-owner-epoch, so
// a client, or a checker of everything clients were told, can judge an answer that arrived late:
// one made under an epoch older than a claim already seen came from a superseded owner. The epoch
// is read as the answer leaves, after the routes made it; `none` while the process has none.

import type { MiddlewareHandler } from 'hono';

export const OWNER_EPOCH_HEADER = 'x-owner-epoch';

type OwnerEpochOptions = {
  /** The epoch this process claimed, or null while it has none. */
  readonly epoch: () => number | null;
};

export function ownerEpoch(opts: OwnerEpochOptions): MiddlewareHandler {
  return async function ownerEpochMiddleware(c, next) {
    await next();
    c.header(OWNER_EPOCH_HEADER, String(opts.epoch() ?? 'none'));
  };
}
