// Which tokens the service accepts, read from JWT_* variables: an HS256 secret, a JWKS, or both.

import path from 'node:path';
import { ConfigError, type Env, intVar, nonEmpty, type NodeEnv } from './vars.js';
import {
  JWKS_AGE_MS_MAX,
  JWKS_AGE_MS_MIN,
  JWKS_COOLDOWN_MS_MAX,
  JWKS_COOLDOWN_MS_MIN,
  JWKS_TIMEOUT_MS_MAX,
  JWKS_TIMEOUT_MS_MIN,
  JWT_SECRET_BYTES_MIN,
} from '../limits.js';

/** Where the identity provider's key set is read from: a file, or an https URL. */
export type JwksLocation = { readonly kind: 'file'; readonly path: string } | { readonly kind: 'url'; readonly url: string };

export type JwtConfig = {
  /** Null: HS256 tokens are refused (production with a JWKS and no JWT_SECRET). */
  readonly hs256Secret: string | null;
  /** True only in development with JWT_SECRET unset: the secret is public, in this repository. */
  readonly hs256SecretIsDevDefault: boolean;
  /** Null: RS256, ES256 and EdDSA tokens are refused. */
  readonly jwks: JwksLocation | null;
  readonly issuer: string | null;
  readonly audience: string | null;
  /** At most one JWKS reload per this, however many unknown kids arrive. */
  readonly jwksCooldownMs: number;
  /** A key set older than this is reloaded at its next use. */
  readonly jwksMaxAgeMs: number;
  /** A JWKS URL fetch unanswered after this fails. */
  readonly jwksTimeoutMs: number;
};

export const DEV_JWT_SECRET = 'dev-only-secret-change-me-0123456789abcdef';

/**
 * Which tokens are accepted. Development: JWT_SECRET defaults to the public development secret.
 * Production: no default; JWT_SECRET (never the development one) or a JWKS is required, and with
 * a JWKS and no JWT_SECRET, HS256 tokens are refused.
 */
export function jwtConfig(env: Env, nodeEnv: NodeEnv): JwtConfig {
  const file = nonEmpty(env.JWT_JWKS_FILE);
  const url = nonEmpty(env.JWT_JWKS_URL);
  if (file !== null && url !== null) throw new ConfigError('set JWT_JWKS_FILE or JWT_JWKS_URL, not both');
  const jwks: JwksLocation | null =
    file !== null ? { kind: 'file', path: path.resolve(file) } : url !== null ? { kind: 'url', url: jwksUrl(url, nodeEnv) } : null;
  const secret = env.JWT_SECRET;
  if (secret !== undefined && Buffer.byteLength(secret, 'utf8') < JWT_SECRET_BYTES_MIN)
    throw new ConfigError(`JWT_SECRET must be at least ${JWT_SECRET_BYTES_MIN} bytes`);
  if (nodeEnv === 'production') {
    if (secret === undefined && jwks === null)
      throw new ConfigError(
        `NODE_ENV=production needs JWT_SECRET (at least ${JWT_SECRET_BYTES_MIN} bytes) or JWT_JWKS_FILE / JWT_JWKS_URL; there is no default secret in production`,
      );
    if (secret === DEV_JWT_SECRET) throw new ConfigError('JWT_SECRET is the public development secret: never in production');
  }
  const devDefault = secret === undefined && nodeEnv === 'development';
  return {
    hs256Secret: secret ?? (devDefault ? DEV_JWT_SECRET : null),
    hs256SecretIsDevDefault: devDefault,
    jwks,
    issuer: nonEmpty(env.JWT_ISSUER),
    audience: nonEmpty(env.JWT_AUDIENCE),
    jwksCooldownMs: intVar(env, 'JWT_JWKS_COOLDOWN_MS', 30_000, JWKS_COOLDOWN_MS_MIN, JWKS_COOLDOWN_MS_MAX),
    jwksMaxAgeMs: intVar(env, 'JWT_JWKS_MAX_AGE_MS', 300_000, JWKS_AGE_MS_MIN, JWKS_AGE_MS_MAX),
    jwksTimeoutMs: intVar(env, 'JWT_JWKS_TIMEOUT_MS', 5_000, JWKS_TIMEOUT_MS_MIN, JWKS_TIMEOUT_MS_MAX),
  };
}

/** An http(s) URL; in production https, or http only to this machine (a local sidecar). */
function jwksUrl(raw: string, nodeEnv: NodeEnv): string {
  if (!URL.canParse(raw)) throw new ConfigError(`JWT_JWKS_URL must be a URL, got ${JSON.stringify(raw)}`);
  const url = new URL(raw);
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new ConfigError(`JWT_JWKS_URL must be http(s), got ${JSON.stringify(raw)}`);
  const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
  if (nodeEnv === 'production' && url.protocol === 'http:' && !loopback)
    throw new ConfigError('JWT_JWKS_URL must be https in production (http only to 127.0.0.1, localhost or [::1])');
  return raw;
}
