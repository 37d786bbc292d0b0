// HS256 JSON Web Tokens, verified with node:crypto: the header must say HS256 (never `none`),
// the signature must match the secret, then the claims are read as for every token
// (jwt-claims.ts). Verification answers a value.

import { createHmac, timingSafeEqual } from 'node:crypto';
import { decodeJsonPart, NO_CLAIMS_POLICY, readClaims, refused, type ClaimsPolicy, type Verified } from './jwt-claims.js';
import { TOKEN_LENGTH_MAX } from '../../limits.js';

export type { Claims, Verified } from './jwt-claims.js';

/** `typ` is optional; when present it says JWT (RFC 7519) or an access token (RFC 9068). */
export function typAccepted(typ: unknown): boolean {
  return typ === undefined || (typeof typ === 'string' && ['jwt', 'at+jwt', 'application/at+jwt'].includes(typ.toLowerCase()));
}

export function verifyJwt(
  token: string,
  secret: string,
  nowSeconds: number = Date.now() / 1000,
  policy: ClaimsPolicy = NO_CLAIMS_POLICY,
): Verified {
  if (token.length > TOKEN_LENGTH_MAX) return refused('token too long');
  const parts = token.split('.');
  if (parts.length !== 3) return refused('malformed token');
  const [headerText, payloadText, signature] = parts as [string, string, string];
  const header = decodeJsonPart(headerText);
  if (header === null || header.alg !== 'HS256' || !typAccepted(header.typ)) return refused('unsupported token algorithm');
  const expected = sign(`${headerText}.${payloadText}`, secret);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return refused('bad signature');
  const payload = decodeJsonPart(payloadText);
  if (payload === null) return refused('malformed payload');
  return readClaims(payload, policy, nowSeconds, null);
}

/** Signs claims with HS256: for the development tokens `make run` prints, and for tests. */
export function signJwt(claims: { sub: string; exp: number; role?: string; iss?: string; aud?: string }, secret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${header}.${payload}.${sign(`${header}.${payload}`, secret).toString('base64url')}`;
}

function sign(input: string, secret: string): Buffer {
  return createHmac('sha256', secret).update(input).digest();
}
