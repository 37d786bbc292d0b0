// MON-004: a user sending transfers at an abnormal rate raises a WARNING alert (once per user
// per window). It only watches: limits that refuse are the rate limits.

import type { MiddlewareHandler } from 'hono';
import type { AlertSink } from '../../alerts/alerts.js';
import type { AuthEnv } from '../auth/auth.js';
import { UserWindows } from './user-windows.js';

export function frequencyWatch(opts: {
  alerts: AlertSink;
  perWindowMax: number;
  windowMs: number;
  now?: () => number;
}): MiddlewareHandler<AuthEnv> {
  const windows = new UserWindows(opts.windowMs, opts.now);
  return async function frequencyWatchMiddleware(c, next) {
    if (opts.perWindowMax > 0 && c.req.method === 'POST') {
      const user = c.get('claims').userId;
      const w = windows.hit(user);
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
