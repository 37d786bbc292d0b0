// A JSON Web Key Set turned into the keys the service accepts, by `kid`: RS256 (RSA), ES256 (EC
// P-256) and EdDSA (OKP Ed25519) public keys, each imported once here rather than on every token.
// Keys for other uses or algorithms are skipped (an identity provider's set often holds them);
// a key that claims one of ours but does not import, a private key, a missing or repeated `kid`,
// or a set with no usable key is an error naming the key.

import { importJWK, type CryptoKey, type JWK } from 'jose';
import { JWKS_KEYS_MAX, KID_LENGTH_MAX } from '../../limits.js';
import { errorText } from '../../error-text.js';

export const JWKS_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const;
export type JwksAlgorithm = (typeof JWKS_ALGORITHMS)[number];

export type JwksKey = { readonly kid: string; readonly alg: JwksAlgorithm; readonly key: CryptoKey };
type ParsedJwks = { readonly keys: ReadonlyMap<string, JwksKey>; readonly skipped: number };

export class JwksError extends Error {
  override readonly name = 'JwksError';
}

export async function parseJwks(text: string): Promise<ParsedJwks> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new JwksError('the JWKS is not JSON');
  }
  const list = typeof json === 'object' && json !== null ? (json as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(list)) throw new JwksError('the JWKS has no "keys" array');
  if (list.length > JWKS_KEYS_MAX) throw new JwksError(`the JWKS holds ${list.length} keys, more than ${JWKS_KEYS_MAX}`);
  const keys = new Map<string, JwksKey>();
  let skipped = 0;
  for (const [index, raw] of list.entries()) {
    const key = await importOne(raw, index);
    if (key === null) {
      skipped++;
      continue;
    }
    if (keys.has(key.kid)) throw new JwksError(`the JWKS holds kid ${JSON.stringify(key.kid)} twice`);
    keys.set(key.kid, key);
  }
  if (keys.size === 0) throw new JwksError(`the JWKS holds no ${JWKS_ALGORITHMS.join(', ')} signing key with a kid`);
  return { keys, skipped };
}

async function importOne(raw: unknown, index: number): Promise<JwksKey | null> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new JwksError(`JWKS key ${index} is not an object`);
  const jwk = raw as JWK;
  if (jwk.use !== undefined && jwk.use !== 'sig') return null;
  const alg = algorithmOf(jwk);
  if (alg === null) return null;
  const name = `JWKS key ${index}`;
  if (typeof jwk.kid !== 'string' || jwk.kid.length === 0 || jwk.kid.length > KID_LENGTH_MAX)
    throw new JwksError(`${name} (${alg}) has no kid`);
  if ('d' in jwk || 'p' in jwk || 'k' in jwk)
    throw new JwksError(`${name} (kid ${JSON.stringify(jwk.kid)}) holds private or secret material: publish public keys only`);
  try {
    const key = await importJWK({ ...jwk, ext: true }, alg);
    if (key instanceof Uint8Array || key.type !== 'public') throw new JwksError('not a public key');
    return { kid: jwk.kid, alg, key };
  } catch (error) {
    throw new JwksError(`${name} (kid ${JSON.stringify(jwk.kid)}, ${alg}) does not import: ${errorText(error)}`);
  }
}

/** The algorithm a key is for: its own `alg`, or what its type and curve allow. Null: not ours. */
function algorithmOf(jwk: JWK): JwksAlgorithm | null {
  if (jwk.alg !== undefined) return (JWKS_ALGORITHMS as readonly string[]).includes(jwk.alg) ? (jwk.alg as JwksAlgorithm) : null;
  if (jwk.kty === 'RSA') return 'RS256';
  if (jwk.kty === 'EC' && jwk.crv === 'P-256') return 'ES256';
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') return 'EdDSA';
  return null;
}
