// Proves that spot_log is a chain the database enforces (migration 0012): a block leaving a hole,
// one overlapping the block below (a fork), one under the archive mark and one cutting into the
// block above are refused with SpotLogGap naming the expected and the given first seq; the exact
// re-append and the first block after the archive boundary are taken; a seed whose first block
// straddles the local pruned mark still seeds and rebuilds; migrating refuses a log that already
// has a hole, naming it, and adopts a straddling seed; the standby's tail names the missing seqs.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MIGRATIONS_DIR, migrate } from '../../src/db/migrations.js';
import { openSql } from '../../src/db/sql.js';
import { archiveSpotLog } from '../../src/ubscore/spot-log/archive.js';
import { SpotLogConflict, SpotLogGap, type LogBlock } from '../../src/ubscore/spot-log/store.js';
import { SpotLogTailer } from '../../src/ubscore/spot-log/tail.js';
import { createTestDatabase } from '../support/database.js';
import { assertSameLedger, blocksOf, localWal, Original, reconcile, records, withWorld } from '../support/spot-log.js';

async function refusal(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    () => null,
    (e: unknown) => e,
  );
}

test('the database refuses a hole, a fork, a block under the archive mark and one cutting into the block above; takes the exact re-append', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    const hole = await refusal(w.store.append(1, blocksOf(records(21, 30))));
    assert.ok(hole instanceof SpotLogGap, String(hole));
    assert.match(
      String(hole),
      /the block of seqs 21\.\.30 must start at seq 16 \(after the block ending at seq 15\), not at seq 21: seqs 16\.\.20 would be missing/,
    );
    const fork = await refusal(w.store.append(1, blocksOf(records(10, 20, 3n))));
    assert.ok(fork instanceof SpotLogGap, String(fork));
    assert.match(String(fork), /must start at seq 16 .*not at seq 10: it overlaps seqs 10\.\.15/);
    assert.equal(
      (await w.store.read(1, 10)).map((b) => b.lastSeq),
      [15],
      'nothing refused was stored',
    );
    // The same block again (a retried commit whose answer was lost) is success; other bytes conflict.
    await w.store.append(1, blocksOf(records(1, 15)));
    assert.ok((await refusal(w.store.append(1, blocksOf(records(1, 15, 5n))))) instanceof SpotLogConflict);
    await o.batch(records(16, 25));
    await o.batch(records(26, 40));
    // A block inserted under one already there that does not end where that one starts.
    await w.sql`DELETE FROM spot_log WHERE last_seq = 25`;
    const cut = await refusal(w.store.append(1, blocksOf(records(16, 20))));
    assert.match(String(cut), /the block of seqs 26\.\.40 must start at seq 21 \(after the block ending at seq 20\), not at seq 26/);
  });
});

test('after an archive: the first block after the boundary is taken, a block under the mark is refused', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25), {}, 25);
    assert.is((await archiveSpotLog(w.store)).throughSeq, 25);
    const under = await refusal(w.store.append(1, blocksOf(records(16, 25, 9n))));
    assert.match(String(under), /must start at seq 26 \(after the archive mark 25, with no block below it\), not at seq 16/);
    await o.batch(records(26, 30));
    assert.is(await w.store.lastSeq(), 30);
  });
});

test('two transactions each continuing seq 15: the one that commits second is refused', async () => {
  await withWorld(async (w) => {
    const o = new Original(null, w.store);
    await o.batch(records(1, 15));
    const insert = (tx: typeof w.sql, block: LogBlock) =>
      tx`INSERT INTO spot_log (last_seq, first_seq, epoch, block) VALUES (${block.lastSeq}, ${block.firstSeq}, 1, ${block.bytes})`;
    const [mine] = blocksOf(records(16, 25)) as [LogBlock];
    const [theirs] = blocksOf(records(16, 30, 4n)) as [LogBlock];
    let inserted!: () => void;
    const insertedFirst = new Promise<void>((resolve) => {
      inserted = resolve;
    });
    let commitLater!: () => void;
    const held = new Promise<void>((resolve) => {
      commitLater = resolve;
    });
    const first = w.sql.begin(async (tx) => {
      await insert(tx as unknown as typeof w.sql, mine);
      inserted();
      await held;
    });
    await insertedFirst;
    await w.sql.begin(async (tx) => insert(tx as unknown as typeof w.sql, theirs));
    commitLater();
    const refused = await refusal(first);
    assert.is((refused as { code?: string } | null)?.code, 'LF002', String(refused));
    assert.equal(
      (await w.store.read(1, 10)).map((b) => b.lastSeq),
      [15, 30],
    );
  });
});

