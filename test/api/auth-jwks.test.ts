// Proves RS256, ES256 and EdDSA tokens verified against a JWKS file and a JWKS URL (a local server) are accepted, and that a wrong kid, issuer, audience, an expired or not-yet-valid token, a key used for another algorithm, a forged signature and alg none are refused with 401 UNAUTHORIZED; that a key added after start is found (one bounded refetch however many unknown kids arrive) and a removed key stops working even for a cached token.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { JWKS_ALGORITHMS } from '../../src/http/auth/jwks-keys.js';
import type { JwksLocation } from '../../src/config/jwt.js';
import { JwksSource } from '../../src/http/auth/jwks-source.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { keptLog, stubApps } from '../support/app.js';
import { jwksOf, signWith, startJwksServer, testKey, type TestKey } from '../support/jwks.js';

const ISSUER = 'https://issuer.test';
const AUDIENCE = 'transfer-service';
const SECRET = 'auth-jwks-test-secret-0123456789-abcdef';
const nowS = () => Math.floor(Date.now() / 1000);
const good = (extra: Record<string, unknown> = {}) => ({ sub: '7', iss: ISSUER, aud: AUDIENCE, exp: nowS() + 600, ...extra });

let dir: string;
const keys = new Map<string, TestKey>();

test.before(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'auth-jwks-'));
  for (const alg of JWKS_ALGORITHMS) keys.set(alg, await testKey(alg, `key-${alg}`));
});

