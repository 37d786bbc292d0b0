// A SPOT ledger written as UBSCore writes it, to a local LMDB WAL and/or PostgreSQL's spot_log,
// with a database and a DATA_DIR per test, for the tests of the start-up reconciliation, the
// rebuild and the chain of spot_log.

import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { migrate } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { reconcileSpotLog } from '../../src/ubscore/spot-log/reconcile.js';
import { SpotLogStore, type LogBlock } from '../../src/ubscore/spot-log/store.js';
import { opKeyOf, type WalRecord } from '../../src/domain/spot-records.js';
import { SpotLedger } from '../../src/ubscore/ledger/core.js';
import { encodeBatch, readBlockHeader } from '../../wal/block.js';
import { openWal, type WalLog } from '../../wal/log.js';
import { writeLedgerId } from '../../wal/meta.js';
import { restore } from '../../src/ubscore/durability/restore.js';
import { SnapshotEncoder, type EncodedSnapshot } from '../../wal/snapshot.js';
import { SnapshotStore } from '../../wal/snapshot-store.js';
import { createTestDatabase } from './database.js';
import { keptLog } from './app.js';

export const USERS = 7;

/** Records seq `from`..`to`: deposits, some withdrawals, a status change; `salt` makes other bytes for the same seqs. */
export function records(from: number, to: number, salt = 0n): WalRecord[] {
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

/** The spot_log blocks UBSCore's group commit makes of `recs` (one batch). */
export function blocksOf(recs: readonly WalRecord[]): LogBlock[] {
  const batch = encodeBatch(recs);
  if (batch === null) throw new Error('no records');
  return batch.blocks.map((b) => {
    const header = readBlockHeader(b.bytes, b.lastSeq);
    if (!header.ok) throw new Error(header.reason);
    return { firstSeq: header.record.firstSeq, lastSeq: b.lastSeq, bytes: Buffer.from(b.bytes) };
  });
}

type Targets = { readonly wal?: boolean; readonly pg?: boolean };

/** One ledger written as UBSCore writes it, batch by batch, to LMDB and/or PostgreSQL. */
export class Original {
  readonly ledger = new SpotLedger();
  readonly keys: string[] = [];
  constructor(
    readonly wal: WalLog | null,
    readonly store: SpotLogStore | null,
    /** The time its snapshots say they were taken: another owner's snapshot of the same state has other bytes. */
    readonly takenAtMs = 1_700_000_000_000,
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
    const blocks = blocksOf(recs);
    if (to.pg !== false && this.store !== null) await this.store.append(1, blocks);
    if (snap !== null) await this.writeSnapshot(snap, to);
  }

  private encodeSnapshot(): EncodedSnapshot {
    const capture = this.ledger.captureAccounts();
    const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, this.takenAtMs);
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

export type World = { sql: Sql; store: SpotLogStore; dir: string; walDir: string; ledgerId: string };

export async function withWorld(body: (w: World) => Promise<void>): Promise<void> {
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

export function localWal(w: World): WalLog {
  const wal = openWal(w.walDir);
  writeLedgerId(wal.databases, w.ledgerId);
  return wal;
}

export function reconcile(w: World, role: 'primary' | 'standby' = 'primary') {
  const { log, lines } = keptLog();
  const run = reconcileSpotLog({ sql: w.sql, store: w.store, walDir: w.walDir, role, epoch: role === 'primary' ? 1 : 'standby', log });
  return { run, lines };
}

/** The ledger UBSCore would start with from `walDir`, checked against the original: balances, processed set, last seq. */
export async function assertSameLedger(walDir: string, original: Original): Promise<void> {
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
