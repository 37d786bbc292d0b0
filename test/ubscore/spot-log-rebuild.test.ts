// Proves the start-up reconciliation of UBSCore's local WAL with PostgreSQL's SPOT log:
// a rebuild from PostgreSQL alone gives the original's balances, processed set and last seq; a
// local WAL behind is caught up, one ahead is pushed, one diverged is moved aside and rebuilt; a
// damaged block is refused with its seq; the archive keeps every processed key; a ledger from
// before the log seeds PostgreSQL.

import fs from 'node:fs/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { archiveSpotLog } from '../../src/ubscore/spot-log/archive.js';
import type { ReconcileOutcome } from '../../src/ubscore/spot-log/reconcile.js';
import { openWal } from '../../wal/log.js';
import { assertSameLedger, localWal, Original, reconcile, records, withWorld } from '../support/spot-log.js';

test('rebuild: an empty DATA_DIR gets the original ledger from PostgreSQL alone (snapshot inside a block, blocks on both sides)', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25), {}, 20); // the snapshot at 20 falls inside the block 16..25
    await o.batch(records(26, 40));
    const outcome = await reconcile(w).run;
    assert.is(outcome.kind, 'rebuilt');
    assert.is((outcome as Extract<ReconcileOutcome, { kind: 'rebuilt' }>).snapshotSeq, 20);
    await assertSameLedger(w.walDir, o);
  });
});

test('behind: a local WAL behind PostgreSQL is caught up with its blocks', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    await o.batch(records(26, 40), { wal: false });
    await o.batch(records(41, 50), { wal: false });
    await o.wal?.close();
    const outcome = await reconcile(w).run;
    assert.equal(outcome, { kind: 'caught-up', fromSeq: 26, toSeq: 50, records: 25 });
    await assertSameLedger(w.walDir, o);
  });
});

test('ahead: a primary pushes the local blocks PostgreSQL lacks; a rebuild from PostgreSQL then has them', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25), { pg: false });
    await o.batch(records(26, 40), { pg: false });
    await o.wal?.close();
    const outcome = await reconcile(w).run;
    assert.equal(outcome, { kind: 'pushed', fromSeq: 16, toSeq: 40, blocks: 2 });
    assert.is(await w.store.lastSeq(), 40);
    await fs.rm(w.walDir, { recursive: true });
    assert.is((await reconcile(w).run).kind, 'rebuilt');
    await assertSameLedger(w.walDir, o);
  });
});

test('diverged: a local WAL with other bytes at a seq PostgreSQL holds is moved aside (CRITICAL) and rebuilt', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    const former = new Original(localWal(w), null);
    await former.batch(records(1, 15));
    await former.batch(records(16, 25, 7n)); // a former owner's batch, never answered
    await former.wal?.close();
    const { run, lines } = reconcile(w);
    const outcome = await run;
    assert.is(outcome.kind, 'rebuilt');
    const critical = lines.find((l) => l.level === 'critical');
    assert.ok(critical !== undefined, 'a CRITICAL line');
    assert.match(
      String(critical.fields.reason),
      /the block ending at seq 25 differs \(local last seq 25, PostgreSQL's 25, archived through 0\)/,
    );
    const aside = (await fs.readdir(w.dir)).filter((name) => name.startsWith('ubscore.diverged-'));
    assert.is(aside.length, 1, 'the diverged WAL kept beside');
    await assertSameLedger(w.walDir, o);
  });
});

test('a damaged block in PostgreSQL is refused, naming its seq, and no WAL directory is left', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    await o.batch(records(26, 40));
    await w.sql`UPDATE spot_log SET block = set_byte(block, 40, get_byte(block, 40) # 1) WHERE last_seq = 25`;
    try {
      await reconcile(w).run;
      assert.unreachable('a damaged block was applied');
    } catch (error) {
      assert.match(String(error), /the stored block ending at seq 25 is refused/, String(error));
    }
    assert.is(
      await fs.access(w.walDir).then(
        () => 'there',
        () => 'absent',
      ),
      'absent',
    );
  });
});

test("a hole in PostgreSQL's log, even below the snapshot, is refused, naming the block after it", async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    await o.snapshot(); // the hole is below the snapshot: only processed-set entries would be lost
    await o.batch(records(26, 40));
    await w.sql`DELETE FROM spot_log WHERE last_seq = 25`;
    try {
      await reconcile(w).run;
      assert.unreachable('a log with a hole was applied');
    } catch (error) {
      assert.match(
        String(error),
        /block ending at seq 40 is refused: it starts at seq 26 where seq 16 was expected: seqs 16\.\.25 are missing/,
      );
    }
  });
});

