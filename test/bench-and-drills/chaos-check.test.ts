// Proves make chaos's independent checker (test/chaos/check.ts) on small hand-made histories: a
// consistent history and store pass with no violation, and each rule has a history or store that
// breaks it and is caught: a COMMITTED answer whose transfer is missing, unfinished or another one;
// a FAILED answer whose transfer moved money; two final answers that disagree; a movement answered
// DONE that is not; a transfer applied twice at Funding or recorded twice; a balance off by one
// unit; an answer from an epoch lower than one already seen before the request was sent (and not
// when the two were under way together); a transfer unfinished at the end; a conservation check
// with differences. Also the nemesis's schedule: replayed by its seed, a switchover or a leader
// kill in every 15 faults. And the targets (test/chaos/targets.ts): a takeover timed from the later
// of its heal and the lease passing, a PostgreSQL failover from its start, the counts judged only in
// a long run.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkEpochs, checkHistory, type DbTransfer, type Snapshot } from '../chaos/check.js';
import type { HistoryEntry } from '../chaos/history.js';
import type { FaultRecord } from '../chaos/nemesis.js';
import { FORCED_EVERY, type FaultKind, schedule, type Target as Role } from '../chaos/schedule.js';
import { FAULTS_MIN, judgeTargets, LONG_RUN_S, PG_FAILOVER_READY_MS, takeoverReadyMs, TAKEOVER_READY_MS } from '../chaos/targets.js';
import { DRILL_LEASE_MS } from '../failover/processes.js';

const U = 100_000_000n;

function entry(e: Partial<HistoryEntry> & Pick<HistoryEntry, 'op' | 'key'>): HistoryEntry {
  return {
    user: '1000',
    request: {},
    attempt: 0,
    sentAt: 1_000,
    answeredAt: 1_010,
    status: 200,
    body: null,
    epoch: '3',
    instance: 'a',
    pid: 11,
    ...e,
  };
}

const transfer = (key: string, state: string, reqId: string, at = 1_000): HistoryEntry =>
  entry({ op: 'transfer', key, sentAt: at, answeredAt: at + 10, body: { state, req_id: reqId } });

function row(reqId: string, key: string, state: number, fromFunding: boolean, amount: bigint, ops: string): DbTransfer {
  return { reqId, user: '1000', clientOrderId: key, state, asset: 'USDT', amount, sourceType: fromFunding ? 1 : 2, ops };
}

/** A consistent run: seed deposits, a deposit and a withdrawal, two committed transfers, a failed one and a rolled-back one. */
function base(): { history: HistoryEntry[]; db: Snapshot } {
  const history = [
    entry({ op: 'transfer', key: 't1', status: null, epoch: null, instance: null, pid: null }),
    transfer('t1', 'COMMITTED', 'R1', 1_100),
    transfer('t2', 'COMMITTED', 'R2', 1_200),
    transfer('t3', 'FAILED', 'R3', 1_300),
    transfer('t4', 'ROLLED_BACK', 'R4', 1_400),
    entry({ op: 'deposit', key: 'd1', request: { user_id: '1000', account: 'SPOT', asset: 'USDT' }, body: { state: 'DONE' } }),
    entry({ op: 'withdraw', key: 'w1', request: { user_id: '1000', account: 'FUNDING', asset: 'USDT' }, body: { state: 'DONE' } }),
  ];
  const movement = (ref: string, kind: 'DEPOSIT' | 'WITHDRAW', account: 'FUNDING' | 'SPOT', amount: bigint) => ({
    ref,
    kind,
    user: '1000',
    account,
    asset: 'USDT',
    amount,
    state: 'DONE',
  });
  const db: Snapshot = {
    transfers: [
      row('R1', 't1', 40, true, 10n * U, 'WITHDRAW'),
      row('R2', 't2', 40, false, 3n * U, 'DEPOSIT'),
      row('R3', 't3', -10, true, 1n * U, ''),
      row('R4', 't4', -30, true, 1n * U, 'REFUND,WITHDRAW'),
    ],
    movements: [
      movement('s1', 'DEPOSIT', 'FUNDING', 1_000n * U),
      movement('s2', 'DEPOSIT', 'SPOT', 1_000n * U),
      movement('d1', 'DEPOSIT', 'SPOT', 5n * U),
      movement('w1', 'WITHDRAW', 'FUNDING', 2n * U),
    ],
    balances: [{ user: '1000', asset: 'USDT', funding: 991n * U, spot: 1_012n * U }],
    openTransfers: 0,
    invariant: { ok: true, detail: '{"ok":true}' },
  };
  return { history, db };
}

