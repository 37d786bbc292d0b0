// Proves a /metrics scrape counts the unfinished transfers, the age of the oldest and the funds in flight (exactly, beyond 2^53) through transfers_active, reads no more rows of transfers_tb than are unfinished (never a scan of the whole table), and keeps each coordinator shard's counters apart, by shard and thread, with a shard that does not answer shown at its last values.

import { ALERT_KINDS } from '../../src/alerts/alerts.js';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { migrate, seedDemoAssets } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { TransferStore } from '../../src/db/transfers.js';
import { TransferWrites } from '../../src/db/transfer-writes.js';
import type { TransferEvent, TransferStateName } from '../../src/domain/fsm.js';
import { countTransition } from '../../src/coordinator/transfer-metrics.js';
import { coordinatorThread } from '../../src/metrics/aggregate.js';
import { collectMetrics } from '../../src/services/metrics-collect.js';
import { LastKnownFamilies } from '../../src/metrics/last-known.js';
import { Registry } from '../../src/metrics/registry.js';
import { createTestDatabase } from '../support/database.js';
import { parseMetrics } from '../support/prometheus.js';

/** Enough finished transfers that reading the whole table is many times more rows than are unfinished. */
const FINISHED_TRANSFERS = 400;
const SCRAPES = 3;
/** Beyond 2^53: a float would round it. */
const BIG_UNITS = 2n ** 62n;

