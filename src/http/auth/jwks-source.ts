// Where the JWKS comes from, a file or an http(s) URL, and when it is read again. It is read once
// at start (a failure stops the start). After that, a token whose `kid` is not in the set asks
// for a reload, at most once per `cooldownMs` (many such tokens at once share one reload), so a
// key the identity provider added after the start is found, while a flood of made-up kids costs
// one fetch per cooldown. A set older than `maxAgeMs` is reloaded in the background at its next
// use, so a key the provider removed stops working within that bound. A failed reload is logged
// and the last good set stays. Each change of the set's content raises `generation`.

import type { JwksLocation } from '../../config/jwt.js';
import fs from 'node:fs/promises';
import type { Logger } from '../../log.js';
import { JwksError, parseJwks, type JwksKey } from './jwks-keys.js';
import { JWKS_BYTES_MAX } from '../../limits.js';
import { errorText } from '../../error-text.js';

type JwksSourceOptions = {
  readonly location: JwksLocation;
  readonly cooldownMs: number;
  readonly maxAgeMs: number;
  /** A fetch of the URL that takes longer is abandoned. */
  readonly timeoutMs: number;
  readonly log: Logger;
  readonly nowMs?: () => number;
};

type KeyRing = { readonly generation: number; readonly keys: ReadonlyMap<string, JwksKey> };

export class JwksSource {
  private ring: KeyRing;
  private text: string;
  private loadedAtMs: number;
  private attemptedAtMs: number;
  private reloading: Promise<KeyRing> | null = null;

  private constructor(
    private readonly opts: JwksSourceOptions,
    text: string,
    keys: ReadonlyMap<string, JwksKey>,
    nowMs: number,
  ) {
    this.ring = { generation: 1, keys };
    this.text = text;
    this.loadedAtMs = nowMs;
    this.attemptedAtMs = nowMs;
  }

  /** Reads the set for the first time; throws JwksError when it cannot be read or used. */
  static async open(opts: JwksSourceOptions): Promise<JwksSource> {
    const now = (opts.nowMs ?? Date.now)();
    const text = await readLocation(opts.location, opts.timeoutMs);
    const parsed = await parseJwks(text).catch((error: unknown) => {
      throw new JwksError(`${describe(opts.location)}: ${errorText(error)}`);
    });
    opts.log.info('JWKS loaded', { jwks: describe(opts.location), kids: [...parsed.keys.keys()], skipped_keys: parsed.skipped });
    return new JwksSource(opts, text, parsed.keys, now);
  }

  get generation(): number {
    return this.ring.generation;
  }

  /** The set now; starts a background reload when it is older than maxAgeMs. */
  current(): KeyRing {
    const now = this.now();
    if (now - this.loadedAtMs >= this.opts.maxAgeMs && now - this.attemptedAtMs >= this.opts.cooldownMs) void this.reload('max age');
    return this.ring;
  }

  /** For a kid not in the set: reloads unless one ran within cooldownMs, then answers the set. */
  async forUnknownKid(): Promise<KeyRing> {
    if (this.reloading !== null) return this.reloading;
    if (this.now() - this.attemptedAtMs < this.opts.cooldownMs) return this.ring;
    return this.reload('unknown kid');
  }

  private reload(reason: string): Promise<KeyRing> {
    this.reloading ??= this.load(reason).finally(() => {
      this.reloading = null;
    });
    return this.reloading;
  }

  private async load(reason: string): Promise<KeyRing> {
    this.attemptedAtMs = this.now();
    try {
      const text = await readLocation(this.opts.location, this.opts.timeoutMs);
      if (text === this.text) {
        this.loadedAtMs = this.now();
        return this.ring;
      }
      const parsed = await parseJwks(text);
      this.text = text;
      this.loadedAtMs = this.now();
      this.ring = { generation: this.ring.generation + 1, keys: parsed.keys };
      this.opts.log.info('JWKS changed', {
        jwks: describe(this.opts.location),
        reason,
        generation: this.ring.generation,
        kids: [...parsed.keys.keys()],
      });
    } catch (error) {
      this.opts.log.error('JWKS reload failed: the last good key set stays in use', {
        jwks: describe(this.opts.location),
        reason,
        error: errorText(error),
      });
    }
    return this.ring;
  }

  private now(): number {
    return (this.opts.nowMs ?? Date.now)();
  }
}

function describe(location: JwksLocation): string {
  return location.kind === 'file' ? location.path : location.url;
}

async function readLocation(location: JwksLocation, timeoutMs: number): Promise<string> {
  if (location.kind === 'file') {
    const stat = await fs.stat(location.path).catch((error: unknown) => {
      throw new JwksError(`cannot read JWT_JWKS_FILE ${location.path}: ${errorText(error)}`);
    });
    if (stat.size > JWKS_BYTES_MAX) throw new JwksError(`JWT_JWKS_FILE ${location.path} is larger than ${JWKS_BYTES_MAX} bytes`);
    return fs.readFile(location.path, 'utf8');
  }
  return fetchBounded(location.url, timeoutMs);
}

async function fetchBounded(url: string, timeoutMs: number): Promise<string> {
  let response: Response;
  try {
    response = await fetch(url, { redirect: 'error', signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' } });
  } catch (error) {
    throw new JwksError(`cannot fetch JWT_JWKS_URL ${url}: ${errorText(error)}`);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw new JwksError(`JWT_JWKS_URL ${url} answered ${response.status}`);
  }
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  const reader = response.body?.getReader();
  if (reader === undefined) throw new JwksError(`JWT_JWKS_URL ${url} answered no body`);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > JWKS_BYTES_MAX) {
      await reader.cancel();
      throw new JwksError(`JWT_JWKS_URL ${url} answered more than ${JWKS_BYTES_MAX} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