test('archive then rebuild: the archived blocks leave spot_log, every processed key is still known', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    await o.snapshot();
    await o.batch(records(26, 40), {}, 30);
    await o.batch(records(41, 45));
    const done = await archiveSpotLog(w.store, 1);
    assert.is(done.throughSeq, 25, 'archived through the last block boundary <= the oldest snapshot');
    assert.is(done.blocks, 2);
    assert.equal(await w.store.read(1, 10).then((b) => b.map((x) => x.lastSeq)), [40, 45]);
    assert.is((await archiveSpotLog(w.store, 1)).blocks, 0, 'archiving again does nothing');
    const outcome = await reconcile(w).run;
    assert.is(outcome.kind, 'rebuilt');
    await assertSameLedger(w.walDir, o);
  });
});

test("archive with the retention's plan: the entries it may forget are not copied, kept keys and newer ones are", async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    await o.snapshot();
    await o.batch(records(26, 40));
    const done = await archiveSpotLog(w.store, 1, async () => ({ throughSeq: 20, keep: ['k-7-0', 'not-a-key'] }));
    // Seqs 1..20 hold 19 operations (11 is a status change): all but k-7 forgotten; 21..25 hold 4.
    assert.equal({ ...done, ms: 0 }, { throughSeq: 25, blocks: 2, entries: 5, forgotten: 18, ms: 0 });
    const rows = await w.sql<{ seq: string }[]>`SELECT seq::text AS seq FROM spot_processed ORDER BY spot_processed.seq`;
    assert.equal(
      rows.map((r) => Number(r.seq)),
      [7, 21, 23, 24, 25],
    );
    // What a rebuild knows is what a retention pass with that plan leaves.
    o.keys.splice(0, o.keys.length, ...o.keys.filter((key) => !/^EXTERNAL_\w+:k-(\d|1\d|20)-0$/.test(key) || key.endsWith(':k-7-0')));
    assert.is((await reconcile(w).run).kind, 'rebuilt');
    await assertSameLedger(w.walDir, o);
  });
});

test('seed: PostgreSQL without a SPOT log is seeded from a pruned local ledger, and a rebuild from it alone matches', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), null);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25));
    await o.snapshot(); // the local WAL is pruned through 25
    await o.batch(records(26, 40));
    await o.wal?.close();
    const outcome = await reconcile(w).run;
    assert.is(outcome.kind, 'seeded');
    assert.is(await w.store.archivedThrough(), 25);
    assert.is(await w.store.lastSeq(), 40);
    await assertSameLedger(w.walDir, o);
    await fs.rm(w.walDir, { recursive: true });
    assert.is((await reconcile(w).run).kind, 'rebuilt');
    await assertSameLedger(w.walDir, o);
  });
});

test('standby: a local WAL ahead of PostgreSQL is rebuilt, PostgreSQL is not written', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25), { pg: false });
    await o.wal?.close();
    const outcome = await reconcile(w, 'standby').run;
    assert.is(outcome.kind, 'rebuilt');
    assert.is(await w.store.lastSeq(), 15);
    const wal = openWal(w.walDir);
    assert.is(wal.lastSeq(), 15);
    await wal.close();
  });
});

test('stale PostgreSQL log: a primary whose local WAL is ahead by records it pruned behind a snapshot refuses, never rebuilds from PostgreSQL', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), w.store);
    await o.batch(records(1, 15));
    // SPOT_LOG=off for a while: batches only in LMDB, then a local snapshot prunes them.
    await o.batch(records(16, 25), { pg: false });
    await o.snapshot({ pg: false });
    await o.batch(records(26, 40), { pg: false });
    await o.wal?.close();
    const refused = await reconcile(w).run.then(
      () => null,
      (error: unknown) => String(error),
    );
    assert.match(String(refused), /ahead of PostgreSQL's SPOT log \(seq 15\) by records it no longer holds as blocks/);
    assert.is(await w.store.lastSeq(), 15, 'PostgreSQL untouched');
    const wal = openWal(w.walDir);
    assert.is(wal.lastSeq(), 40, 'the local WAL is where it was, not moved aside');
    await wal.close();
  });
});

test.run();
