// Proves the watchdog decides an IDEMPOTENCY_CONFLICT alert by the kind of the unknown outcome's cause, as the adapters give it, and raises none for any other cause;
// that its time thresholds are never met early by a stored moment read in whole milliseconds; and that its sweep alerts on a SPOT debit of unknown outcome as on TARGET_PENDING, with the direction named.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TradingAdapter } from '../../src/adapters/trading.js';
import type { Alert } from '../../src/alerts/alerts.js';
import type { TransferView } from '../../src/domain/transfer.js';
import { Watchdog } from '../../src/coordinator/watchdog.js';
import type { PendingCause } from '../../src/domain/types.js';
import type { UbsResult } from '../../src/domain/spot-commands.js';

const NOW = Date.parse('2026-01-01T00:00:00Z');

/** A transfer young and with few retries, so only the cause can raise an alert. */
const transfer: TransferView = {
  transferId: '1',
  reqId: '01JAAAAAAAAAAAAAAAAAAAAAAA',
  userId: 7n,
  from: 'FUNDING',
  to: 'SPOT',
  asset: 'USDT',
  amount: 1n,
  state: 'TARGET_PENDING',
  errorCode: null,
  retryCount: 1,
  attempts: 1,
  createdAt: new Date(NOW).toISOString(),
  updatedAt: new Date(NOW).toISOString(),
};

function watchdog(now = NOW, late: readonly TransferView[] = []): { readonly dog: Watchdog; readonly raised: Alert[] } {
  const raised: Alert[] = [];
  const dog = new Watchdog({
    alerts: {
      raise: async (a) => {
        raised.push(a);
        return true;
      },
    },
    store: { unknownWaitOlderThan: async () => [...late] },
    config: { targetPendingAlertMs: 60_000, refundFailuresAlertMax: 3, stuckRetriesMax: 100, stuckAgeMs: 3_600_000 },
    now: () => now,
  });
  return { dog, raised };
}

/** The cause the Trading adapter gives for UBSCore's answer to a deposit. */
async function causeOf(answer: UbsResult | null): Promise<PendingCause> {
  const adapter = new TradingAdapter(async () => answer, 1_000);
  const outcome = await adapter.deposit({ reqId: transfer.reqId, userId: 7n, asset: 'USDT', amount: 1n });
  if (outcome.kind !== 'PENDING') throw new Error(`expected PENDING, got ${outcome.kind}`);
  return outcome.cause;
}

test('an idempotency conflict raises IDEMPOTENCY_CONFLICT, with the cause as the last error', async () => {
  const cause = await causeOf({ kind: 'conflict', detail: 'DEPOSIT recorded with amount 2' });
  assert.is(cause.kind, 'idempotency_conflict');
  const { dog, raised } = watchdog();
  await dog.onStay(transfer, cause);
  assert.equal(
    raised.map((a) => a.kind),
    ['IDEMPOTENCY_CONFLICT'],
  );
  assert.is(raised[0]?.details.last_error, 'IDEMPOTENCY_CONFLICT: DEPOSIT recorded with amount 2');
});

const others: readonly [string, UbsResult | null, PendingCause['kind']][] = [
  ['no answer', null, 'timeout'],
  ['UBSCore could not write', { kind: 'unavailable', reason: 'write_failed' }, 'ubscore_unavailable'],
  ['the WAL takes no writes', { kind: 'unavailable', reason: 'wal_unwritable' }, 'wal_unwritable'],
  ['an answer of another command', { kind: 'status_set' }, 'unexpected_answer'],
];

for (const [what, answer, kind] of others) {
  test(`${what} (${kind}) raises no IDEMPOTENCY_CONFLICT`, async () => {
    const cause = await causeOf(answer);
    assert.is(cause.kind, kind);
    const { dog, raised } = watchdog();
    await dog.onStay(transfer, cause);
    assert.equal(raised, []);
  });
}

test('a detail that merely names IDEMPOTENCY_CONFLICT decides nothing: only the kind does', async () => {
  const { dog, raised } = watchdog();
  await dog.onStay(transfer, { kind: 'database_error', detail: 'IDEMPOTENCY_CONFLICT in a message' });
  assert.equal(raised, []);
});

const NO_ANSWER: PendingCause = { kind: 'timeout', detail: 'no answer in 1000 ms' };

// PostgreSQL keeps microseconds; a Date keeps milliseconds, cut. A transfer shown as updated at
// 00:00:00.000 may have been updated at 00:00:00.000900: 60,000 ms shown is then 59,999.1 ms
// waited, and an alert raised then would be early (seen once in CI as created_at − entered < 60 s).
test('MON-001: TARGET_PENDING shown exactly at the threshold raises nothing; a millisecond past it raises TARGET_PENDING_TOO_LONG', async () => {
  const at = watchdog(NOW + 60_000);
  await at.dog.onStay(transfer, NO_ANSWER);
  assert.equal(at.raised, [], 'the stored moment may be up to a millisecond later than shown');
  const past = watchdog(NOW + 60_001);
  await past.dog.onStay(transfer, NO_ANSWER);
  assert.equal(
    past.raised.map((a) => a.kind),
    ['TARGET_PENDING_TOO_LONG'],
  );
});

test("the sweep raises SOURCE_PENDING_TOO_LONG for a SPOT → FUNDING transfer whose UBSCore debit is unknown past the threshold, naming the direction; a FUNDING source's SOURCE_PENDING is not its concern", async () => {
  const spotDebit = { ...transfer, from: 'SPOT' as const, to: 'FUNDING' as const, state: 'SOURCE_PENDING' as const };
  const fundingDebit = { ...transfer, reqId: '01JAAAAAAAAAAAAAAAAAAAAAAB', state: 'SOURCE_PENDING' as const };
  const at = watchdog(NOW + 60_000, [spotDebit, fundingDebit]);
  await at.dog.sweep();
  assert.equal(at.raised, [], 'not at the threshold');
  const past = watchdog(NOW + 60_001, [spotDebit, fundingDebit]);
  await past.dog.sweep();
  assert.equal(
    past.raised.map((a) => [a.kind, a.reqId, a.details.direction, a.details.waits_on]),
    [['SOURCE_PENDING_TOO_LONG', spotDebit.reqId, 'SPOT → FUNDING', 'the SPOT debit']],
  );
  const target = watchdog(NOW + 60_001, [transfer]);
  await target.dog.sweep();
  assert.equal(
    target.raised.map((a) => [a.kind, a.details.direction]),
    [['TARGET_PENDING_TOO_LONG', 'FUNDING → SPOT']],
  );
});

test('a transfer shown exactly stuckAgeMs old is not yet stuck; a millisecond later it is (TRANSFER_STUCK)', async () => {
  const young = { ...transfer, state: 'SOURCE_DONE' as const };
  const at = watchdog(NOW + 3_600_000);
  await at.dog.onStay(young, NO_ANSWER);
  assert.equal(at.raised, []);
  const past = watchdog(NOW + 3_600_001);
  await past.dog.onStay(young, NO_ANSWER);
  assert.equal(
    past.raised.map((a) => a.kind),
    ['TRANSFER_STUCK'],
  );
});

test.run();