test.after(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const key = (alg: string): TestKey => keys.get(alg) as TestKey;

async function verifierFor(
  location: JwksLocation,
  opts: { cooldownMs?: number; maxAgeMs?: number; nowMs?: () => number; secret?: string | null } = {},
) {
  const source = await JwksSource.open({
    location,
    cooldownMs: opts.cooldownMs ?? 60_000,
    maxAgeMs: opts.maxAgeMs ?? 3_600_000,
    timeoutMs: 2_000,
    log: keptLog().log,
    ...(opts.nowMs === undefined ? {} : { nowMs: opts.nowMs }),
  });
  return new TokenVerifier({ hs256Secret: opts.secret ?? null, jwks: source, policy: { issuer: ISSUER, audience: AUDIENCE } });
}

async function writeJwks(name: string, list: readonly TestKey[]): Promise<JwksLocation> {
  const file = path.join(dir, name);
  await fs.writeFile(file, jwksOf(list));
  return { kind: 'file', path: file };
}

async function status(
  app: { request: (p: string, init?: RequestInit) => Response | Promise<Response> },
  route: string,
  token: string,
  scheme = 'Bearer',
  method = 'GET',
): Promise<{ status: number; code: unknown }> {
  const response = await app.request(route, { method, headers: { authorization: `${scheme} ${token}` } });
  const body = (await response.json()) as Record<string, unknown>;
  return { status: response.status, code: body.code };
}

for (const kind of ['file', 'url'] as const) {
  test(`${kind}: RS256, ES256 and EdDSA user and admin tokens are accepted`, async () => {
    const server = kind === 'url' ? await startJwksServer(jwksOf([...keys.values()])) : null;
    try {
      const location: JwksLocation = server === null ? await writeJwks('all.json', [...keys.values()]) : { kind: 'url', url: server.url };
      const { public: app } = stubApps(await verifierFor(location));
      for (const alg of JWKS_ALGORITHMS) {
        assert.is((await status(app, '/api/v1/balances', await signWith(key(alg), good()))).status, 200, `${alg} user token`);
        const admin = await signWith(key(alg), good({ sub: 'ops-alice', role: 'admin' }));
        assert.is((await status(app, '/admin/v1/alerts', admin)).status, 200, `${alg} admin token`);
      }
    } finally {
      await server?.close();
    }
  });
}

test('a wrong kid, issuer or audience, an expired or early token, a key used for another alg, a forged signature and alg none are refused with 401 UNAUTHORIZED', async () => {
  const { public: app } = stubApps(await verifierFor(await writeJwks('refusals.json', [...keys.values()])));
  const rs = key('RS256');
  const stranger = await testKey('RS256', rs.kid);
  const cases: Record<string, string> = {
    'unknown kid': await signWith(rs, good(), { kid: 'no-such-kid' }),
    'no kid': await signWith(rs, good(), { kid: undefined }),
    'wrong issuer': await signWith(rs, good({ iss: 'https://evil.test' })),
    'no issuer': await signWith(rs, good({ iss: undefined })),
    'wrong audience': await signWith(rs, good({ aud: 'another-service' })),
    'audience list without ours': await signWith(rs, good({ aud: ['a', 'b'] })),
    expired: await signWith(rs, good({ exp: nowS() - 1 })),
    'no exp': await signWith(rs, good({ exp: undefined })),
    'nbf in the future': await signWith(rs, good({ nbf: nowS() + 300 })),
    'ES256 key named for an RS256 token': await signWith(key('ES256'), good(), { kid: rs.kid, alg: 'ES256' }),
    'forged by another key with the same kid': await signWith(stranger, good()),
    'HS256 while HS256 is off': signJwt({ sub: '7', exp: nowS() + 600, iss: ISSUER, aud: AUDIENCE }, SECRET),
    'alg none': `${Buffer.from('{"alg":"none","kid":"key-RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(good())).toString('base64url')}.`,
  };
  for (const [name, token] of Object.entries(cases)) {
    assert.equal(await status(app, '/api/v1/balances', token), { status: 401, code: 'UNAUTHORIZED' }, name);
  }
  const lists = await signWith(rs, good({ aud: ['other', AUDIENCE] }));
  assert.is((await status(app, '/api/v1/balances', lists)).status, 200, 'an aud list holding ours is accepted');
});

test('URL: a kid served after start is accepted; a flood of unknown kids costs one refetch per cooldown', async () => {
  const old = key('ES256');
  const server = await startJwksServer(jwksOf([old]));
  let clockMs = 1_000_000;
  try {
    const { public: app } = stubApps(await verifierFor({ kind: 'url', url: server.url }, { cooldownMs: 30_000, nowMs: () => clockMs }));
    assert.is(server.fetches(), 1);
    const rotated = await testKey('EdDSA', 'key-2027');
    server.serve(jwksOf([old, rotated]));
    clockMs += 30_000;
    const flood = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => status(app, '/api/v1/balances', await signWith(rotated, good({ sub: String(i + 1) })))),
    );
    assert.ok(
      flood.every((r) => r.status === 200),
      JSON.stringify(flood),
    );
    assert.is(server.fetches(), 2, 'twenty tokens with the new kid at once share one refetch');
    for (let i = 0; i < 10; i++)
      assert.is((await status(app, '/api/v1/balances', await signWith(old, good(), { kid: `made-up-${i}` }))).status, 401);
    assert.is(server.fetches(), 2, 'made-up kids within the cooldown fetch nothing');
    clockMs += 30_000;
    assert.is((await status(app, '/api/v1/balances', await signWith(old, good(), { kid: 'made-up-late' }))).status, 401);
    assert.is(server.fetches(), 3, 'after the cooldown, one more');
  } finally {
    await server.close();
  }
});

