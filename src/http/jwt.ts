// HS256 JSON Web Tokens, verified with node:crypto. Only HS256 is accepted (never `none`),
// `exp` is required, and `sub` must be a user id in decimal. Verification answers a value.

import { createHmac, timingSafeEqual } from 'node:crypto';
import { USER_ID_MAX } from '../domain/checks.js';

export type Claims = { readonly userId: bigint; readonly role: 'user' | 'admin'; readonly exp: number };
export type Verified = { readonly ok: true; readonly claims: Claims } | { readonly ok: false; readonly reason: string };

const TOKEN_LENGTH_MAX = 4_096;
const USER_ID_TEXT = /^[1-9][0-9]{0,18}$/;

export function verifyJwt(token: string, secret: string, nowSeconds: number = Date.now() / 1000): Verified {
  if (token.length > TOKEN_LENGTH_MAX) return { ok: false, reason: 'token too long' };
  const parts = token.split('.');
  if (parts.length !== 3) return { ok: false, reason: 'malformed token' };
  const [headerText, payloadText, signature] = parts as [string, string, string];
  const header = decodeJson(headerText);
  if (header === null || header.alg !== 'HS256' || (header.typ !== undefined && header.typ !== 'JWT')) {
    return { ok: false, reason: 'unsupported token algorithm' };
  }
  const expected = sign(`${headerText}.${payloadText}`, secret);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'bad signature' };
  const payload = decodeJson(payloadText);
  if (payload === null) return { ok: false, reason: 'malformed payload' };
  if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp)) return { ok: false, reason: 'exp required' };
  if (payload.exp <= nowSeconds) return { ok: false, reason: 'token expired' };
  if (typeof payload.nbf === 'number' && payload.nbf > nowSeconds) return { ok: false, reason: 'token not yet valid' };
  if (typeof payload.sub !== 'string' || !USER_ID_TEXT.test(payload.sub)) return { ok: false, reason: 'sub must be a user id' };
  const userId = BigInt(payload.sub);
  if (userId > USER_ID_MAX) return { ok: false, reason: 'sub out of range' };
  const role = payload.role === 'admin' ? 'admin' : 'user';
  return { ok: true, claims: { userId, role, exp: payload.exp } };
}

/** Signs claims with HS256: for the development token `make run` prints, and for tests. */
export function signJwt(claims: { sub: string; exp: number; role?: string }, secret: string): string {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${header}.${payload}.${sign(`${header}.${payload}`, secret).toString('base64url')}`;
}

function sign(input: string, secret: string): Buffer {
  return createHmac('sha256', secret).update(input).digest();
}

function decodeJson(part: string): Record<string, unknown> | null {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
