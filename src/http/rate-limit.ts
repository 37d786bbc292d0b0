// Requests per user per second (spec 001 §1.5.6), counted in one-second windows in memory.
// The map of users is bounded: past USERS_TRACKED_MAX, windows that have ended are dropped.

import type { MiddlewareHandler } from 'hono';
import type { AuthEnv } from './auth.js';
import { fail } from './errors.js';

const WINDOW_MS = 1_000;
const USERS_TRACKED_MAX = 100_000;

type Window = { start: number; count: number };

export function perUserRateLimit(opts: { perSecond: number; now?: () => number }): MiddlewareHandler<AuthEnv> {
  const now = opts.now ?? Date.now;
  const windows = new Map<bigint, Window>();
  return async function perUserRateLimitMiddleware(c, next) {
    if (opts.perSecond > 0) {
      const t = now();
      const user = c.get('claims').userId;
      let window = windows.get(user);
      if (window === undefined || t - window.start >= WINDOW_MS) {
        if (window === undefined && windows.size >= USERS_TRACKED_MAX) sweep(windows, t);
        window = { start: t, count: 0 };
        windows.set(user, window);
      }
      window.count += 1;
      if (window.count > opts.perSecond) return fail(c, 'RATE_LIMIT_EXCEEDED');
    }
    await next();
    return undefined;
  };
}

function sweep(windows: Map<bigint, Window>, t: number): void {
  for (const [user, window] of windows) if (t - window.start >= WINDOW_MS) windows.delete(user);
  // Every tracked user is active within the second: forget the oldest rather than grow.
  if (windows.size >= USERS_TRACKED_MAX) windows.delete(windows.keys().next().value as bigint);
}
