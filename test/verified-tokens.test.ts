// Proves the cache of verified tokens answers exactly what full verification answers at every moment (fast-check against verifyJwt, the clock moving both ways), refuses a cached token once its exp passes, saves the HMAC on a repeat, and stays within its bound.

import fc from 'fast-check';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { signJwt, verifyJwt, type Verified } from '../src/http/jwt.js';
import { VerifiedTokens } from '../src/http/verified-tokens.js';

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
  const counter = { calls: 0, verify: (t: string, s: string, n: number): Verified => (counter.calls += 1, verifyJwt(t, s, n)) };
  return counter;
}

const POOL: readonly string[] = [
  token({ sub: '1', exp: T0 + 10 }),
  token({ sub: '2', exp: T0 + 100, role: 'admin' }),
  token({ sub: '3', exp: T0 + 1_000, nbf: T0 + 50 }),
  token({ sub: '4', exp: T0 + 300, nbf: T0 - 1 }),
  token({ sub: '5', exp: T0 + 100 }, 'another-secret-another-secret-another-secret'),
  token({ sub: '6', exp: T0 - 1 }),
  token({ sub: 'alice', exp: T0 + 100 }),
  token({ sub: '7' }),
  token({ sub: '1', exp: T0 + 10 }).replace(/\.[^.]+\./, `.${Buffer.from(JSON.stringify({ sub: '9', exp: T0 + 10_000 })).toString('base64url')}.`),
  [Buffer.from('{"alg":"none"}').toString('base64url'), Buffer.from(JSON.stringify({ sub: '8', exp: T0 + 100 })).toString('base64url'), ''].join('.'),
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
      const cache = new VerifiedTokens({ secret: SECRET, entriesMax, nowS: time.nowS });
      for (const s of steps) {
        if (s.kind === 'clock') {
          time.advance(s.byS);
          continue;
        }
        const t = POOL[s.index] as string;
        assert.equal(cache.verify(t), verifyJwt(t, SECRET, time.nowS()));
        assert.ok(cache.size <= entriesMax);
      }
    }),
    { numRuns: 2_000 },
  );
});

test('a repeated token costs no second verification; once its exp passes it is refused although cached', () => {
  const time = clock(T0);
  const full = counting();
  const cache = new VerifiedTokens({ secret: SECRET, nowS: time.nowS, verify: full.verify });
  const t = token({ sub: '42', exp: T0 + 60 });
  for (let i = 0; i < 5; i++) assert.ok(cache.verify(t).ok);
  assert.is(full.calls, 1);
  time.set(T0 + 59.999);
  assert.ok(cache.verify(t).ok);
  time.set(T0 + 60);
  assert.equal(cache.verify(t), { ok: false, reason: 'token expired' });
  assert.is(cache.size, 0);
});

test('the cache holds at most entriesMax tokens, evicting the oldest', () => {
  const time = clock(T0);
  const full = counting();
  const cache = new VerifiedTokens({ secret: SECRET, entriesMax: 10, nowS: time.nowS, verify: full.verify });
  const tokens = Array.from({ length: 100 }, (_, i) => token({ sub: String(i + 1), exp: T0 + 600 }));
  for (const t of tokens) assert.ok(cache.verify(t).ok);
  assert.is(cache.size, 10);
  const calls = full.calls;
  for (const t of tokens.slice(-10)) assert.ok(cache.verify(t).ok);
  assert.is(full.calls, calls, 'the newest ten are still cached');
  assert.ok(cache.verify(tokens[0] as string).ok);
  assert.is(full.calls, calls + 1, 'the oldest was evicted and verified again');
  assert.is(cache.size, 10);
});

test.run();
