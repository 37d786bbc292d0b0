// Proves the cache of verified tokens answers exactly what full verification answers at every moment (fast-check against verifyJwt, the clock moving both ways), refuses a cached token once its exp passes, verifies again once the key set it was verified against changes, saves the signature check on a repeat, answers an HS256 token without a promise, and stays within its bound.
// test-runner: no-postgres

import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signJwt, verifyJwt, type Verified } from '../../src/http/auth/jwt.js';
import type { KeyEpoch } from '../../src/http/auth/jwt-claims.js';
import { VerifiedTokens } from '../../src/http/auth/verified-tokens.js';

const SECRET = 'verified-tokens-secret-0123456789-abcdef';
const T0 = 1_900_000_000;

/** A token with any claims, signed with `secret` (signJwt's type names only the usual ones). */
function token(claims: Record<string, unknown>, secret = SECRET): string {
  return signJwt(claims as { sub: string; exp: number }, secret);
}

function clock(start: number) {
  let now = start;
  return { nowS: () => now, set: (t: number) => (now = t), advance: (s: number) => (now += s) };
}

/** Counts full verifications, so a test can tell a cache hit from a miss. */
function counting() {
  const counter = {
    calls: 0,
    verify: (t: string, n: number): Verified => {
      counter.calls += 1;
      return verifyJwt(t, SECRET, n);
    },
  };
  return counter;
}

/** An HS256 verification is answered at once, never as a promise: the hot path awaits nothing slow. */
function now(answer: Verified | Promise<Verified>): Verified {
  assert.ok(!(answer instanceof Promise), 'an HS256 token is answered synchronously');
  return answer as Verified;
}

const hs256 = (t: string, n: number): Verified => verifyJwt(t, SECRET, n);

const POOL: readonly string[] = [
  token({ sub: '1', exp: T0 + 10 }),
  token({ sub: '2', exp: T0 + 100, role: 'admin' }),
  token({ sub: '3', exp: T0 + 1_000, nbf: T0 + 50 }),
  token({ sub: '4', exp: T0 + 300, nbf: T0 - 1 }),
  token({ sub: '5', exp: T0 + 100 }, 'another-secret-another-secret-another-secret'),
  token({ sub: '6', exp: T0 - 1 }),
  token({ sub: 'alice', exp: T0 + 100 }),
  token({ sub: '7' }),
  token({ sub: '1', exp: T0 + 10 }).replace(
    /\.[^.]+\./,
    `.${Buffer.from(JSON.stringify({ sub: '9', exp: T0 + 10_000 })).toString('base64url')}.`,
  ),
  [
    Buffer.from('{"alg":"none"}').toString('base64url'),
    Buffer.from(JSON.stringify({ sub: '8', exp: T0 + 100 })).toString('base64url'),
    '',
  ].join('.'),
  'not.a.token',
];

type Step = { readonly kind: 'verify'; readonly index: number } | { readonly kind: 'clock'; readonly byS: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.nat({ max: POOL.length - 1 }).map((index): Step => ({ kind: 'verify', index })) },
  { weight: 1, arbitrary: fc.integer({ min: -80, max: 400 }).map((byS): Step => ({ kind: 'clock', byS })) },
);

test('the cache answers exactly what verifyJwt answers at that moment, for any order of tokens and clock moves (both ways), with evictions', () => {
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 4 }), (steps, entriesMax) => {
      const time = clock(T0);
      const cache = new VerifiedTokens({ verify: hs256, entriesMax, nowS: time.nowS });
      for (const s of steps) {
        if (s.kind === 'clock') {
          time.advance(s.byS);
          continue;
        }
        const t = POOL[s.index] as string;
        assert.equal(now(cache.verify(t)), verifyJwt(t, SECRET, time.nowS()));
        assert.ok(cache.size <= entriesMax);
      }
    }),
    { numRuns: 2_000 },
  );
});

test('a repeated token costs no second verification; once its exp passes it is refused although cached', () => {
  const time = clock(T0);
  const full = counting();
  const cache = new VerifiedTokens({ nowS: time.nowS, verify: full.verify });
  const t = token({ sub: '42', exp: T0 + 60 });
  for (let i = 0; i < 5; i++) assert.ok(now(cache.verify(t)).ok);
  assert.is(full.calls, 1);
  time.set(T0 + 59.999);
  assert.ok(now(cache.verify(t)).ok);
  time.set(T0 + 60);
  assert.equal(now(cache.verify(t)), { ok: false, reason: 'token expired' });
  assert.is(cache.size, 0);
});

test('the cache holds at most entriesMax tokens, evicting the oldest', () => {
  const time = clock(T0);
  const full = counting();
  const cache = new VerifiedTokens({ entriesMax: 10, nowS: time.nowS, verify: full.verify });
  const tokens = Array.from({ length: 100 }, (_, i) => token({ sub: String(i + 1), exp: T0 + 600 }));
  for (const t of tokens) assert.ok(now(cache.verify(t)).ok);
  assert.is(cache.size, 10);
  const calls = full.calls;
  for (const t of tokens.slice(-10)) assert.ok(now(cache.verify(t)).ok);
  assert.is(full.calls, calls, 'the newest ten are still cached');
  assert.ok(now(cache.verify(tokens[0] as string)).ok);
  assert.is(full.calls, calls + 1, 'the oldest was evicted and verified again');
  assert.is(cache.size, 10);
});

test('a token verified against a key set is verified again in full once that set changes (a rotated key cannot ride the cache)', async () => {
  const time = clock(T0);
  const keySet = { generation: 1 };
  let calls = 0;
  let keyStillThere = true;
  const verify = async (_t: string, n: number): Promise<Verified> => {
    calls += 1;
    if (!keyStillThere) return { ok: false, reason: 'unknown kid' };
    const keyEpoch: KeyEpoch = { source: keySet, generation: keySet.generation };
    return { ok: true, claims: { subject: 'ops-alice', role: 'admin', exp: n + 600 }, keyEpoch };
  };
  const cache = new VerifiedTokens({ nowS: time.nowS, verify });
  assert.ok((await cache.verify('tok')).ok);
  assert.ok((await cache.verify('tok')).ok);
  assert.is(calls, 1, 'the second answer came from the cache');
  keySet.generation = 2;
  keyStillThere = false;
  assert.equal(await cache.verify('tok'), { ok: false, reason: 'unknown kid' });
  assert.is(calls, 2);
  assert.is(cache.size, 0, 'a refusal is never cached');
});

test.run();
