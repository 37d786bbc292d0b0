// Builds the one TokenVerifier of the process from the configuration: the HS256 secret when
// enabled, and the JWKS (read once here: a JWKS that cannot be read or used stops the start).

import type { JwtConfig } from '../../config/config.js';
import type { Logger } from '../../log.js';
import { JwksSource } from './jwks-source.js';
import { TokenVerifier } from './token-verifier.js';

export async function createTokenVerifier(config: JwtConfig, log: Logger): Promise<TokenVerifier> {
  const jwks =
    config.jwks === null
      ? null
      : await JwksSource.open({
          location: config.jwks,
          cooldownMs: config.jwksCooldownMs,
          maxAgeMs: config.jwksMaxAgeMs,
          timeoutMs: config.jwksTimeoutMs,
          log,
        });
  log.info('token verification', {
    hs256: config.hs256Secret === null ? 'off' : config.hs256SecretIsDevDefault ? 'development secret' : 'JWT_SECRET',
    jwks: config.jwks === null ? 'off' : config.jwks.kind === 'file' ? config.jwks.path : config.jwks.url,
    issuer: config.issuer,
    audience: config.audience,
  });
  return new TokenVerifier({ hs256Secret: config.hs256Secret, jwks, policy: { issuer: config.issuer, audience: config.audience } });
}
