// Tokens already verified, so a client sending the same token on every request does not cost an
// HMAC each time (about a twelfth of the HTTP thread). A token is kept with the claims it verified
// to and the time it was verified; it is accepted from the cache only while `verified at <= now <
// exp`, the span in which verifyJwt itself must answer the same (its signature and claims do not
// change, `nbf` was already passed, `exp` is not yet). Outside that span, or when absent, the
// token is verified in full. The map is bounded: the oldest entry makes room for a new one.

import { verifyJwt, type Claims, type Verified } from './jwt.js';

/** Tokens remembered per middleware; at about 200 bytes a token, a few MB at most. */
export const VERIFIED_TOKENS_MAX = 10_000;

type Entry = { readonly claims: Claims; readonly verifiedAtS: number };

export type VerifiedTokensOptions = {
  readonly secret: string;
  readonly entriesMax?: number;
  /** Seconds since the epoch, as verifyJwt takes them. */
  readonly nowS?: () => number;
  /** The full verification; replaceable so a test can count its calls. */
  readonly verify?: (token: string, secret: string, nowS: number) => Verified;
};

export class VerifiedTokens {
  private readonly entries = new Map<string, Entry>();
  private readonly entriesMax: number;
  private readonly nowS: () => number;
  private readonly verifyFull: (token: string, secret: string, nowS: number) => Verified;

  constructor(private readonly opts: VerifiedTokensOptions) {
    this.entriesMax = opts.entriesMax ?? VERIFIED_TOKENS_MAX;
    if (!Number.isInteger(this.entriesMax) || this.entriesMax < 1) throw new Error(`entriesMax must be a positive integer, got ${this.entriesMax}`);
    this.nowS = opts.nowS ?? (() => Date.now() / 1000);
    this.verifyFull = opts.verify ?? verifyJwt;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Answers exactly what verifyJwt would answer now. */
  verify(token: string): Verified {
    const now = this.nowS();
    const entry = this.entries.get(token);
    if (entry !== undefined) {
      if (entry.verifiedAtS <= now && now < entry.claims.exp) return { ok: true, claims: entry.claims };
      this.entries.delete(token);
    }
    const verified = this.verifyFull(token, this.opts.secret, now);
    if (verified.ok) this.remember(token, { claims: verified.claims, verifiedAtS: now });
    return verified;
  }

  private remember(token: string, entry: Entry): void {
    if (this.entries.size >= this.entriesMax) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(token, entry);
  }
}
