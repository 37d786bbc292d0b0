// Proves GET /metrics carries the series operators need, with values that match exactly what the test did, each labelled with its thread (and shard), under one prefix.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deposit, transfer } from '../support/funds.js';
import { parseMetrics } from '../support/prometheus.js';
import { startTestService } from '../support/service.js';

test("metrics: transitions by from/to, finished totals and durations, unfinished by state, HTTP latency by route and status, mailbox depth, UBSCore, connections, every thread's runtime, GC series from the start", async () => {
  const svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
  try {
    await deposit(svc, 1401n, 'FUNDING', 'USDT', '10', 'met-f');
    for (let i = 0; i < 3; i++)
      assert.is((await transfer(svc, 1401n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })).status, 200);
    assert.is((await transfer(svc, 1401n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '100' })).status, 422);
    assert.is((await transfer(svc, 1401n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '2' })).status, 200);
    const response = await fetch(`${svc.base}/metrics`);
    assert.match(response.headers.get('content-type') ?? '', /text\/plain/);
    const m = parseMetrics(await response.text());
    const expect: Array<[string, number]> = [
      // FUNDING→SPOT: the debit commits with INIT → SOURCE_DONE → TARGET_PENDING (3), or INIT → FAILED (1).
      ['transfer_fsm_transitions_total{from="INIT",to="SOURCE_DONE"}', 3],
      ['transfer_fsm_transitions_total{from="INIT",to="FAILED"}', 1],
      ['transfer_fsm_transitions_total{from="SOURCE_DONE",to="TARGET_PENDING"}', 3],
      ['transfer_fsm_transitions_total{from="TARGET_PENDING",to="COMMITTED"}', 3],
      // SPOT→FUNDING: created announced, then the credit commits with SOURCE_PENDING → SOURCE_DONE → COMMITTED.
      ['transfer_fsm_transitions_total{from="INIT",to="SOURCE_PENDING"}', 1],
      ['transfer_fsm_transitions_total{from="SOURCE_PENDING",to="SOURCE_DONE"}', 1],
      ['transfer_fsm_transitions_total{from="SOURCE_DONE",to="COMMITTED"}', 1],
      ['transfer_finished_total{state="COMMITTED"}', 4],
      ['transfer_finished_total{state="FAILED"}', 1],
      ['transfer_finished_total{state="ROLLED_BACK"}', 0],
      ['transfer_unfinished{state="INIT"}', 0],
      ['transfer_unfinished{state="TARGET_PENDING"}', 0],
      ['transfer_http_request_duration_seconds_count{method="POST",route="/api/v1/internal_transfer",status="200"}', 4],
      ['transfer_http_request_duration_seconds_count{method="POST",route="/api/v1/internal_transfer",status="422"}', 1],
      ['transfer_http_request_duration_seconds_count{method="POST",route="/admin/v1/deposit",status="200"}', 1],
      ['transfer_coordinator_mailbox_depth{shard="0"}', 0],
      ['transfer_coordinator_mailbox_depth{shard="1"}', 0],
      ['transfer_ubscore_accounts{thread="ubscore"}', 1],
    ];
    for (const [series, value] of expect) assert.is(m.get(series), value, series);
    // One SPOT deposit per FUNDING→SPOT commit, one SPOT withdraw for the way back.
    assert.is(m.get('transfer_ubscore_commands_total'), 4);
    assert.ok((m.get('transfer_ubscore_wal_batches_total') ?? 0) >= 1);
    assert.is(m.get('transfer_ubscore_wal_sync_seconds_count'), m.get('transfer_ubscore_wal_batches_total'), 'one sync timed per batch');
    assert.is(m.get('transfer_ubscore_wal_batch_records_sum'), 4, 'the four SPOT operations, each one WAL record');
    assert.ok(
      (m.get('transfer_http_request_duration_seconds_bucket{method="POST",route="/api/v1/internal_transfer",status="200",le="+Inf"}') ??
        0) === 4,
    );
    // Each pool's application_name is the owner's tag, then what the pool is for; the scrape leaves the tag out.
    assert.ok(m.samples.some((s) => s.name === 'transfer_db_connections' && s.labels.application === 'main'));
    assert.ok(m.samples.some((s) => s.name === 'transfer_db_connections' && /^coordinator-\d+$/.test(s.labels.application ?? '')));
    // Finished transfers are timed from creation, counted by the shard that finished them.
    assert.is(m.get('transfer_duration_seconds_count{state="COMMITTED"}'), 4);
    assert.is(m.get('transfer_duration_seconds_count{state="FAILED"}'), 1);
    assert.ok(
      m.samples.every(
        (s) =>
          s.name !== 'transfer_fsm_transitions_total' || (/^coordinator-\d+$/.test(s.labels.thread ?? '') && s.labels.shard !== undefined),
      ),
      'transitions by shard and thread',
    );
    // Every thread reports its runtime under its own thread label: main, each shard, UBSCore.
    for (const thread of ['main', 'coordinator-0', 'coordinator-1', 'ubscore']) {
      assert.ok(m.get(`transfer_nodejs_heap_size_used_bytes{thread="${thread}"}`) !== undefined, `heap of ${thread}`);
      const elu = m.get(`transfer_nodejs_eventloop_utilization_ratio{thread="${thread}"}`);
      assert.ok(elu !== undefined && elu >= 0 && elu <= 1, `event-loop utilisation of ${thread}: ${elu}`);
      // GC series exist from a thread's start, before its first collection of each kind (weakcb is rare).
      for (const kind of ['major', 'minor', 'incremental', 'weakcb']) {
        assert.ok(
          m.get(`transfer_nodejs_gc_duration_seconds_count{kind="${kind}",thread="${thread}"}`) !== undefined,
          `GC ${kind} of ${thread}`,
        );
      }
    }
    assert.is(
      m.samples.filter((s) => s.name === 'transfer_process_resident_memory_bytes').length,
      1,
      'process-wide series once, from the main thread',
    );
    assert.ok(
      m.samples.every((s) => s.name.startsWith('transfer_')),
      'one prefix for every series',
    );
    assert.ok((m.get('transfer_ubscore_lmdb_map_size_bytes') ?? 0) > 0, 'the LMDB map size');
    assert.is(m.get('transfer_service_halted'), 0);
  } finally {
    await svc.stop();
  }
});

test.run();