const checks = (history: HistoryEntry[], db: Snapshot) => new Set(checkHistory(history, db).map((v) => v.check));
const withRow = (db: Snapshot, reqId: string, change: Partial<DbTransfer>): Snapshot => ({
  ...db,
  transfers: db.transfers.map((t) => (t.reqId === reqId ? { ...t, ...change } : t)),
});

test('a consistent history and store: no violation', () => {
  const { history, db } = base();
  assert.equal(checkHistory(history, db), []);
});

test('committed: an answer COMMITTED whose transfer is unfinished, missing or another one', () => {
  const { history, db } = base();
  assert.ok(checks(history, withRow(db, 'R1', { state: 20, ops: '' })).has('committed'));
  assert.ok(checks(history, { ...db, transfers: db.transfers.filter((t) => t.reqId !== 'R2') }).has('committed'));
  assert.ok(checks(history, withRow(db, 'R2', { reqId: 'R9' })).has('committed'));
});

test('failed: an answer FAILED whose transfer committed, or whose Funding withdrawal was never refunded', () => {
  const { history, db } = base();
  assert.ok(checks(history, withRow(db, 'R3', { state: 40, ops: 'WITHDRAW' })).has('failed'));
  assert.ok(checks(history, withRow(db, 'R4', { ops: 'WITHDRAW' })).has('failed'));
});

test('answers: one key answered COMMITTED and FAILED', () => {
  const { history, db } = base();
  assert.ok(checks([...history, transfer('t1', 'FAILED', 'R1', 1_500)], db).has('answers'));
});

test('movements: a deposit answered DONE that the store holds PENDING', () => {
  const { history, db } = base();
  const pending = { ...db, movements: db.movements.map((m) => (m.ref === 'd1' ? { ...m, state: 'PENDING' } : m)) };
  assert.ok(checks(history, pending).has('movements'));
});

test('once: a transfer applied twice at Funding, or recorded twice under one key', () => {
  const { history, db } = base();
  assert.ok(checks(history, withRow(db, 'R2', { ops: 'DEPOSIT,WITHDRAW' })).has('once'));
  const twice = { ...db, transfers: [...db.transfers, row('R5', 't2', -10, false, 3n * U, '')] };
  assert.ok(checks(history, twice).has('once'));
});

test('balances: a SPOT balance one unit off its equation', () => {
  const { history, db } = base();
  assert.ok(
    checks(history, { ...db, balances: [{ user: '1000', asset: 'USDT', funding: 991n * U, spot: 1_012n * U + 1n }] }).has('balances'),
  );
  assert.ok(checks(history, { ...db, balances: null }).has('balances'));
});

test('epoch: an answer from epoch 2 to a request sent after epoch 3 answered; not when both were under way together', () => {
  const e3 = transfer('x1', 'COMMITTED', 'RX1', 2_000);
  const late = { ...transfer('x2', 'COMMITTED', 'RX2', 2_050), epoch: '2', instance: 'b' };
  assert.equal(
    checkEpochs([e3, late]).map((v) => v.check),
    ['epoch'],
  );
  const overlapping = { ...transfer('x3', 'COMMITTED', 'RX3', 2_005), epoch: '2' };
  assert.equal(checkEpochs([e3, overlapping]), []);
  // A standby's 503 serves nothing: its epoch is not judged.
  assert.equal(checkEpochs([e3, { ...late, status: 503 }]), []);
});

test('terminal and invariant: a transfer unfinished at the end, a conservation check with differences', () => {
  const { history, db } = base();
  assert.ok(checks(history, { ...db, openTransfers: 1 }).has('terminal'));
  assert.ok(checks(history, { ...db, invariant: { ok: false, detail: '{"differences":[1]}' } }).has('invariant'));
});