test('seed: a local first block straddling the pruned mark is seeded with the archive mark before it, and rebuilds', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), null);
    await o.batch(records(1, 15));
    await o.batch(records(16, 25), {}, 20); // pruned through 20: the block 16..25 stays
    await o.batch(records(26, 40));
    await o.wal?.close();
    assert.is((await reconcile(w).run).kind, 'seeded');
    assert.equal(await w.store.range(), { archived: 15, firstBlockSeq: 16, lastBlockSeq: 40, last: 40 });
    await fs.rm(w.walDir, { recursive: true });
    assert.is((await reconcile(w).run).kind, 'rebuilt');
    await assertSameLedger(w.walDir, o);
  });
});

/** A database migrated through 0011, its spot_log rows written as given (no chain check yet), then migrated. */
async function migrateOver(rows: readonly LogBlock[], archived: number): Promise<{ error: unknown; archived: number | null }> {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 1, application: 'spot-log-chain-test' });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'migrations-0011-'));
  try {
    for (const name of await fs.readdir(MIGRATIONS_DIR))
      if (name.endsWith('.sql') && name < '0012') await fs.copyFile(path.join(MIGRATIONS_DIR, name), path.join(dir, name));
    await migrate(sql, dir);
    for (const b of rows)
      await sql`INSERT INTO spot_log (last_seq, first_seq, epoch, block) VALUES (${b.lastSeq}, ${b.firstSeq}, 1, ${b.bytes})`;
    await sql`UPDATE spot_log_state SET archived_through_seq = ${archived}`;
    const error = await refusal(migrate(sql));
    const [row] = await sql<{ seq: string }[]>`SELECT archived_through_seq::text AS seq FROM spot_log_state`;
    return { error, archived: row === undefined ? null : Number(row.seq) };
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

test('migrating: a log that already has a hole is refused, naming the missing seqs; a straddling seed is adopted', async () => {
  const holed = await migrateOver([...blocksOf(records(1, 15)), ...blocksOf(records(21, 30))], 0);
  assert.match(String(holed.error), /the block of seqs 21\.\.30 follows seq 15 .*seqs 16\.\.20 are missing/);
  const straddling = await migrateOver([...blocksOf(records(16, 25)), ...blocksOf(records(26, 30))], 20);
  assert.is(straddling.error, null, String(straddling.error));
  assert.is(straddling.archived, 15, 'the archive mark lowered to the seq before the first block');
  const healthy = await migrateOver([...blocksOf(records(1, 15)), ...blocksOf(records(16, 30))], 0);
  assert.is(healthy.error, null, String(healthy.error));
});

test("the standby's tail, finding no block after its seq while spot_log reaches further, names the missing seqs", async () => {
  const broken: string[] = [];
  const tail = new SpotLogTailer({
    store: { read: async () => [], lastSeq: async () => 40 },
    follow: async () => ({ kind: 'applied', lastSeq: 20, appliedBlocks: 0, skippedBlocks: 0 }),
    appliedSeq: 20,
    pollMs: 10,
    log: { warn: () => undefined, critical: () => undefined },
    onBroken: (reason) => void broken.push(reason),
  });
  const refused = await refusal(tail.catchUp());
  assert.match(String(refused), /refused/);
  assert.match(broken[0] ?? '', /seqs 21\.\.40 are missing/);
});

test.run();
