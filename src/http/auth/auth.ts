// Bearer-token middleware: factories taking their options, each returning one named function
// with its own bounded cache of verified tokens (verified-tokens.ts). The scheme name is
// case-insensitive (RFC 9110 §11.1): `Bearer`, `bearer` and `BEARER` are one scheme.
// A user route needs `sub` to be a user id in decimal; an admin route needs `"role": "admin"` and
// takes any `sub` as the operator's name (`ops-alice`), which it hands on as c.get('operator').

import type { MiddlewareHandler } from 'hono';
import { parseUserId } from '../../domain/checks.js';
import { fail } from '../errors.js';
import type { Claims } from './jwt-claims.js';
import type { TokenVerifier } from './token-verifier.js';
import { VerifiedTokens } from './verified-tokens.js';

type UserClaims = { readonly userId: bigint; readonly role: 'user' | 'admin'; readonly exp: number };
/** User routes: the caller's user id. */
export type AuthEnv = { Variables: { claims: UserClaims } };
/** Admin routes: the operator's name, the token's `sub` as it is. */
export type AdminEnv = { Variables: { operator: string } };

const BEARER = /^bearer +([A-Za-z0-9_.-]+) *$/i;

export function userAuth(opts: { tokens: TokenVerifier }): MiddlewareHandler<AuthEnv> {
  const verified = new VerifiedTokens({ verify: (token, nowS) => opts.tokens.verify(token, nowS) });
  return async function userAuthMiddleware(c, next) {
    const claims = await bearerClaims(c.req.header('authorization'), verified);
    if (claims === null) return fail(c, 'UNAUTHORIZED');
    const userId = parseUserId(claims.subject);
    if (userId === null) return fail(c, 'UNAUTHORIZED');
    c.set('claims', { userId, role: claims.role, exp: claims.exp });
    await next();
    return undefined;
  };
}

export function adminAuth(opts: { tokens: TokenVerifier }): MiddlewareHandler<AdminEnv> {
  const verified = new VerifiedTokens({ verify: (token, nowS) => opts.tokens.verify(token, nowS) });
  return async function adminAuthMiddleware(c, next) {
    const claims = await bearerClaims(c.req.header('authorization'), verified);
    if (claims === null) return fail(c, 'UNAUTHORIZED');
    if (claims.role !== 'admin') return fail(c, 'FORBIDDEN');
    c.set('operator', claims.subject);
    await next();
    return undefined;
  };
}

async function bearerClaims(header: string | undefined, verified: VerifiedTokens): Promise<Claims | null> {
  const match = BEARER.exec(header ?? '');
  if (match === null) return null;
  const result = await verified.verify(match[1] as string);
  return result.ok ? result.claims : null;
}