test('the schedule: one seed, one schedule; a switchover or a leader kill in every 15 faults', () => {
  const take = (seed: number, n: number) => Array.from({ length: n }, schedule(seed).next);
  const plan = (seed: number) => {
    const s = schedule(seed);
    return Array.from({ length: 300 }, () => s.next());
  };
  assert.equal(take(7, 50), take(7, 50));
  assert.not.equal(
    plan(7).map((p) => p.kind),
    plan(8).map((p) => p.kind),
  );
  for (const seed of [1, 2, 3, 4, 5]) {
    let since = 0;
    for (const p of plan(seed)) {
      since = p.kind === 'switchover' || p.kind === 'kill-leader' ? 0 : since + 1;
      assert.ok(since < FORCED_EVERY, `seed ${seed}: ${FORCED_EVERY} faults in a row without a failover`);
    }
  }
});

function fault(n: number, kind: FaultKind, role: Role, heldMs: number, readyAfterStartMs: number | null): FaultRecord {
  const startedAt = 1_000_000;
  return {
    n,
    kind,
    role,
    target: role,
    holdMs: heldMs,
    delayMs: 0,
    gapMs: 500,
    startedAt,
    healedAt: startedAt + heldMs,
    readyAfterHealMs: readyAfterStartMs === null ? null : Math.max(0, readyAfterStartMs - heldMs),
    readyAfterStartMs,
  };
}

const verdicts = (targets: readonly { met: boolean | null }[]) => targets.map((t) => t.met);

test('targets: a takeover is timed from the lease passing or the heal, whichever is later; a PostgreSQL failover from its start', () => {
  // A kill: healed at once, ready TAKEOVER_READY_MS after the lease passed: met; 1 ms later: missed.
  assert.is(takeoverReadyMs(fault(1, 'kill', 'svc-owner', 0, DRILL_LEASE_MS + TAKEOVER_READY_MS)), TAKEOVER_READY_MS);
  const onTime = [fault(1, 'kill', 'svc-owner', 0, DRILL_LEASE_MS + TAKEOVER_READY_MS)];
  assert.equal(verdicts(judgeTargets(onTime, 120)), [true, true, null, null]);
  const late = [fault(1, 'kill', 'svc-owner', 0, DRILL_LEASE_MS + TAKEOVER_READY_MS + 1)];
  assert.equal(verdicts(judgeTargets(late, 120)), [false, true, null, null]);
  // A 20 s pause: timed from its heal, not from the lease.
  assert.is(takeoverReadyMs(fault(2, 'pause', 'svc-owner', 20_000, 21_000)), 1_000);
  // The standby's faults are no takeovers.
  assert.equal(verdicts(judgeTargets([fault(3, 'kill', 'svc-standby', 0, 60_000)], 120)), [true, true, null, null]);
  // A switchover ready 20 s after its start: met; later: missed, as is one never ready.
  assert.equal(verdicts(judgeTargets([fault(4, 'switchover', 'pg-leader', 2_000, PG_FAILOVER_READY_MS)], 120)), [true, true, null, null]);
  assert.equal(verdicts(judgeTargets([fault(4, 'kill-leader', 'pg-leader', 5_000, PG_FAILOVER_READY_MS + 1)], 120)), [
    true,
    false,
    null,
    null,
  ]);
  assert.equal(verdicts(judgeTargets([fault(4, 'switchover', 'pg-leader', 2_000, null)], 120)), [true, false, null, null]);
});

test('targets: a long run needs FAULTS_MIN faults, 5 of them PostgreSQL failovers or switchovers; skipped faults do not count', () => {
  const some = (n: number, failovers: number): FaultRecord[] =>
    Array.from({ length: n }, (_, i) =>
      i < failovers ? fault(i, 'switchover', 'pg-leader', 1_000, 5_000) : fault(i, 'slow', 'svc-owner', 1_000, 2_000),
    );
  assert.equal(verdicts(judgeTargets(some(FAULTS_MIN, 5), LONG_RUN_S)), [true, true, true, true]);
  assert.equal(verdicts(judgeTargets(some(FAULTS_MIN - 1, 5), LONG_RUN_S)), [true, true, false, true]);
  assert.equal(verdicts(judgeTargets(some(FAULTS_MIN, 4), LONG_RUN_S)), [true, true, true, false]);
  const skipped = [...some(FAULTS_MIN - 1, 5), { ...fault(999, 'slow', 'svc-owner', 0, null), skipped: 'no slot', startedAt: null }];
  assert.equal(verdicts(judgeTargets(skipped, LONG_RUN_S)), [true, true, false, true]);
});

test.run();
