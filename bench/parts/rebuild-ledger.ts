// The SPOT ledger (g) rebuilds, written straight into a fresh database as a primary's UBSCore and
// the SPOT log's archive would have left it: `accounts` accounts opened by one deposit
// each (seqs 1..accounts), a snapshot at the last of them, those records archived out of spot_log
// (their processed-set entries in spot_processed, the mark at the snapshot's seq), then `records`
// more records in spot_log, deposits and withdrawals on those accounts, encoded by UBSCore's own
// encoder in blocks of `blockRecords` (one group commit each). Beside it, on the FUNDING side,
// one external_movements row per record (SPOT, DONE, settled before the check), which is what the
// conservation check sets UBSCore's balances against: a record lost or doubled by the rebuild is a
// difference there.
//
// Each record's account, kind and amount are a function of its seq, computed once here for the
// WAL and once in SQL for external_movements, so the two sides are written independently.
// Loading goes through COPY; its time is reported but is not the figure.

import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomUUID } from 'node:crypto';
import type { Sql } from '../../src/db/sql.js';
import type { OpRecord } from '../../src/domain/spot-records.js';
import { SpotLedger } from '../../src/ubscore/ledger/core.js';
import { encodeBatch } from '../../wal/block.js';
import { blockEntries, type StoredBlock } from '../../wal/import.js';
import { SnapshotEncoder } from '../../wal/snapshot.js';
import { SpotLogStore } from '../../src/ubscore/spot-log/store.js';

/** The assets of the rebuilt ledger: an account is (user, asset), two per user. */
const ASSETS = ['BTC', 'USDT'] as const;
/** Blocks of the archived opening records: their size does not matter to a rebuild, only their entries. */
const OPENING_BLOCK_RECORDS = 4_096;
/** The opening deposit is at least this, and a withdrawal at most WITHDRAW_UNITS_MAX. */
const OPENING_UNITS_MIN = 1_000_000;
const WITHDRAW_UNITS_MAX = 1_000;
/**
 * A tail of this many records per account at most: each account then gets at most about
 * records / accounts / 4 withdrawals of WITHDRAW_UNITS_MAX, which its opening deposit covers.
 */
const RECORDS_PER_ACCOUNT_MAX = 1_000;
/** Blocks of the tail per COPY row batch written to the stream at once. */
const COPY_BLOCKS_PER_CHUNK = 1_024;
/**
 * Records per block of the log: one group commit's. The service's batches held 1.7 to 59 records
 * in the benchmark's runs (UBSCore cmds per WAL batch, from the open loop to 256 connections),
 * about 18 at 64 connections; more, smaller rows are the harder case for a rebuild.
 */
export const REBUILD_BLOCK_RECORDS_DEFAULT = 16;
/** The size and bound: 1M accounts + 1M records, rebuilt and opened within 30 s. */
export const REBUILD_ACCOUNTS = 1_000_000;
export const REBUILD_RECORDS = 1_000_000;
export const REBUILD_MS_MAX = 30_000;
/** The epoch the ledger's blocks were written at (ledger_owner's, set to it). */
export const REBUILD_EPOCH = 1;

export type LedgerShape = { readonly accounts: number; readonly records: number; readonly blockRecords: number };

export type Loaded = {
  /** The snapshot's seq: every opening record, archived. */
  readonly snapshotSeq: number;
  /** The last seq of the log. */
  readonly lastSeq: number;
  readonly blocks: number;
  readonly archivedEntries: number;
  readonly loadMs: number;
};

/** Checks the shape before anything is written: a clear error for each bad value. */
export function checkShape(shape: LedgerShape): void {
  const { accounts, records, blockRecords } = shape;
  if (!Number.isSafeInteger(accounts) || accounts < 1) throw new Error(`(g) accounts must be a positive integer, got ${accounts}`);
  if (!Number.isSafeInteger(records) || records < 0) throw new Error(`(g) records must be a non-negative integer, got ${records}`);
  if (records > accounts * RECORDS_PER_ACCOUNT_MAX)
    throw new Error(`(g) at most ${RECORDS_PER_ACCOUNT_MAX} records per account: ${records} records on ${accounts} accounts`);
  if (!Number.isSafeInteger(blockRecords) || blockRecords < 1 || blockRecords > OPENING_BLOCK_RECORDS)
    throw new Error(`(g) records per block must be an integer in 1..${OPENING_BLOCK_RECORDS}, got ${blockRecords}`);
}

