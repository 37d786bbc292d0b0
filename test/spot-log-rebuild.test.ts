// Proves the start-up reconciliation of UBSCore's local WAL with PostgreSQL's SPOT log (issue 26):
// a rebuild from PostgreSQL alone gives the original's balances, processed set and last seq; a
// local WAL behind is caught up, one ahead is pushed, one diverged is moved aside and rebuilt; a
// damaged block is refused with its seq; the archive keeps every processed key; a ledger from
// before the log seeds PostgreSQL.

import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { migrate } from '../src/db/schema.js';
import { openSql, type Sql } from '../src/db/sql.js';
import { archiveSpotLog } from '../src/spot-log/archive.js';
import { reconcileSpotLog, type ReconcileOutcome } from '../src/spot-log/reconcile.js';
import { SpotLogStore } from '../src/spot-log/store.js';
import { opKeyOf, SpotLedger, type WalRecord } from '../src/ubscore/core.js';
import { encodeBatch, readBlockHeader } from '../wal/block.js';
import { openWal, type WalLog } from '../wal/log.js';
import { writeLedgerId } from '../wal/meta.js';
import { restore } from '../wal/restore.js';
import { SnapshotEncoder, type EncodedSnapshot } from '../wal/snapshot.js';
import { SnapshotStore } from '../wal/snapshot-store.js';
import { createTestDatabase } from './support/database.js';
import { keptLog } from './support/app.js';

const USERS = 7;

/** Records seq `from`..`to`: deposits, some withdrawals, a status change; `salt` makes other bytes for the same seqs. */
function records(from: number, to: number, salt = 0n): WalRecord[] {
  const out: WalRecord[] = [];
  for (let seq = from; seq <= to; seq++) {
    const userId = BigInt((seq % USERS) + 1);
    // Withdrawals of 1 BTC unit only after every user has had deposits (seqs 1..21).
    const withdraw = seq > 21 && seq % 5 === 0;
    if (seq % 11 === 0) out.push({ kind: 'status', seq, userId, asset: 'BTC', status: 'ACTIVE' });
    else
      out.push({
        kind: 'op',
        seq,
        op: withdraw ? 'EXTERNAL_WITHDRAW' : 'EXTERNAL_DEPOSIT',
        key: `k-${seq}-${salt}`,
        userId,
        asset: withdraw || seq % 3 !== 0 ? 'BTC' : 'ETH',
        amount: withdraw ? 1n : 100n + BigInt(seq) + salt,
        outcome: { kind: 'applied' },
      });
  }
  return out;
}

type Targets = { readonly wal?: boolean; readonly pg?: boolean };

/** One ledger written as UBSCore writes it, batch by batch, to LMDB and/or PostgreSQL. */
class Original {
  readonly ledger = new SpotLedger();
  readonly keys: string[] = [];
  constructor(
    readonly wal: WalLog | null,
    readonly store: SpotLogStore | null,
  ) {}

  /** Writes one batch; `snapshotAt`: a snapshot of the ledger at that seq of the batch, written after it. */
  async batch(recs: readonly WalRecord[], to: Targets = {}, snapshotAt?: number): Promise<void> {
    const batch = encodeBatch(recs);
    if (batch === null) throw new Error('no records');
    let snap: EncodedSnapshot | null = null;
    for (const r of recs) {
      this.ledger.applyRecord(r);
      if (r.kind === 'op') this.keys.push(opKeyOf(r.op, r.key));
      if (r.seq === snapshotAt) snap = this.encodeSnapshot();
    }
    if (to.wal !== false && this.wal !== null) await this.wal.appendBatch(batch);
    const blocks = batch.blocks.map((b) => {
      const header = readBlockHeader(b.bytes, b.lastSeq);
      if (!header.ok) throw new Error(header.reason);
      return { firstSeq: header.record.firstSeq, lastSeq: b.lastSeq, bytes: Buffer.from(b.bytes) };
    });
    if (to.pg !== false && this.store !== null) await this.store.append(1, blocks);
    if (snap !== null) await this.writeSnapshot(snap, to);
  }

  private encodeSnapshot(): EncodedSnapshot {
    const capture = this.ledger.captureAccounts();
    const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, 1_700_000_000_000);
    while (!capture.visit(1000, encoder.add));
    this.ledger.releaseCapture(capture);
    return encoder.finish();
  }

  /** A snapshot of the ledger now, to LMDB (then the WAL pruned through it) and/or PostgreSQL. */
  async snapshot(to: Targets = {}): Promise<number> {
    return this.writeSnapshot(this.encodeSnapshot(), to);
  }

  private async writeSnapshot(snap: EncodedSnapshot, to: Targets): Promise<number> {
    if (to.wal !== false && this.wal !== null) {
      await new SnapshotStore(this.wal.databases).write(snap);
      while ((await this.wal.pruneThrough(snap.info.seq, 4)) < snap.info.seq);
    }
    if (to.pg !== false && this.store !== null)
      await this.store.putSnapshot({ seq: snap.info.seq, header: snap.header, chunks: snap.chunks });
    return snap.info.seq;
  }
}

type World = { sql: Sql; store: SpotLogStore; dir: string; walDir: string; ledgerId: string };

async function withWorld(body: (w: World) => Promise<void>): Promise<void> {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 2, application: 'spot-log-rebuild-test' });
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'spot-rebuild-'));
  try {
    await migrate(sql);
    const ledgerId = randomUUID();
    await sql`INSERT INTO ledger_identity (ledger_id) VALUES (${ledgerId}::uuid)`;
    await body({ sql, store: new SpotLogStore(sql), dir, walDir: path.join(dir, 'ubscore'), ledgerId });
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

function localWal(w: World): WalLog {
  const wal = openWal(w.walDir);
  writeLedgerId(wal.databases, w.ledgerId);
  return wal;
}

function reconcile(w: World, role: 'primary' | 'standby' = 'primary') {
  const { log, lines } = keptLog();
  const run = reconcileSpotLog({ sql: w.sql, store: w.store, walDir: w.walDir, role, epoch: role === 'primary' ? 1 : 'standby', log });
  return { run, lines };
}

/** The ledger UBSCore would start with from `walDir`, checked against the original: balances, processed set, last seq. */
async function assertSameLedger(walDir: string, original: Original): Promise<void> {
  const wal = openWal(walDir);
  try {
    const { ledger } = restore(wal, new SnapshotStore(wal.databases));
    assert.is(ledger.lastSeq, original.ledger.lastSeq, 'last seq');
    assert.is(wal.lastSeq(), original.ledger.lastSeq, 'WAL last seq');
    for (let user = 1n; user <= BigInt(USERS); user++)
      for (const asset of ['BTC', 'ETH'])
        assert.equal(ledger.balanceOf(user, asset), original.ledger.balanceOf(user, asset), `balance of ${user} ${asset}`);
    assert.is(wal.processedCount(), original.keys.length, 'processed entries');
    for (const key of original.keys) assert.ok(wal.getProcessed(key) !== undefined, `processed ${key}`);
    // The seq index names every entry, so the retention can prune what the rebuild wrote.
    assert.is(wal.databases.processedSeq.getKeysCount({}), original.keys.length, 'seq index entries');
  } finally {
    await wal.close();
  }
}

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
    assert.match(String(critical.fields.reason), /the block ending at seq 25 differs \(local last seq 25, PostgreSQL's 25\)/);
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
      assert.match(String(error), /block ending at seq 40 is refused: it starts at seq 26 where seq 16 was expected/);
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
