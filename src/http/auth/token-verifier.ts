// One verifier for every bearer token: the header's `alg` picks the way. HS256 is checked against
// JWT_SECRET (when HS256 is enabled); RS256, ES256 and EdDSA against the JWKS key named by the
// token's `kid` (required), whose own algorithm must be the header's, so a key is never used for
// another algorithm. Every other `alg`, `none` included, is refused. The claims are then read the
// same way for both (jwt-claims.ts). Answers a value, never throws.

import { compactVerify } from 'jose';
import { decodeJsonPart, readClaims, refused, type ClaimsPolicy, type Verified } from './jwt-claims.js';
import { typAccepted, verifyJwt } from './jwt.js';
import { JWKS_ALGORITHMS } from './jwks-keys.js';
import type { JwksSource } from './jwks-source.js';
import { TOKEN_LENGTH_MAX } from '../../limits.js';

type TokenVerifierOptions = {
  /** Null: HS256 tokens are refused. */
  readonly hs256Secret: string | null;
  /** Null: RS256, ES256 and EdDSA tokens are refused. */
  readonly jwks: JwksSource | null;
  readonly policy: ClaimsPolicy;
};

export class TokenVerifier {
  constructor(private readonly opts: TokenVerifierOptions) {
    if (opts.hs256Secret === null && opts.jwks === null) throw new Error('a token verifier needs an HS256 secret or a JWKS');
  }

  /** An HS256 token is answered at once; a JWKS one needs WebCrypto, and maybe a reload. */
  verify(token: string, nowS: number): Verified | Promise<Verified> {
    if (token.length > TOKEN_LENGTH_MAX) return refused('token too long');
    const parts = token.split('.');
    if (parts.length !== 3) return refused('malformed token');
    const header = decodeJsonPart(parts[0] as string);
    if (header === null || !typAccepted(header.typ)) return refused('malformed header');
    if (header.alg === 'HS256') {
      return this.opts.hs256Secret === null
        ? refused('HS256 is not accepted')
        : verifyJwt(token, this.opts.hs256Secret, nowS, this.opts.policy);
    }
    if (typeof header.alg === 'string' && (JWKS_ALGORITHMS as readonly string[]).includes(header.alg) && this.opts.jwks !== null) {
      return verifyWithJwks(token, header, this.opts.jwks, this.opts.policy, nowS);
    }
    return refused('unsupported token algorithm');
  }
}

async function verifyWithJwks(
  token: string,
  header: Record<string, unknown>,
  jwks: JwksSource,
  policy: ClaimsPolicy,
  nowS: number,
): Promise<Verified> {
  if (typeof header.kid !== 'string' || header.kid === '') return refused('kid required');
  let ring = jwks.current();
  let key = ring.keys.get(header.kid);
  if (key === undefined) {
    ring = await jwks.forUnknownKid();
    key = ring.keys.get(header.kid);
    if (key === undefined) return refused('unknown kid');
  }
  if (key.alg !== header.alg) return refused('alg does not match the key');
  try {
    await compactVerify(token, key.key, { algorithms: [key.alg] });
  } catch {
    return refused('bad signature');
  }
  // The payload part compactVerify checked, read as verifyJwt reads it.
  const payload = decodeJsonPart(token.split('.')[1] as string);
  if (payload === null) return refused('malformed payload');
  return readClaims(payload, policy, nowS, { source: jwks, generation: ring.generation });
}