/** Account `a`'s user and asset. */
function accountOf(a: number): { userId: bigint; asset: string } {
  return { userId: BigInt(Math.floor(a / 2) + 1), asset: ASSETS[a % 2] as string };
}

/** The record at `seq` (the same function as externalMovementsSql, in SQL). */
function recordAt(seq: number, accounts: number): OpRecord {
  const opening = seq <= accounts;
  const a = opening ? seq - 1 : (seq * 7919) % accounts;
  const withdraw = !opening && seq % 4 === 0;
  return {
    kind: 'op',
    seq,
    op: withdraw ? 'EXTERNAL_WITHDRAW' : 'EXTERNAL_DEPOSIT',
    key: `rb-${seq}`,
    ...accountOf(a),
    amount: BigInt(opening ? OPENING_UNITS_MIN + (seq % 997) : 1 + (seq % WITHDRAW_UNITS_MAX)),
    outcome: { kind: 'applied' },
  };
}

/** Records `from`..`to` as stored blocks of `size` records, each encoded as UBSCore's group commit encodes it. */
function* blocksOf(from: number, to: number, size: number, accounts: number): Generator<StoredBlock> {
  for (let first = from; first <= to; first += size) {
    const last = Math.min(to, first + size - 1);
    const records: OpRecord[] = [];
    for (let seq = first; seq <= last; seq++) records.push(recordAt(seq, accounts));
    const batch = encodeBatch(records);
    const block = batch?.blocks[0];
    if (batch === null || block === undefined || batch.blocks.length !== 1)
      throw new Error(`(g) records ${first}..${last} are not one block`);
    yield { firstSeq: first, lastSeq: last, bytes: Buffer.from(block.bytes) };
  }
}

/** bytea in COPY's text format: hex, its backslash escaped. */
const hex = (bytes: Buffer): string => `\\\\x${bytes.toString('hex')}`;

/** COPY `table (columns)` FROM STDIN, one line per row from `lines`. */
async function copyInto(sql: Sql, table: string, columns: readonly string[], lines: Iterable<string>): Promise<void> {
  const writable = await sql.unsafe(`COPY ${table} (${columns.join(', ')}) FROM STDIN`).writable();
  await pipeline(Readable.from(lines), writable);
}

/** The tail's blocks as spot_log rows, a chunk of lines at a time. */
function* logLines(shape: LedgerShape, counted: { blocks: number }): Generator<string> {
  let lines: string[] = [];
  for (const block of blocksOf(shape.accounts + 1, shape.accounts + shape.records, shape.blockRecords, shape.accounts)) {
    lines.push(`${block.lastSeq}\t${block.firstSeq}\t${REBUILD_EPOCH}\t${hex(block.bytes)}\n`);
    counted.blocks++;
    if (lines.length === COPY_BLOCKS_PER_CHUNK) {
      yield lines.join('');
      lines = [];
    }
  }
  if (lines.length > 0) yield lines.join('');
}

/**
 * The opening records' processed-set entries as spot_processed rows (what the archive stores:
 * blockEntries of each block), while `ledger` applies them for the snapshot.
 */
function* archivedLines(shape: LedgerShape, ledger: SpotLedger, counted: { entries: number }): Generator<string> {
  for (const block of blocksOf(1, shape.accounts, OPENING_BLOCK_RECORDS, shape.accounts)) {
    for (let seq = block.firstSeq; seq <= block.lastSeq; seq++) ledger.applyRecord(recordAt(seq, shape.accounts));
    const entries = blockEntries(block);
    counted.entries += entries.length;
    yield entries.map((e) => `${hex(e.key)}\t${hex(e.record)}\t${e.seq}\n`).join('');
  }
}