type Path = readonly (readonly [TransferEvent, TransferStateName])[];
const TO_COMMITTED: Path = [
  ['SOURCE_OK', 'SOURCE_DONE'],
  ['TARGET_OK', 'COMMITTED'],
];

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
  return {
    seqScans: Number(r.seq_scan),
    rowsRead: Number(r.seq_tup_read) + Number(r.idx_tup_fetch),
    scans: Number(r.seq_scan) + Number(r.idx_scan),
  };
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
    await transferAt(store, 'USDT', 7n, [
      ['SOURCE_OK', 'SOURCE_DONE'],
      ['TARGET_CALL', 'TARGET_PENDING'],
    ]);
    await transferAt(store, 'BTC', BIG_UNITS, [
      ['SOURCE_OK', 'SOURCE_DONE'],
      ['TARGET_CALL', 'TARGET_PENDING'],
    ]);
    await transferAt(store, 'BTC', BIG_UNITS + 2n, [['SOURCE_OK', 'SOURCE_DONE']]);
    // The oldest unfinished transfer, made old by hand; the age read at scrape time starts from it.
    await sql`UPDATE transfers_tb SET created_at = now() - interval '1 hour' WHERE amount = 2`;
    await transferAt(store, 'USDT', 13n, [
      ['SOURCE_OK', 'SOURCE_DONE'],
      ['TARGET_CALL', 'TARGET_PENDING'],
      ['TARGET_FAIL', 'COMPENSATING'],
    ]);
    const unfinished = 7;

    // Two shards' counters, as the coordinators count them; shard 1 answers only the first scrape.
    const shards = [0, 1].map((shard) => new Registry({ constLabels: { shard: String(shard) } }));
    const [shard0, shard1] = shards as [Registry, Registry];
    const createdAt = new Date(Date.now() - 2_000).toISOString();
    const count = (r: Registry, from: TransferStateName, to: TransferStateName, n: number): void => {
      for (let i = 0; i < n; i++) countTransition(r, { createdAt, retryCount: 0, errorCode: null }, from, to);
    };
    count(shard0, 'TARGET_PENDING', 'COMMITTED', 4);
    count(shard1, 'SOURCE_DONE', 'COMMITTED', 2);
    count(shard0, 'SOURCE_PENDING', 'FAILED', 1);
    count(shard1, 'INIT', 'FAILED', 1);
    count(shard1, 'COMPENSATING', 'ROLLED_BACK', 1);
    count(shard0, 'INIT', 'SOURCE_PENDING', 9);
    const last = new LastKnownFamilies();
    let scrapes = 0;
    const shardScrape = async () => {
      scrapes += 1;
      return Promise.all(
        shards.map(async (r, shard) => {
          const answers = shard === 0 || scrapes === 1;
          const thread = coordinatorThread(shard);
          // As the pool does: a shard never heard from shows nothing.
          const scrape = last.take(thread, answers ? await r.json() : null) ?? { thread, families: [], fresh: false };
          return { shard, depth: shard, ...scrape };
        }),
      );
    };
    const ownership = () => ({
      role: 'primary' as const,
      promoted: false,
      epoch: 1,
      leaseState: 'proven' as const,
      leaseLeftMs: 1500,
      lag: { records: 0, ms: 0 },
    });
    const sources = {
      main: new Registry(),
      sql,
      shards: shardScrape,
      ubs: async () => null,
      alertKinds: Object.keys(ALERT_KINDS),
      ownership,
    };

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
    assert.ok(
      rowsRead <= SCRAPES * unfinished,
      `read ${rowsRead} rows of transfers_tb in ${SCRAPES} scrapes; at most ${SCRAPES * unfinished} are unfinished`,
    );
    // Without this the two above would also hold if the counters had not been reported at all.
    assert.ok(activeAfter.scans - activeBefore.scans >= SCRAPES, 'the scrapes read transfers_active and their counters were reported');

    const m = parseMetrics(text);
    const expect: Array<[string, number]> = [
      ['transfer_unfinished{state="INIT",thread="main"}', 1],
      ['transfer_unfinished{state="SOURCE_PENDING"}', 1],
      ['transfer_unfinished{state="SOURCE_DONE"}', 2],
      ['transfer_unfinished{state="TARGET_PENDING"}', 2],
      ['transfer_unfinished{state="COMPENSATING"}', 1],
      ['transfer_in_flight_amount_units{asset="USDT",thread="main"}', 5 + 7 + 13],
      ['transfer_finished_total{state="COMMITTED"}', 6],
      ['transfer_finished_total{state="COMMITTED",shard="0",thread="coordinator-0"}', 4],
      ['transfer_finished_total{state="COMMITTED",shard="1",thread="coordinator-1"}', 2],
      ['transfer_finished_total{state="FAILED"}', 2],
      ['transfer_finished_total{state="ROLLED_BACK"}', 1],
      ['transfer_duration_seconds_count{state="COMMITTED"}', 6],
      ['transfer_fsm_transitions_total{from="INIT",to="SOURCE_PENDING",shard="0"}', 9],
      ['transfer_coordinator_mailbox_depth{shard="1",thread="main"}', 1],
      ['transfer_thread_metrics_fresh{thread="coordinator-0"}', 1],
      ['transfer_thread_metrics_fresh{thread="coordinator-1"}', 0],
    ];
    for (const [series, value] of expect) assert.is(m.get(series), value, series);
    // 2^62 + 2^62 + 2: a double would print 9223372036854775808.
    const btc = m.samples.find((s) => s.name === 'transfer_in_flight_amount_units' && s.labels.asset === 'BTC');
    assert.is(btc?.raw, String(BIG_UNITS * 2n + 2n), 'the amount in flight printed exactly');
    const age = m.get('transfer_oldest_unfinished_age_seconds{state="INIT"}') ?? 0;
    const younger = m.get('transfer_oldest_unfinished_age_seconds{state="SOURCE_PENDING"}') ?? 0;
    assert.ok(younger > 0 && younger < 60, `the others are seconds old, read ${younger}`);
    assert.ok(age >= 3_600 && age < 3_600 + 60, `the oldest unfinished transfer is an hour old, read ${age}`);
    assert.ok((m.get('transfer_duration_seconds_sum{state="COMMITTED"}') ?? 0) >= 6 * 2, 'each finished transfer timed from its creation');
    for (const state of ['COMMITTED', 'FAILED', 'ROLLED_BACK'])
      assert.is(m.get(`transfer_unfinished{state="${state}"}`), undefined, `no gauge of finished ${state} transfers`);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test.run();