test('file: a key added to the file after start is accepted; a removed key is refused after the next reload, even for a token the cache holds', async () => {
  const first = key('RS256');
  const location = await writeJwks('rotating.json', [first]);
  let clockMs = 5_000_000;
  const { public: app } = stubApps(await verifierFor(location, { cooldownMs: 1_000, maxAgeMs: 60_000, nowMs: () => clockMs }));
  const old = await signWith(first, good());
  assert.is((await status(app, '/api/v1/balances', old)).status, 200);
  const second = await testKey('ES256', 'key-next');
  await writeJwks('rotating.json', [first, second]);
  clockMs += 1_000;
  assert.is((await status(app, '/api/v1/balances', await signWith(second, good()))).status, 200, 'the new kid is found on a reload');
  await writeJwks('rotating.json', [second]);
  clockMs += 60_000;
  // The first use past the max age reloads in the background; the answers after it see the new set.
  await status(app, '/api/v1/balances', old);
  await new Promise((resolve) => setTimeout(resolve, 100));
  assert.equal(
    await status(app, '/api/v1/balances', old),
    { status: 401, code: 'UNAUTHORIZED' },
    'the removed key no longer verifies, cache or not',
  );
  assert.is((await status(app, '/api/v1/balances', await signWith(second, good()))).status, 200);
});

test('a JWKS that cannot be used stops the start with a message naming the problem', async () => {
  const bad = async (text: string, expected: RegExp) => {
    const file = path.join(dir, 'bad.json');
    await fs.writeFile(file, text);
    const error = await JwksSource.open({
      location: { kind: 'file', path: file },
      cooldownMs: 1_000,
      maxAgeMs: 60_000,
      timeoutMs: 1_000,
      log: keptLog().log,
    }).then(
      () => null,
      (e: unknown) => e,
    );
    assert.instance(error, Error);
    assert.match((error as Error).message, expected);
  };
  await bad('not json', /not JSON/);
  await bad('{"keys": 3}', /no "keys" array/);
  await bad('{"keys": []}', /no RS256, ES256, EdDSA signing key/);
  await bad(JSON.stringify({ keys: [{ ...key('RS256').publicJwk, kid: undefined }] }), /has no kid/);
  await bad(JSON.stringify({ keys: [key('RS256').publicJwk, key('RS256').publicJwk] }), /twice/);
  await bad(JSON.stringify({ keys: [{ ...key('EdDSA').publicJwk, d: 'AAAA' }] }), /private or secret/);
  await bad(JSON.stringify({ keys: [{ ...key('ES256').publicJwk, alg: 'RS256' }] }), /does not import/);
  const missing = await JwksSource.open({
    location: { kind: 'file', path: path.join(dir, 'absent.json') },
    cooldownMs: 1_000,
    maxAgeMs: 60_000,
    timeoutMs: 1_000,
    log: keptLog().log,
  }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.match(String(missing), /cannot read JWT_JWKS_FILE/);
});

test('the scheme name is case-insensitive; a user route needs a numeric sub while an admin route takes any sub as the operator', async () => {
  const apps = stubApps(await verifierFor(await writeJwks('scheme.json', [key('EdDSA')]), { secret: SECRET }));
  const app = apps.public;
  const user = signJwt({ sub: '7', exp: nowS() + 600, iss: ISSUER, aud: AUDIENCE }, SECRET);
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR'])
    assert.is((await status(app, '/api/v1/balances', user, scheme)).status, 200, scheme);
  assert.is((await status(app, '/api/v1/balances', user, 'Basic')).status, 401);
  const alice = await signWith(key('EdDSA'), good({ sub: 'ops-alice', role: 'admin' }));
  assert.equal(await status(app, '/admin/v1/resume', alice, 'Bearer', 'POST'), { status: 200, code: undefined });
  const line = apps.lines.find((l) => l.msg === 'halt lifted by an operator');
  assert.is(line?.fields.operator, 'ops-alice', 'the admin route knows the operator by name');
  assert.equal(
    await status(app, '/api/v1/balances', alice),
    { status: 401, code: 'UNAUTHORIZED' },
    'a non-numeric sub is no user, admin or not',
  );
  const named = signJwt({ sub: 'alice', exp: nowS() + 600, iss: ISSUER, aud: AUDIENCE }, SECRET);
  assert.equal(await status(app, '/api/v1/balances', named), { status: 401, code: 'UNAUTHORIZED' });
  assert.equal(await status(app, '/admin/v1/alerts', user), { status: 403, code: 'FORBIDDEN' }, 'a user token on an admin route');
});

test.run();
