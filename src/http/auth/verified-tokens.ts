// Tokens already verified, so a client sending the same token on every request does not cost a
// signature check each time (an HMAC was about a twelfth of the HTTP thread; RSA and EdDSA cost
// more). Only successful verifications are kept, keyed by the whole token, with the claims they
// verified to, the time they were verified and the key set they were verified against. A token
// is accepted from the cache only while `verified at <= now < exp` (the span in which a full
// verification must answer the same: its signature and claims do not change, `nbf` was already
// passed, `exp` is not yet) and while its key set is the one it was verified against: once a
// JWKS changes (a key rotated in or out), every token verified by that set is verified again in
// full. Outside that, or when absent, the token is verified in full. The map is bounded: the
// oldest entry makes room for a new one.

import type { Claims, KeyEpoch, Verified } from './jwt-claims.js';
import { VERIFIED_TOKENS_MAX } from '../../limits.js';

type Entry = { readonly claims: Claims; readonly keyEpoch: KeyEpoch | null; readonly verifiedAtS: number };

type VerifiedTokensOptions = {
  /** The full verification (TokenVerifier.verify, or verifyJwt with a secret in a test). */
  readonly verify: (token: string, nowS: number) => Verified | Promise<Verified>;
  readonly entriesMax?: number;
  /** Seconds since the epoch, as the verification takes them. */
  readonly nowS?: () => number;
};

export class VerifiedTokens {
  private readonly entries = new Map<string, Entry>();
  private readonly entriesMax: number;
  private readonly nowS: () => number;

  constructor(private readonly opts: VerifiedTokensOptions) {
    this.entriesMax = opts.entriesMax ?? VERIFIED_TOKENS_MAX;
    if (!Number.isInteger(this.entriesMax) || this.entriesMax < 1)
      throw new Error(`entriesMax must be a positive integer, got ${this.entriesMax}`);
    this.nowS = opts.nowS ?? (() => Date.now() / 1000);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Answers exactly what the full verification would answer now. */
  verify(token: string): Verified | Promise<Verified> {
    const now = this.nowS();
    const entry = this.entries.get(token);
    if (entry !== undefined) {
      if (entry.verifiedAtS <= now && now < entry.claims.exp && keySetUnchanged(entry.keyEpoch))
        return { ok: true, claims: entry.claims, keyEpoch: entry.keyEpoch };
      this.entries.delete(token);
    }
    const verified = this.opts.verify(token, now);
    if (verified instanceof Promise) return verified.then((v) => this.keep(token, v, now));
    return this.keep(token, verified, now);
  }

  private keep(token: string, verified: Verified, now: number): Verified {
    if (!verified.ok) return verified;
    if (this.entries.size >= this.entriesMax) this.entries.delete(this.entries.keys().next().value as string);
    this.entries.set(token, { claims: verified.claims, keyEpoch: verified.keyEpoch, verifiedAtS: now });
    return verified;
  }
}

function keySetUnchanged(epoch: KeyEpoch | null): boolean {
  return epoch === null || epoch.source.generation === epoch.generation;
}
