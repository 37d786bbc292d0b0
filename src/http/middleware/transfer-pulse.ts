// Feeds the console's last-minute pace: one O(1) record per POST /internal_transfer answered,
// with its latency (timed once, by request-timing.ts) and status. Reads and other routes are not
// transfers and are not counted.

import type { MiddlewareHandler } from 'hono';
import type { Pulse } from '../../metrics/pulse.js';
import { onTimed } from './request-timing.js';

export function transferPulse(opts: { pulse: Pulse }): MiddlewareHandler {
  return async function transferPulseMiddleware(c, next) {
    if (c.req.method !== 'POST') return next();
    onTimed(c, (ms) => opts.pulse.record(ms, c.res.status));
    return next();
  };
}
