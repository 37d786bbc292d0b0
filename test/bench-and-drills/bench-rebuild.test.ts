// Proves that the benchmark's part (g) (bench/parts/rebuild.ts) rebuilds a small SPOT ledger from PostgreSQL into an empty DATA_DIR, opens it in UBSCore with every account and record, passes the conservation check against the FUNDING side's rows, and refuses a ledger shape it cannot build.
// test-runner: own-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSql } from '../../src/db/sql.js';
import { benchRebuild } from '../../bench/parts/rebuild.js';
import { checkShape } from '../../bench/parts/rebuild-ledger.js';
import { startScratchPg } from '../support/database.js';

test('(g) small: rebuilt from PostgreSQL into an empty DATA_DIR, opened at the last seq, 0 conservation differences', async () => {
  const scratch = await startScratchPg('bench-rebuild-test-');
  const admin = openSql(scratch.pg.url('postgres'), { max: 1, application: 'bench-rebuild-test' });
  try {
    const server = { admin, urlOf: (database: string) => scratch.pg.url(database) };
    const g = await benchRebuild(server, { accounts: 301, records: 1_000, blockRecords: 7 }, () => undefined);
    assert.is(g.snapshotSeq, 301, 'the snapshot covers the opening records');
    assert.is(g.archivedEntries, 301, 'the opening records archived');
    assert.is(g.blocks, Math.ceil(1_000 / 7), 'the tail in blocks of 7');
    assert.is(g.lastSeq, 1_301);
    assert.is(g.conservation.differences, 0);
    assert.is(g.conservation.accountsChecked, 301);
    assert.ok(g.keysChecked > 0, 'sampled keys answered at their seq');
    assert.is(g.totalMs, g.rebuildMs + g.openMs);
    assert.ok(g.rebuildMs > 0 && g.openMs > 0 && g.withinMsMax, JSON.stringify(g));
    const left = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_database WHERE datname = 'bench_rebuild'`;
    assert.is(left[0]?.n, 0, 'its database dropped');
  } finally {
    await admin.end({ timeout: 5 });
    await scratch.stop();
  }
});

test('(g) refuses a ledger shape it cannot build, naming the value', () => {
  const rows: [{ accounts: number; records: number; blockRecords: number }, RegExp][] = [
    [{ accounts: 0, records: 10, blockRecords: 16 }, /accounts must be a positive integer, got 0/],
    [{ accounts: 1.5, records: 10, blockRecords: 16 }, /accounts must be a positive integer/],
    [{ accounts: 10, records: -1, blockRecords: 16 }, /records must be a non-negative integer, got -1/],
    [{ accounts: 10, records: 10_001, blockRecords: 16 }, /at most 1000 records per account/],
    [{ accounts: 10, records: 10, blockRecords: 0 }, /records per block must be an integer in 1\.\.4096, got 0/],
    [{ accounts: 10, records: 10, blockRecords: 5_000 }, /records per block/],
  ];
  for (const [shape, message] of rows) assert.throws(() => checkShape(shape), message, JSON.stringify(shape));
  checkShape({ accounts: 10, records: 10_000, blockRecords: 4_096 });
});

test.run();
