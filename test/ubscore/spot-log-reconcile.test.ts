// Proves that the start-up reconciliation decides from whole ranges, never from one seq: a stale
// local WAL (an old primary restarted on its old DATA_DIR after a newer owner ran and archived)
// is rebuilt to the newer owner's ledger, never taken as caught up or in step, and the next block
// continues PostgreSQL's chain; an unanswered local tail at the archive boundary is rebuilt; equal
// at the boundary is in step only with the same snapshot; and every row of the decision table.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { archiveSpotLog } from '../../src/ubscore/spot-log/archive.js';
import { decide, type Evidence, type LocalRange } from '../../src/ubscore/spot-log/reconcile-plan.js';
import { SpotLogGap, type PgRange } from '../../src/ubscore/spot-log/store.js';
import { assertSameLedger, blocksOf, localWal, Original, reconcile, records, withWorld, type World } from '../support/spot-log.js';

/** The old primary: seqs 1..20 answered (in both logs), then `tail` (its own, never answered) in LMDB only. */
async function oldPrimary(w: World, tail?: { from: number; to: number; snapshot?: boolean }): Promise<Original> {
  const old = new Original(localWal(w), w.store);
  await old.batch(records(1, 15));
  await old.batch(records(16, 20));
  if (tail !== undefined) await old.batch(records(tail.from, tail.to, 7n), { pg: false }, tail.snapshot === true ? tail.to : undefined);
  await old.wal?.close();
  return old;
}

/** The newer owner: the same seqs 1..20, then its own records in PostgreSQL only, with a snapshot (another time) at `snapshotAt`. */
async function newerOwner(w: World, to: number, snapshotAt: number): Promise<Original> {
  const newer = new Original(null, w.store, 1_800_000_000_000);
  await newer.batch(records(1, 20), { pg: false });
  for (let from = 21; from <= to; from += 10) await newer.batch(records(from, Math.min(from + 9, to)), {}, snapshotAt);
  return newer;
}

for (const after of [0, 10]) {
  test(`stale WAL: an old primary at seq 20, the newer owner archived through its snapshot at 40${after > 0 ? ' and wrote on to 50' : ''}: rebuilt to the newer owner's ledger, the next block continues PostgreSQL's chain`, async () => {
    await withWorld(async (w) => {
      await oldPrimary(w);
      const newer = await newerOwner(w, 40 + after, 40);
      assert.is((await archiveSpotLog(w.store)).throughSeq, 40);
      assert.equal(await w.store.range(), {
        archived: 40,
        firstBlockSeq: after > 0 ? 41 : null,
        lastBlockSeq: after > 0 ? 50 : null,
        last: 40 + after,
      });
      const { run, lines } = reconcile(w);
      const outcome = await run;
      assert.is(outcome.kind, 'rebuilt', JSON.stringify(outcome));
      assert.match(String((outcome as { reason: string }).reason), /archived its log past the local last seq 20/);
      assert.ok(
        lines.some((l) => l.level === 'warn' && /moved aside/.test(l.msg)),
        'the stale WAL is moved aside',
      );
      await assertSameLedger(w.walDir, newer);
      // The newer owner's next block continues the chain; the old primary's next one (seq 21) is refused.
      const next = 40 + after + 1;
      await newer.batch(records(next, next + 4));
      const forked = await w.store.append(1, blocksOf(records(21, 25, 7n))).then(
        () => null,
        (e: unknown) => e,
      );
      assert.ok(forked instanceof SpotLogGap, `refused with SpotLogGap, got ${String(forked)}`);
      assert.match(String(forked), /must start at seq 41.*not at seq 21/);
    });
  });
}

test("boundary: the local WAL ends at the archive boundary with its own unanswered tail under the owner's blocks: rebuilt, never caught up", async () => {
  await withWorld(async (w) => {
    await oldPrimary(w, { from: 21, to: 30 });
    const newer = await newerOwner(w, 40, 30);
    assert.is((await archiveSpotLog(w.store)).throughSeq, 30);
    const outcome = await reconcile(w).run;
    assert.is(outcome.kind, 'rebuilt', JSON.stringify(outcome));
    assert.match(String((outcome as { reason: string }).reason), /ends at the archive boundary 30 and PostgreSQL holds blocks after it/);
    await assertSameLedger(w.walDir, newer);
  });
});

