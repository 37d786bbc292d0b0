// Proves the embedded PostgreSQL runs with the write-smoothing settings of src/db/embedded-pg.ts
// (WRITE_SMOOTHING): new WAL segments created without zero-filling, and backends' evicted data
// pages written out as they come. Both are measured in bench/README.md; without them a
// committing backend zero-fills each new 16 MB WAL segment while every commit waits.
// test-runner: own-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSql } from '../../src/db/sql.js';
import { startScratchPg } from '../support/database.js';

test('the embedded server runs with wal_init_zero off and backend_flush_after 256kB', async () => {
  // A server of its own: under `make test-external` the suite's server is not an embedded one.
  const scratch = await startScratchPg('transfer-pg-settings-');
  const sql = openSql(scratch.pg.url('postgres'), { max: 1, application: 'test-pg-settings' });
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
    await scratch.stop();
  }
});

test.run();
