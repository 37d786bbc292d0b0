// Proves GET /metrics carries the series operators need, with values that match exactly what the test did.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deposit, transfer } from './support/funds.js';
import { parseMetrics } from './support/prometheus.js';
import { startTestService } from './support/service.js';

test('metrics: transitions by from/to, finished totals, unfinished by state, retries, HTTP latency by route and status, mailbox depth, UBSCore, pool', async () => {
  const svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
  try {
    await deposit(svc, 1401n, 'FUNDING', 'USDT', '10', 'met-f');
    for (let i = 0; i < 3; i++) assert.is((await transfer(svc, 1401n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })).status, 200);
    assert.is((await transfer(svc, 1401n, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '100' })).status, 422);
    assert.is((await transfer(svc, 1401n, { from: 'SPOT', to: 'FUNDING', asset: 'USDT', amount: '2' })).status, 200);
    const response = await fetch(`${svc.base}/metrics`);
    assert.match(response.headers.get('content-type') ?? '', /text\/plain/);
    const m = parseMetrics(await response.text());
    const expect: Array<[string, number]> = [
      // FUNDING→SPOT: the debit commits with INIT → SOURCE_DONE → TARGET_PENDING (3), or INIT → FAILED (1).
      ['fsm_state_count{from="INIT",to="SOURCE_DONE"}', 3],
      ['fsm_state_count{from="INIT",to="FAILED"}', 1],
      ['fsm_state_count{from="SOURCE_DONE",to="TARGET_PENDING"}', 3],
      ['fsm_state_count{from="TARGET_PENDING",to="COMMITTED"}', 3],
      // SPOT→FUNDING: created announced, then the credit commits with SOURCE_PENDING → SOURCE_DONE → COMMITTED.
      ['fsm_state_count{from="INIT",to="SOURCE_PENDING"}', 1],
      ['fsm_state_count{from="SOURCE_PENDING",to="SOURCE_DONE"}', 1],
      ['fsm_state_count{from="SOURCE_DONE",to="COMMITTED"}', 1],
      ['transfers_finished_total{state="COMMITTED"}', 4],
      ['transfers_finished_total{state="FAILED"}', 1],
      ['transfers_finished_total{state="ROLLED_BACK"}', 0],
      ['transfers_by_state{state="INIT"}', 0],
      ['transfers_by_state{state="TARGET_PENDING"}', 0],
      ['http_request_duration_seconds_count{method="POST",route="/api/v1/internal_transfer",status="200"}', 4],
      ['http_request_duration_seconds_count{method="POST",route="/api/v1/internal_transfer",status="422"}', 1],
      ['http_request_duration_seconds_count{method="POST",route="/admin/v1/deposit",status="200"}', 1],
      ['coordinator_mailbox_depth{shard="0"}', 0],
      ['coordinator_mailbox_depth{shard="1"}', 0],
      ['ubscore_accounts', 1],
    ];
    for (const [series, value] of expect) assert.is(m.get(series), value, series);
    // One SPOT deposit per FUNDING→SPOT commit, one SPOT withdraw for the way back.
    assert.is(m.get('ubscore_commands_total'), 4);
    assert.ok((m.get('ubscore_batches_total') ?? 0) >= 1);
    assert.is(m.get('ubscore_wal_sync_seconds_count'), m.get('ubscore_batches_total'), 'one sync timed per batch');
    assert.is(m.get('ubscore_batch_records_sum'), 4, 'the four SPOT operations, each one WAL record');
    assert.ok((m.get('http_request_duration_seconds_bucket{method="POST",route="/api/v1/internal_transfer",status="200",le="+Inf"}') ?? 0) === 4);
    assert.ok([...m.keys()].some((k) => k.startsWith('pg_connections{application="main"')));
    assert.ok([...m.keys()].some((k) => k.startsWith('pg_connections{application="coordinator-')));
  } finally {
    await svc.stop();
  }
});

test.run();
