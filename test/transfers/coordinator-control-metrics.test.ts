// Proves a coordinator shard answers a metrics scrape through its control port while its work
// waits: with a FUNDING row held locked by the test, operator retries of transfers that need the
// row take every task slot of the shard, each waiting on the lock, and GET /metrics still answers
// promptly with the shard's own, fresh series, instead of queueing behind that work.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { TransferStore } from '../../src/db/transfers.js';
import { TransferWrites } from '../../src/db/transfer-writes.js';
import { deposit, units } from '../support/funds.js';
import { holdFundingRow } from '../support/locks.js';
import { parseMetrics } from '../support/prometheus.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
const USER = 82n;
/** Transfers in the shard at once; with the shard's 16 other task slots, fewer than RETRIES. */
const CONCURRENCY_MAX = 2;
const RETRIES = 24;
/** How long each statement waits on the held row before it is cut short. */
const LOCK_WAIT_MS = 3_000;
/** A scrape queued behind the waiting work takes about LOCK_WAIT_MS; a control port answers at once. */
const SCRAPE_WITHIN_MS = 1_500;

test.before(async () => {
  svc = await startTestService({
    COORDINATORS: '1',
    COORDINATOR_CONCURRENCY_MAX: String(CONCURRENCY_MAX),
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
    PG_LOCK_TIMEOUT_MS: String(LOCK_WAIT_MS),
    // A drive answers when its wait ends, so each waiting retry keeps its task for the whole wait.
    HAPPY_PATH_DEADLINE_MS: String(2 * LOCK_WAIT_MS),
  });
});

test.after(async () => {
  await svc.stop();
});

test('a shard whose tasks all wait on a locked row answers a metrics scrape promptly, with its own fresh series', async () => {
  await deposit(svc, USER, 'FUNDING', 'USDT', '100', 'control-1');
  // Recorded but not yet driven (as a full mailbox leaves them), so the scan leaves them to the operator.
  const store = new TransferStore(svc.sql, new TransferWrites(svc.sql, { batchMax: 64 }), { batchMax: 64 });
  const ids: string[] = [];
  for (let i = 0; i < RETRIES; i += 1) {
    const reqId = ulid();
    const t = { reqId, userId: USER, from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: units('1'), clientOrderId: null } as const;
    assert.ok((await store.insert(t)) !== null);
    ids.push(reqId);
  }
  const row = await holdFundingRow(svc.sql, USER, 'USDT');
  try {
    const admin = svc.adminToken();
    const retries = ids.map((id) => svc.call('POST', `/admin/v1/transfers/${id}/retry`, { token: admin }));
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    const response = await fetch(`${svc.base}/metrics`);
    const took = Date.now() - started;
    const scrape = parseMetrics(await response.text());
    assert.is(response.status, 200);
    assert.ok(took < SCRAPE_WITHIN_MS, `the scrape took ${took} ms, waiting behind the shard's work`);
    assert.is(scrape.get('transfer_thread_metrics_fresh{thread="coordinator-0"}'), 1, "the shard's series are its answer to this scrape");
    assert.is(scrape.get('transfer_coordinator_halted{thread="coordinator-0"}'), 0, "the shard's own series are present");
    row.release();
    for (const r of await Promise.all(retries)) assert.is(r.status, 200, JSON.stringify(r.body));
  } finally {
    row.release();
    await row.done.catch(() => undefined);
  }
});

test.run();