/** The FUNDING side: one settled SPOT movement per record, from the same function of the seq, in SQL. */
async function insertMovements(sql: Sql, shape: LedgerShape): Promise<void> {
  const n = shape.accounts;
  await sql`
    INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state, created_at, updated_at)
    SELECT 'rb-' || s,
           CASE WHEN s > ${n}::bigint AND s % 4 = 0 THEN 'WITHDRAW' ELSE 'DEPOSIT' END,
           a / 2 + 1, 'SPOT', CASE WHEN a % 2 = 0 THEN ${ASSETS[0]} ELSE ${ASSETS[1]} END,
           CASE WHEN s <= ${n}::bigint THEN ${OPENING_UNITS_MIN}::bigint + s % 997 ELSE 1 + s % ${WITHDRAW_UNITS_MAX}::bigint END,
           'DONE', now() - interval '1 hour', now() - interval '1 hour'
      FROM (SELECT s, CASE WHEN s <= ${n}::bigint THEN s - 1 ELSE (s * 7919) % ${n}::bigint END AS a
              FROM generate_series(1::bigint, ${n + shape.records}::bigint) AS s) AS x`;
}

/** Writes the whole ledger into `sql`'s database, which must be freshly migrated and empty. */
export async function loadLedger(sql: Sql, shape: LedgerShape): Promise<Loaded> {
  checkShape(shape);
  const started = performance.now();
  for (const symbol of ASSETS)
    await sql`INSERT INTO assets (symbol, precision, min_transfer_units, max_transfer_units) VALUES (${symbol}, 8, 1, ${10n ** 17n})`;
  await sql`INSERT INTO ledger_identity (ledger_id) VALUES (${randomUUID()}::uuid)`;
  await sql`UPDATE ledger_owner SET epoch = ${REBUILD_EPOCH}`;
  const ledger = new SpotLedger();
  const counted = { blocks: 0, entries: 0 };
  await copyInto(sql, 'spot_processed', ['key', 'record', 'seq'], archivedLines(shape, ledger, counted));
  const snapshotSeq = shape.accounts;
  await new SpotLogStore(sql).putSnapshot(snapshotOf(ledger));
  await sql`UPDATE spot_log_state SET archived_through_seq = ${snapshotSeq}`;
  await copyInto(sql, 'spot_log', ['last_seq', 'first_seq', 'epoch', 'block'], logLines(shape, counted));
  await insertMovements(sql, shape);
  // A database that grew to this size had been vacuumed and analysed by autovacuum meanwhile.
  await sql`VACUUM ANALYZE spot_log, spot_processed, spot_snapshots, external_movements`;
  return {
    snapshotSeq,
    lastSeq: shape.accounts + shape.records,
    blocks: counted.blocks,
    archivedEntries: counted.entries,
    loadMs: Math.round(performance.now() - started),
  };
}

/** The ledger's snapshot as UBSCore writes one: a capture, encoded account by account. */
function snapshotOf(ledger: SpotLedger): { seq: number; header: Buffer; chunks: readonly Buffer[] } {
  const capture = ledger.captureAccounts();
  const encoder = new SnapshotEncoder(capture.seq, capture.accountCount, Date.now());
  while (!capture.visit(10_000, encoder.add));
  ledger.releaseCapture(capture);
  const encoded = encoder.finish();
  return { seq: encoded.info.seq, header: encoded.header, chunks: encoded.chunks };
}

/** The keys of a spread of `count` records (every kind of record, archived and not) and their seqs. */
export function sampleKeys(shape: LedgerShape, count: number): { op: OpRecord['op']; key: string; seq: number }[] {
  const last = shape.accounts + shape.records;
  const step = Math.max(1, Math.floor(last / count));
  const out: { op: OpRecord['op']; key: string; seq: number }[] = [];
  for (let seq = 1; seq <= last; seq += step) {
    const r = recordAt(seq, shape.accounts);
    out.push({ op: r.op, key: r.key, seq });
  }
  return out;
}
