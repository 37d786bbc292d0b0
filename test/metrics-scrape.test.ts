// Proves a /metrics scrape counts the unfinished transfers and the funds in flight through transfers_active, reads no more rows of transfers_tb than are unfinished (never a scan of the whole table), and totals the finished ones from the coordinators' transition counters.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { migrate, seedDemoAssets } from '../src/db/schema.js';
import { openSql, type Sql } from '../src/db/sql.js';
import { TransferStore } from '../src/db/transfers.js';
import { TransferWrites } from '../src/db/transfer-writes.js';
import type { TransferEvent, TransferStateName } from '../src/domain/fsm.js';
import { collectMetrics } from '../src/metrics/collect.js';
import { Registry } from '../src/metrics/registry.js';
import { createTestDatabase } from './support/database.js';
import { parseMetrics } from './support/prometheus.js';

/** Enough finished transfers that reading the whole table is many times more rows than are unfinished. */
const FINISHED_TRANSFERS = 400;
const SCRAPES = 3;

type Path = readonly (readonly [TransferEvent, TransferStateName])[];
const TO_COMMITTED: Path = [['SOURCE_OK', 'SOURCE_DONE'], ['TARGET_OK', 'COMMITTED']];

/** One transfer created and walked along `path` by the store's own compare-and-swaps. */
async function transferAt(store: TransferStore, asset: string, amount: bigint, path: Path): Promise<void> {
  const reqId = ulid();
  const created = await store.insert({ reqId, userId: 7n, from: 'FUNDING', to: 'SPOT', asset, amount, clientOrderId: null });
  assert.ok(created !== null);
  let view = created;
  for (const [event, to] of path) {
    assert.ok((await store.move(view, [{ event, to }])) !== null, `${view.state} → ${to}`);
    view = { ...view, state: to };
  }
}

type Reads = { seqScans: number; rowsRead: number; scans: number };

/** What this database's backends have reported reading from `table` (seq + index scans and their rows). */
async function reads(sql: Sql, table: string): Promise<Reads> {
  const rows = await sql<{ seq_scan: string; seq_tup_read: string; idx_scan: string; idx_tup_fetch: string }[]>`
    SELECT seq_scan::text, seq_tup_read::text, coalesce(idx_scan, 0)::text AS idx_scan, coalesce(idx_tup_fetch, 0)::text AS idx_tup_fetch
      FROM pg_stat_user_tables WHERE relname = ${table}`;
  const r = rows[0];
  assert.ok(r !== undefined, `pg_stat_user_tables has ${table}`);
  return { seqScans: Number(r.seq_scan), rowsRead: Number(r.seq_tup_read) + Number(r.idx_tup_fetch), scans: Number(r.seq_scan) + Number(r.idx_scan) };
}

/** A backend reports its table counters lazily; this makes the calling one report them now. */
async function flushStats(sql: Sql): Promise<void> {
  await sql`SELECT pg_stat_force_next_flush()`;
}

test('scrape: unfinished by state and funds in flight from transfers_active, finished totals from the counters, no scan of transfers_tb', async () => {
  const db = await createTestDatabase();
  // One connection: every statement on this database goes through the one backend whose
  // counters the test flushes, so nothing else can move them between the two readings.
  const sql = openSql(db.url, { max: 1, application: 'test-scrape' });
  try {
    await migrate(sql);
    await seedDemoAssets(sql);
    const batch = { batchMax: 100 };
    const store = new TransferStore(sql, new TransferWrites(sql, batch), batch);
    await Promise.all(Array.from({ length: FINISHED_TRANSFERS }, () => transferAt(store, 'USDT', 1n, TO_COMMITTED)));
    await transferAt(store, 'USDT', 2n, []);
    await transferAt(store, 'USDT', 3n, [['SOURCE_CALL', 'SOURCE_PENDING']]);
    await transferAt(store, 'USDT', 5n, [['SOURCE_OK', 'SOURCE_DONE']]);
    await transferAt(store, 'USDT', 7n, [['SOURCE_OK', 'SOURCE_DONE'], ['TARGET_CALL', 'TARGET_PENDING']]);
    await transferAt(store, 'BTC', 11n, [['SOURCE_OK', 'SOURCE_DONE'], ['TARGET_CALL', 'TARGET_PENDING']]);
    await transferAt(store, 'USDT', 13n, [['SOURCE_OK', 'SOURCE_DONE'], ['TARGET_CALL', 'TARGET_PENDING'], ['TARGET_FAIL', 'COMPENSATING']]);
    const unfinished = 6;

    // Two shards' transition counters, as the coordinators report them.
    const shard0 = new Registry();
    const shard1 = new Registry();
    const count = (r: Registry, from: string, to: string, n: number): void => r.inc('fsm_state_count', 'transitions', { from, to }, n);
    count(shard0, 'TARGET_PENDING', 'COMMITTED', 4);
    count(shard1, 'SOURCE_DONE', 'COMMITTED', 2);
    count(shard0, 'SOURCE_PENDING', 'FAILED', 1);
    count(shard1, 'INIT', 'FAILED', 1);
    count(shard1, 'COMPENSATING', 'ROLLED_BACK', 1);
    count(shard0, 'INIT', 'SOURCE_PENDING', 9);
    const sources = { main: new Registry(), sql, shards: async () => [...shard0.snapshot(), ...shard1.snapshot()], ubs: async () => null };

    await flushStats(sql);
    const tbBefore = await reads(sql, 'transfers_tb');
    const activeBefore = await reads(sql, 'transfers_active');
    let text = '';
    for (let i = 0; i < SCRAPES; i++) text = await collectMetrics(sources);
    await flushStats(sql);
    const tbAfter = await reads(sql, 'transfers_tb');
    const activeAfter = await reads(sql, 'transfers_active');

    assert.is(tbAfter.seqScans - tbBefore.seqScans, 0, 'no sequential scan of transfers_tb');
    const rowsRead = tbAfter.rowsRead - tbBefore.rowsRead;
    assert.ok(rowsRead <= SCRAPES * unfinished, `read ${rowsRead} rows of transfers_tb in ${SCRAPES} scrapes; at most ${SCRAPES * unfinished} are unfinished`);
    // Without this the two above would also hold if the counters had not been reported at all.
    assert.ok(activeAfter.scans - activeBefore.scans >= SCRAPES, 'the scrapes read transfers_active and their counters were reported');

    const m = parseMetrics(text);
    const expect: Array<[string, number]> = [
      ['transfers_by_state{state="INIT"}', 1],
      ['transfers_by_state{state="SOURCE_PENDING"}', 1],
      ['transfers_by_state{state="SOURCE_DONE"}', 1],
      ['transfers_by_state{state="TARGET_PENDING"}', 2],
      ['transfers_by_state{state="COMPENSATING"}', 1],
      ['in_flight_amount_units{asset="USDT"}', 5 + 7 + 13],
      ['in_flight_amount_units{asset="BTC"}', 11],
      ['transfers_finished_total{state="COMMITTED"}', 6],
      ['transfers_finished_total{state="FAILED"}', 2],
      ['transfers_finished_total{state="ROLLED_BACK"}', 1],
    ];
    for (const [series, value] of expect) assert.is(m.get(series), value, series);
    for (const state of ['COMMITTED', 'FAILED', 'ROLLED_BACK']) assert.is(m.get(`transfers_by_state{state="${state}"}`), undefined, `no gauge of finished ${state} transfers`);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test.run();
