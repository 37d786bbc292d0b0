// Proves the embedded PostgreSQL runs with the write-smoothing settings of src/db/embedded-pg.ts
// (WRITE_SMOOTHING): new WAL segments created without zero-filling, and backends' evicted data
// pages written out as they come. Both are measured in the README's performance section; without
// them a committing backend zero-fills each new 16 MB WAL segment while every commit waits.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startEmbeddedPg } from '../src/db/embedded-pg.js';
import { openSql } from '../src/db/sql.js';
import { freePort } from './support/ports.js';

test('the embedded server runs with wal_init_zero off and backend_flush_after 256kB', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-pg-settings-'));
  await fs.chmod(dir, 0o755);
  const pg = await startEmbeddedPg({ dir, port: await freePort(), log: () => undefined });
  const sql = openSql(pg.url('postgres'), { max: 1, application: 'test-pg-settings' });
  try {
    const rows = await sql<{ name: string; setting: string; unit: string | null }[]>`
      SELECT name, setting, unit FROM pg_settings WHERE name IN ('wal_init_zero', 'backend_flush_after') ORDER BY name`;
    assert.equal(
      rows.map((r) => [r.name, r.setting, r.unit]),
      [
        ['backend_flush_after', '32', '8kB'],
        ['wal_init_zero', 'off', null],
      ],
    );
  } finally {
    await sql.end({ timeout: 5 });
    await pg.stop();
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test.run();
