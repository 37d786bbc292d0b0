// Proves NODE_ENV=production refuses to start without a JWT_SECRET of at least 32 bytes (or a usable JWKS), refuses the public development secret and PRINT_BANNER=1, and prints no token when it does start; while development (the default) keeps the development secret and prints tokens only when they are signed with it.

import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { banner } from '../../src/compose/banner.js';
import { DEV_JWT_SECRET, loadConfig } from '../../src/config/config.js';
import { verifyJwt } from '../../src/http/auth/jwt.js';
import { cleanupAll, PROJECT_ROOT, useOneServerForThisFile, withHarness } from '../support/process.js';

const MAIN_JS = path.join(PROJECT_ROOT, 'dist', 'actors', 'main.js');
const REAL_SECRET = 'a-real-secret-of-more-than-32-bytes-0123456789';
const JWT_SHAPE = /eyJ[A-Za-z0-9_-]+\.eyJ/;

test.after(async () => {
  await cleanupAll();
});

/** Runs main.js with exactly `env` (and PATH): its exit code and everything it printed. */
function run(env: Record<string, string>): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN_JS], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

test('production refuses to start without JWT_SECRET, with a short one, or with the development one, and prints no token', async () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{}, /NODE_ENV=production needs JWT_SECRET \(at least 32 bytes\) or JWT_JWKS_FILE/],
    [{ JWT_SECRET: 'short-secret-31-bytes-long-xxxx' }, /JWT_SECRET must be at least 32 bytes/],
    [{ JWT_SECRET: `${'é'.repeat(15)}x` }, /JWT_SECRET must be at least 32 bytes/],
    [{ JWT_SECRET: DEV_JWT_SECRET }, /public development secret/],
    [{ JWT_SECRET: REAL_SECRET, PRINT_BANNER: '1' }, /PRINT_BANNER=1 prints development tokens/],
    [{ JWT_SECRET: REAL_SECRET, JWT_JWKS_URL: 'http://idp.example/jwks.json' }, /JWT_JWKS_URL must be https in production/],
    [{ JWT_JWKS_FILE: '/nonexistent-jwks.json' }, /cannot read JWT_JWKS_FILE \/nonexistent-jwks\.json/],
  ];
  for (const [env, message] of cases) {
    const r = await run({ NODE_ENV: 'production', DATA_DIR: '/nonexistent-never-created', ...env });
    assert.is(r.code, 2, `${JSON.stringify(env)}: ${r.err}`);
    assert.match(r.err, message);
    assert.not.match(r.out + r.err, JWT_SHAPE);
    assert.not.match(r.out + r.err, /Bearer/);
  }
});

test('configuration: production without JWT_SECRET but with a JWKS turns HS256 off; development defaults to the public secret; NODE_ENV is checked', () => {
  const prod = loadConfig({ NODE_ENV: 'production', JWT_JWKS_FILE: '/etc/jwks.json' });
  assert.is(prod.jwt.hs256Secret, null);
  assert.is(prod.jwt.hs256SecretIsDevDefault, false);
  assert.is(prod.printBanner, false);
  const dev = loadConfig({});
  assert.is(dev.nodeEnv, 'development');
  assert.is(dev.jwt.hs256Secret, DEV_JWT_SECRET);
  assert.ok(dev.jwt.hs256SecretIsDevDefault);
  assert.ok(dev.printBanner);
  assert.is(loadConfig({ JWT_SECRET: REAL_SECRET }).jwt.hs256SecretIsDevDefault, false);
  assert.throws(() => loadConfig({ NODE_ENV: 'prod' }), /NODE_ENV must be one of development, production/);
  assert.throws(() => loadConfig({ JWT_SECRET: '' }), /at least 32 bytes/);
  assert.is(
    loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'é'.repeat(16) }).jwt.hs256Secret,
    'é'.repeat(16),
    '32 bytes in 16 characters: the bound is in bytes',
  );
  assert.throws(() => loadConfig({ NODE_ENV: 'production', JWT_SECRET: `${'é'.repeat(15)}x` }), /at least 32 bytes/);
  assert.throws(() => loadConfig({ JWT_JWKS_FILE: 'a.json', JWT_JWKS_URL: 'https://idp.test/jwks' }), /not both/);
  assert.throws(() => loadConfig({ JWT_JWKS_URL: 'ftp://idp.test/jwks' }), /must be http\(s\)/);
  assert.is(loadConfig({ NODE_ENV: 'production', JWT_JWKS_URL: 'http://127.0.0.1:9/jwks' }).jwt.jwks?.kind, 'url');
});

test('development prints tokens only when they are signed with the public development secret', () => {
  const dev = loadConfig({ JWT_ISSUER: 'https://issuer.test' });
  const text = banner(dev, { port: 8080, adminPort: 9090 });
  const printed = [...text.matchAll(/Bearer (eyJ[A-Za-z0-9_.-]+)/g)].map((m) => m[1] as string);
  assert.ok(printed.length >= 2, text);
  for (const token of printed)
    assert.ok(verifyJwt(token, DEV_JWT_SECRET, Date.now() / 1000, { issuer: 'https://issuer.test', audience: null }).ok);
  assert.match(text, /PUBLIC development JWT_SECRET/);
  assert.match(text, /http:\/\/127\.0\.0\.1:9090\/admin\/v1\/deposit/);
  const real = banner(loadConfig({ JWT_SECRET: REAL_SECRET }), { port: 8080, adminPort: null });
  assert.not.match(real, JWT_SHAPE);
  assert.match(real, /\$ADMIN_TOKEN/);
  assert.match(real, /No tokens printed/);
});

test('production with a real secret starts, prints no token and seeds no demo asset', async () => {
  await useOneServerForThisFile();
  await withHarness(async (h) => {
    // Production migrates as a step of its own; here the start does it, explicitly (MIGRATE_ON_START).
    const svc = await h.start({ NODE_ENV: 'production', JWT_SECRET: REAL_SECRET, PRINT_BANNER: '', MIGRATE_ON_START: 'true' });
    const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(1) });
    assert.is(r.status, 401, 'a token signed with another secret is refused');
    const assets = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM assets`;
    assert.is(assets[0]?.n, 0);
    await svc.stop();
    assert.not.match(svc.stderrTail(), JWT_SHAPE);
    assert.not.match(svc.stderrTail(), /curl/);
  });
});

test.run();
