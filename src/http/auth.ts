// Bearer-token middleware: a factory taking its options, returning one named function. Each
// keeps its own bounded cache of verified tokens (verified-tokens.ts).

import type { MiddlewareHandler } from 'hono';
import { fail } from './errors.js';
import type { Claims } from './jwt.js';
import { VerifiedTokens } from './verified-tokens.js';

export type AuthEnv = { Variables: { claims: Claims } };

export function bearerAuth(opts: { secret: string; role?: 'admin' }): MiddlewareHandler<AuthEnv> {
  const tokens = new VerifiedTokens({ secret: opts.secret });
  return async function bearerAuthMiddleware(c, next) {
    const header = c.req.header('authorization') ?? '';
    const match = /^Bearer ([A-Za-z0-9_.-]+)$/.exec(header);
    if (match === null) return fail(c, 'UNAUTHORIZED');
    const verified = tokens.verify(match[1] as string);
    if (!verified.ok) return fail(c, 'UNAUTHORIZED');
    if (opts.role === 'admin' && verified.claims.role !== 'admin') return fail(c, 'FORBIDDEN');
    c.set('claims', verified.claims);
    await next();
    return undefined;
  };
}
