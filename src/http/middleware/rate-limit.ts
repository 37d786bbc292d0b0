// Requests per user per second (spec 001 §1.5.6), refused with RATE_LIMIT_EXCEEDED.

import type { MiddlewareHandler } from 'hono';
import type { AuthEnv } from '../auth/auth.js';
import { fail } from '../errors.js';
import { UserWindows } from './user-windows.js';

const WINDOW_MS = 1_000;

export function perUserRateLimit(opts: { perSecond: number; now?: () => number }): MiddlewareHandler<AuthEnv> {
  const windows = new UserWindows(WINDOW_MS, opts.now);
  return async function perUserRateLimitMiddleware(c, next) {
    if (opts.perSecond > 0 && windows.hit(c.get('claims').userId).count > opts.perSecond) return fail(c, 'RATE_LIMIT_EXCEEDED');
    await next();
    return undefined;
  };
}
