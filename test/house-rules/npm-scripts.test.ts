// Proves the npm conventions a newcomer relies on: `npm start` builds first (prestart) and then
// serves, so it works straight after `npm ci` on a fresh checkout; `npm test` builds first too
// (pretest) and runs the lint of `make lint` (Biome, then Redocly on the served document) before
// the suite; and `engines` names the Node lines the README says are supported, the one running
// this suite among them.

import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { freePort } from '../support/ports.js';
import { PROJECT_ROOT, cleanupAll, pollUntil, useOneServerForThisFile } from '../support/process.js';
import { createTestDatabase } from '../support/database.js';
import { TEST_JWT_SECRET } from '../support/service.js';

const START_TIMEOUT_MS = 120_000;

type Package = { scripts: Record<string, string>; engines: { node: string } };

async function packageJson(): Promise<Package> {
  return JSON.parse(await fs.readFile(path.join(PROJECT_ROOT, 'package.json'), 'utf8')) as Package;
}

test.before(useOneServerForThisFile);
test.after(cleanupAll);

test('npm start and npm test build first, npm test lints as make lint does; engines names the supported Node lines', async () => {
  const pkg = await packageJson();
  assert.is(pkg.scripts.prestart, 'npm run build');
  assert.is(pkg.scripts.pretest, 'npm run build');
  assert.match(pkg.scripts.test ?? '', /^npm run lint && node dist\/test\/run\.js$/);
  const makefile = await fs.readFile(path.join(PROJECT_ROOT, 'Makefile'), 'utf8');
  const makeLint = /^lint: .*\n((?:\t.*\n)+)/m.exec(makefile)?.[1] ?? '';
  const steps = makeLint
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.trim().replace('node_modules/.bin/', ''));
  assert.is(pkg.scripts.lint, steps.join(' && '), 'npm run lint is the steps of make lint');
  assert.match(pkg.scripts.build ?? '', /^tsc -p tsconfig\.json$/);
  const lines = pkg.engines.node.split('||').map((r) => Number(/\^(\d+)\./.exec(r.trim())?.[1]));
  assert.equal(lines, [20, 22, 24], 'the LTS lines of the README');
  assert.ok(lines.includes(Number(process.versions.node.split('.')[0])), `this Node (${process.version}) is one of them`);
});

test('npm start serves: it builds, starts, answers /healthz, and stops on SIGTERM', async () => {
  const db = await createTestDatabase();
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-npm-start-'));
  const port = await freePort();
  const child = spawn('npm', ['start', '--silent'], {
    cwd: PROJECT_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      JWT_SECRET: TEST_JWT_SECRET,
      PRINT_BANNER: '0',
      LOG_LEVEL: 'error',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  try {
    await pollUntil(
      async () =>
        (await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.status,
          () => 0,
        )) === 200
          ? true
          : undefined,
      {
        timeoutMs: START_TIMEOUT_MS,
        describe: () => `npm start serving on ${port}: ${stderr}`,
      },
    );
  } finally {
    // npm runs the service as its child: the whole process group gets the signal, as a terminal's Ctrl-C would.
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
    await exited;
    await db.drop();
    await fs.rm(dataDir, { recursive: true, force: true });
  }
});

test.run();
