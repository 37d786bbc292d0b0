// Proves waits on PostgreSQL are bounded: with a FUNDING balance row held
// locked by another session, the transfers that need it answer 202 PENDING, their statements are
// cut short by lock_timeout (an unknown outcome: retried, never refused), and once the lock goes
// they all complete, each debit applied exactly once.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { deposit, fundsOf, transfer, units } from '../support/funds.js';
import { holdFundingRow } from '../support/locks.js';
import { startTestService, type TestService } from '../support/service.js';

let svc: TestService;
const USER = 81n;
const TRANSFERS = 5;
/** The happy-path deadline (500 ms) plus the lock timeout (200 ms), with room for a loaded machine. */
const ANSWER_WITHIN_MS = 5_000;

test.before(async () => {
  svc = await startTestService({
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
    PG_LOCK_TIMEOUT_MS: '200',
    RETRY_BASE_MS: '100',
    RETRY_CAP_MS: '400',
  });
});

test.after(async () => {
  await svc.stop();
});

test('a FUNDING row held locked: transfers answer 202, their waits are cut short and retried, and all complete once it is free, each applied once', async () => {
  await deposit(svc, USER, 'FUNDING', 'USDT', '100', 'bounded-1');
  const row = await holdFundingRow(svc.sql, USER, 'USDT');
  try {
    await whileLocked(row.release, row.done);
  } finally {
    row.release();
    await row.done.catch(() => undefined);
  }
});

/** Sends the transfers while the row is locked, checks their answers, frees the row, and checks the end. */
async function whileLocked(release: () => void, holding: Promise<unknown>): Promise<void> {
  const sent = Promise.all(
    Array.from({ length: TRANSFERS }, () => transfer(svc, USER, { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' })),
  );
  const answeredWithin = await Promise.race([
    sent.then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), ANSWER_WITHIN_MS)),
  ]);
  if (!answeredWithin) {
    release(); // let the waits end, so the test stops rather than hangs
    await holding;
    await sent;
    assert.unreachable(`a POST waited on the locked row for more than ${ANSWER_WITHIN_MS} ms: the lock wait is not bounded`);
  }
  const replies = await sent;
  for (const r of replies) assert.equal([r.status, r.body.state], [202, 'PENDING'], JSON.stringify(r.body));
  const ids = replies.map((r) => String(r.body.req_id));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const waiting =
    await svc.sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND now() - query_start > interval '1 second'`;
  assert.is(waiting[0]?.n, 0, 'no statement waits on the lock longer than lock_timeout');
  release();
  await holding;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const open = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE req_id = ANY(${ids}) AND state <> 40`;
    if (open[0]?.n === 0) break;
    assert.ok(Date.now() < deadline, 'every transfer committed once the lock was free');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.equal(await fundsOf(svc, USER, 'USDT'), { funding: units('95'), spot: units('5') });
  const ops =
    await svc.sql`SELECT count(*)::int AS n FROM funding_operation_records WHERE req_id = ANY(${ids}) AND op = 'WITHDRAW' AND outcome = 'APPLIED'`;
  assert.is(ops[0]?.n, TRANSFERS, 'each debit applied once');
  const retried = await svc.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE req_id = ANY(${ids}) AND retry_count > 0`;
  assert.ok((retried[0]?.n as number) > 0, 'the lock waits were cut short and retried, not waited out');
}

test.run();
