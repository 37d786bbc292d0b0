// The claims every accepted token must carry, whatever signed it (HS256 or a JWKS key): `exp`
// required and in the future, `nbf` passed when present, `iss` and `aud` equal to the configured
// ones when configured, and a `sub`. A user route then needs `sub` to be a user id; an admin route
// takes any `sub` as the operator's name (auth.ts). Reading answers a value, never throws.

export type ClaimsPolicy = {
  /** When set, `iss` must equal it. */
  readonly issuer: string | null;
  /** When set, `aud` (a string or an array of strings) must hold it. */
  readonly audience: string | null;
};

export const NO_CLAIMS_POLICY: ClaimsPolicy = { issuer: null, audience: null };

export type Claims = { readonly subject: string; readonly role: 'user' | 'admin'; readonly exp: number };

/**
 * The key set a token was verified against, and its generation then: a cached verification is
 * trusted only while the set has not changed since (verified-tokens.ts). Null for HS256, whose
 * secret never changes while the process runs.
 */
export type KeyEpoch = { readonly source: { readonly generation: number }; readonly generation: number };

export type Verified =
  | { readonly ok: true; readonly claims: Claims; readonly keyEpoch: KeyEpoch | null }
  | { readonly ok: false; readonly reason: string };

/** Printable ASCII without spaces: a user id, `ops-alice`, an e-mail address, a UUID. */
const SUBJECT = /^[\x21-\x7e]{1,128}$/;

export function refused(reason: string): Verified {
  return { ok: false, reason };
}

export function readClaims(payload: Record<string, unknown>, policy: ClaimsPolicy, nowS: number, keyEpoch: KeyEpoch | null): Verified {
  if (typeof payload.exp !== 'number' || !Number.isFinite(payload.exp)) return refused('exp required');
  if (payload.exp <= nowS) return refused('token expired');
  if (payload.nbf !== undefined && (typeof payload.nbf !== 'number' || !Number.isFinite(payload.nbf)))
    return refused('nbf must be a number');
  if (typeof payload.nbf === 'number' && payload.nbf > nowS) return refused('token not yet valid');
  if (policy.issuer !== null && payload.iss !== policy.issuer) return refused('wrong issuer');
  if (policy.audience !== null && !holdsAudience(payload.aud, policy.audience)) return refused('wrong audience');
  if (typeof payload.sub !== 'string' || !SUBJECT.test(payload.sub)) return refused('sub required');
  const role = payload.role === 'admin' ? 'admin' : 'user';
  return { ok: true, claims: { subject: payload.sub, role, exp: payload.exp }, keyEpoch };
}

function holdsAudience(aud: unknown, audience: string): boolean {
  if (typeof aud === 'string') return aud === audience;
  return Array.isArray(aud) && aud.includes(audience);
}

/** A base64url JSON object, or null. */
export function decodeJsonPart(part: string): Record<string, unknown> | null {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) return null;
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
