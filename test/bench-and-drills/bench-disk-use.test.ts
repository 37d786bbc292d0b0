// Proves the bench's disk figures: the WAL, processed-set and snapshot bytes read from GET /metrics, scaled to one million committed transfers, and PostgreSQL's growth per relation between two readings.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { diskUseFrom } from '../../bench/meters/disk-use.js';
import { pgGrowth } from '../../bench/meters/pg-growth.js';

const METRICS = [
  '# HELP transfer_ubscore_lmdb_bytes Bytes of each UBSCore LMDB database',
  '# TYPE transfer_ubscore_lmdb_bytes gauge',
  'transfer_ubscore_lmdb_bytes{db="wal",thread="ubscore"} 4096000',
  'transfer_ubscore_lmdb_bytes{thread="ubscore",db="processed"} 8192000',
  'transfer_ubscore_lmdb_bytes{db="snapshot",thread="ubscore"} 409600',
  'transfer_ubscore_lmdb_bytes{db="meta",thread="ubscore"} 4096',
  'transfer_ubscore_lmdb_file_bytes{thread="ubscore"} 16384000',
  '',
].join('\n');

test('bytes per million committed transfers, by part', () => {
  const use = diskUseFrom(METRICS, 20_000);
  assert.equal(use.bytes, { wal: 4_096_000, processed: 8_192_000, snapshot: 409_600, dataFile: 16_384_000 });
  assert.equal(use.perMillionTransfers, { wal: 204_800_000, processed: 409_600_000, snapshot: 20_480_000, dataFile: 819_200_000 });
});

test('no committed transfer: no per-million figures', () => {
  assert.is(diskUseFrom(METRICS, 0).perMillionTransfers, null);
});

test('a missing gauge is an error, not a zero', () => {
  assert.throws(
    () => diskUseFrom(METRICS.replace('transfer_ubscore_lmdb_file_bytes{thread="ubscore"} 16384000', ''), 10),
    /transfer_ubscore_lmdb_file_bytes/,
  );
});

test("PostgreSQL's growth: each relation's bytes gained over the transfers committed in between, largest first", () => {
  const before = {
    committed: 100,
    bytes: new Map([
      ['table transfers_tb', 8_192],
      ['index transfers_tb_pkey', 8_192],
      ['table assets', 8_192],
    ]),
  };
  const after = {
    committed: 20_100,
    bytes: new Map([
      ['table transfers_tb', 4_104_192],
      ['index transfers_tb_pkey', 1_032_192],
      ['table assets', 8_192],
      ['table alerts', 8_192],
    ]),
  };
  assert.equal(pgGrowth(before, after), {
    committed: 20_000,
    perMillionTransfers: [
      { relation: 'table transfers_tb', bytes: 204_800_000 },
      { relation: 'index transfers_tb_pkey', bytes: 51_200_000 },
      { relation: 'table alerts', bytes: 409_600 },
      { relation: 'table assets', bytes: 0 },
    ],
    totalPerMillionTransfers: 256_409_600,
  });
  assert.is(pgGrowth(after, after), null, 'nothing committed in between: no per-million figures');
});

test.run();