for (const localSnapshot of [true, false]) {
  test(`equal at the boundary, diverged under it (${localSnapshot ? 'a local snapshot of other bytes' : 'no local snapshot'}): rebuilt, not in step`, async () => {
    await withWorld(async (w) => {
      await oldPrimary(w, { from: 21, to: 30, snapshot: localSnapshot });
      const newer = await newerOwner(w, 30, 30);
      assert.is((await archiveSpotLog(w.store)).throughSeq, 30);
      const outcome = await reconcile(w).run;
      assert.is(outcome.kind, 'rebuilt', JSON.stringify(outcome));
      assert.match(String((outcome as { reason: string }).reason), /cannot be proven in step/);
      await assertSameLedger(w.walDir, newer);
    });
  });
}

test('equal at the boundary with the very snapshot PostgreSQL keeps: in step, the WAL kept', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), w.store);
    await o.batch(records(1, 15));
    await o.batch(records(16, 30), {}, 30);
    await o.wal?.close();
    assert.is((await archiveSpotLog(w.store)).throughSeq, 30);
    assert.equal(await reconcile(w).run, { kind: 'in-step', seq: 30 });
    await assertSameLedger(w.walDir, o);
  });
});

test('a hole in spot_log met by the catch-up refuses the start, naming the missing seqs', async () => {
  await withWorld(async (w) => {
    const o = new Original(localWal(w), w.store);
    await o.batch(records(1, 15));
    await o.wal?.close();
    await o.batch(records(16, 25), { wal: false });
    await o.batch(records(26, 40), { wal: false });
    await w.sql`DELETE FROM spot_log WHERE last_seq = 25`; // a point-in-time restore, a lost replica
    const refused = await reconcile(w).run.then(
      () => null,
      (e: unknown) => String(e),
    );
    assert.match(String(refused), /starts at seq 26 where seq 16 was expected: seqs 16\.\.25 are missing/);
  });
});

const pg = (archived: number, first: number | null, last: number | null): PgRange => ({
  archived,
  firstBlockSeq: first,
  lastBlockSeq: last,
  last: Math.max(archived, last ?? 0),
});
const local = (last: number, pruned = 0): LocalRange => ({ first: pruned + 1, last, pruned });
const same: Evidence = { kind: 'same', how: 'test' };
const differs: Evidence = { kind: 'differs', reason: 'test' };
const unproven: Evidence = { kind: 'unverifiable', reason: 'test' };

test('the decision table: every case of reconcile.ts, one row each', () => {
  const rows: [string, LocalRange, PgRange, 'primary' | 'standby', Evidence, string][] = [
    ['behind within the log', local(20), pg(0, 1, 40), 'primary', same, 'catch-up'],
    ['behind within the log, diverged', local(20), pg(0, 1, 40), 'primary', differs, 'rebuild'],
    ['behind within the log, unproven (local block pruned)', local(20, 20), pg(0, 1, 40), 'primary', unproven, 'rebuild'],
    ['behind across the archive boundary', local(20), pg(40, null, null), 'primary', same, 'rebuild'],
    ['behind across the archive boundary, blocks after it', local(20), pg(40, 41, 50), 'primary', same, 'rebuild'],
    ['at the boundary, PostgreSQL newer', local(30), pg(30, 31, 40), 'primary', same, 'rebuild'],
    ['equal at the boundary, same snapshot', local(30, 30), pg(30, null, null), 'primary', same, 'in-step'],
    ['equal at the boundary, unproven', local(30), pg(30, null, null), 'primary', unproven, 'rebuild'],
    ['equal inside the log', local(40), pg(0, 1, 40), 'primary', same, 'in-step'],
    ['equal inside the log, diverged', local(40), pg(0, 1, 40), 'standby', differs, 'rebuild'],
    ['ahead continuing', local(50), pg(0, 1, 40), 'primary', same, 'push'],
    ['ahead continuing the archive boundary by its snapshot', local(50, 30), pg(30, null, null), 'primary', same, 'push'],
    ['ahead, standby', local(50), pg(0, 1, 40), 'standby', same, 'rebuild'],
    ['ahead, diverged at the meeting block', local(50), pg(0, 1, 40), 'primary', differs, 'rebuild'],
    ['ahead, not proven to continue', local(50, 30), pg(30, null, null), 'primary', unproven, 'rebuild'],
    ['ahead, pruned past PostgreSQL (its log is stale)', local(50, 45), pg(0, 1, 40), 'primary', unproven, 'refuse'],
  ];
  for (const [name, l, p, role, evidence, kind] of rows) assert.is(decide(l, p, role, evidence).kind, kind, name);
  const diverged = decide(local(40), pg(0, 1, 40), 'primary', differs);
  assert.equal(diverged.kind === 'rebuild' && diverged.diverged, true, 'a divergence is reported as one');
});

test.run();
