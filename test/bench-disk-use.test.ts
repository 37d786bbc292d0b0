// Proves the bench's disk figures: the WAL, processed-set and snapshot bytes read from GET /metrics, scaled to one million committed transfers.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { diskUseFrom } from '../bench/meters/disk-use.js';

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

test.run();
