// The readers of one environment variable each: a whole number in its range, one of a few words,
// an http(s) URL. Every failure is a ConfigError that names the variable.

import { CRASH_POINTS, type CrashPoint, isCrashPoint } from '../faults/crash-points.js';
import { checkLimit } from '../limits-check.js';

/** `development` (the default: `make run`, tests) or `production` (secure defaults enforced). */
export type NodeEnv = 'development' | 'production';

export type Env = Readonly<Record<string, string | undefined>>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function urlVar(env: Env, name: string): string | null {
  const raw = nonEmpty(env[name]);
  if (raw === null) return null;
  if (!URL.canParse(raw) || !/^https?:$/.test(new URL(raw).protocol))
    throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
  return raw;
}

export function nonEmpty(value: string | undefined): string | null {
  return value === undefined || value.trim() === '' ? null : value;
}

/** A whole number in [min, max]; its default is asserted inside the same range, so a default can never drift out of its bounds. */
export function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  checkLimit({ kind: 'range', name, min, max, fallback });
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^[0-9]+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function enumVar<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return raw as T;
}

/** The banner prints development tokens: on by default in development, never in production. */
export function bannerVar(env: Env, nodeEnv: NodeEnv): boolean {
  const raw = enumVar(env, 'PRINT_BANNER', ['0', '1'] as const, nodeEnv === 'development' ? '1' : '0');
  if (raw === '1' && nodeEnv === 'production')
    throw new ConfigError('PRINT_BANNER=1 prints development tokens: development only, not with NODE_ENV=production');
  return raw === '1';
}

export function crashPointVar(env: Env): CrashPoint | null {
  const raw = nonEmpty(env.CRASH_POINT);
  if (raw === null) return null;
  if (!isCrashPoint(raw)) throw new ConfigError(`CRASH_POINT must be one of ${CRASH_POINTS.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw;
}

/** Readable lines (pino-pretty) are a development convenience: production writes JSON only. */
export function logFormatVar(env: Env, nodeEnv: NodeEnv): 'json' | 'pretty' {
  const format = enumVar(env, 'LOG_FORMAT', ['auto', 'json', 'pretty'] as const, 'auto');
  if (format === 'pretty' && nodeEnv === 'production')
    throw new ConfigError('LOG_FORMAT=pretty is for development: production writes JSON lines (LOG_FORMAT=json or auto)');
  if (format !== 'auto') return format;
  return nodeEnv === 'development' && process.stderr.isTTY === true ? 'pretty' : 'json';
}
