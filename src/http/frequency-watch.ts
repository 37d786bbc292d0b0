// MON-004: a user sending transfers at an abnormal rate raises a WARNING alert (once per user
// per window). It only watches: limits that refuse are the rate limits. Memory is bounded.

import type { MiddlewareHandler } from 'hono';
import type { AlertSink } from '../alerts/alerts.js';
import type { AuthEnv } from './auth.js';

const USERS_TRACKED_MAX = 100_000;

type Window = { start: number; count: number; alerted: boolean };

export function frequencyWatch(opts: { alerts: AlertSink; perWindowMax: number; windowMs: number; now?: () => number }): MiddlewareHandler<AuthEnv> {
  const now = opts.now ?? Date.now;
  const windows = new Map<bigint, Window>();
  return async function frequencyWatchMiddleware(c, next) {
    if (opts.perWindowMax > 0 && c.req.method === 'POST') {
      const t = now();
      const user = c.get('claims').userId;
      let w = windows.get(user);
      if (w === undefined || t - w.start >= opts.windowMs) {
        if (w === undefined && windows.size >= USERS_TRACKED_MAX) windows.clear();
        w = { start: t, count: 0, alerted: false };
        windows.set(user, w);
      }
      w.count += 1;
      if (w.count > opts.perWindowMax && !w.alerted) {
        w.alerted = true;
        void opts.alerts
          .raise({
            kind: 'ABNORMAL_FREQUENCY',
            reqId: null,
            userId: user,
            message: `user sent more than ${opts.perWindowMax} transfers within ${opts.windowMs} ms`,
            details: { count: w.count, window_ms: opts.windowMs },
            dedupeKey: `${user}@${w.start}`,
          })
          .catch(() => undefined);
      }
    }
    await next();
    return undefined;
  };
}
