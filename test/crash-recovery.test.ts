// Proves that a transfer whose service is killed with SIGKILL at each named crash point (CRA-001..CRA-006) is finished by a restarted service exactly once, with no state skipped and every user's funds conserved exactly (INV-004).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stateName, type TransferStateName } from '../src/domain/fsm.js';
import type { CrashPoint } from '../src/faults/crash-points.js';
import { units } from './support/funds.js';
import { cleanupAll, pollUntil, useOneServerForThisFile, withHarness, type ChildService, type ExitInfo, type Harness } from './support/process.js';

const USER = 7n;
const ASSET = 'USDT';
const PRECISION = 8;
/** How long a restarted service may take to finish a recovered transfer. */
const RECOVERY_TIMEOUT_MS = 20_000;
/** How long a service armed with CRASH_POINT may take to die once the transfer is sent. */
const CRASH_TIMEOUT_MS = 15_000;

type Account = 'FUNDING' | 'SPOT';
type Direction = { readonly from: Account; readonly to: Account };
type FundingOp = 'WITHDRAW' | 'DEPOSIT' | 'REFUND';
type OpRow = { readonly op: FundingOp; readonly outcome: 'APPLIED' | 'REJECTED'; readonly code: string | null; readonly amount: bigint; readonly user_id: bigint; readonly asset: string };
type Seed = { readonly account: Account; readonly amount: string };

const HAPPY_PATH: readonly TransferStateName[] = ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED'];
const ROLLBACK_PATH: readonly TransferStateName[] = ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'TARGET_PENDING', 'COMPENSATING', 'ROLLED_BACK'];

/** The environment every service started by this file shares (besides the harness's own). */
const SERVICE_ENV: Readonly<Record<string, string>> = {
  // The crashing request must still be in flight when the process dies, whatever the machine.
  HAPPY_PATH_DEADLINE_MS: '10000',
  RETRY_BASE_MS: '50',
  RETRY_CAP_MS: '500',
};

// ---------------------------------------------------------------------------------------------
// CRA-001..CRA-005: a transfer that must end COMMITTED.

type CommitCase = {
  readonly id: string;
  readonly point: CrashPoint;
  readonly title: string;
  /** Where PostgreSQL must show the transfer right after the kill. */
  readonly stateAtCrash: TransferStateName;
  /** Whether the funding-side operation was already applied when the process died. */
  readonly fundingOpAppliedAtCrash: (d: Direction) => boolean;
};

const COMMIT_CASES: readonly CommitCase[] = [
  {
    id: 'CRA-001',
    point: 'init_before_source_pending',
    title: 'crash after INIT, before SOURCE_PENDING: recovery reads INIT and starts the transfer from the beginning',
    stateAtCrash: 'INIT',
    fundingOpAppliedAtCrash: () => false,
  },
  {
    id: 'CRA-002',
    point: 'source_pending_before_call',
    title: 'crash in SOURCE_PENDING before the withdraw: recovery calls the withdraw, applied once',
    stateAtCrash: 'SOURCE_PENDING',
    fundingOpAppliedAtCrash: () => false,
  },
  {
    id: 'CRA-003',
    point: 'source_pending_after_call',
    title: 'crash after the withdraw, before SOURCE_DONE: recovery retries the withdraw, applied once',
    stateAtCrash: 'SOURCE_PENDING',
    fundingOpAppliedAtCrash: (d) => d.from === 'FUNDING',
  },
  {
    id: 'CRA-004',
    point: 'source_done_before_target_pending',
    title: 'crash after SOURCE_DONE, before TARGET_PENDING: recovery moves on to the deposit, source debited once',
    stateAtCrash: 'SOURCE_DONE',
    fundingOpAppliedAtCrash: (d) => d.from === 'FUNDING',
  },
  {
    id: 'CRA-005',
    point: 'target_pending_before_call',
    title: 'crash in TARGET_PENDING before the deposit: recovery calls the deposit, credited once',
    stateAtCrash: 'TARGET_PENDING',
    fundingOpAppliedAtCrash: (d) => d.from === 'FUNDING',
  },
  {
    id: 'CRA-005',
    point: 'target_pending_after_call',
    title: 'crash after the deposit, before COMMITTED: recovery retries the deposit, credited once',
    stateAtCrash: 'TARGET_PENDING',
    fundingOpAppliedAtCrash: () => true,
  },
];

const DIRECTIONS: readonly Direction[] = [
  { from: 'FUNDING', to: 'SPOT' },
  { from: 'SPOT', to: 'FUNDING' },
];

const SEED_FUNDING = '1000';
const SEED_SPOT = '500';
const AMOUNT = '123.45678901';

for (const c of COMMIT_CASES) {
  for (const d of DIRECTIONS) {
    test(`${c.id}: ${c.title} (${d.from}→${d.to}, ${c.point})`, () =>
      withHarness(async (h) => {
        const amount = units(AMOUNT, PRECISION);
        const seeds: Seed[] = [
          { account: 'FUNDING', amount: SEED_FUNDING },
          { account: 'SPOT', amount: SEED_SPOT },
        ];
        const armed = await h.start({ ...SERVICE_ENV, CRASH_POINT: c.point });
        await seed(h, armed, seeds);
        const before = await fundsOf(h, armed, ASSET);
        assert.equal(before, { funding: units(SEED_FUNDING), spot: units(SEED_SPOT) }, 'seeded balances');

        const reqId = await sendAndDie(h, armed, { from: d.from, to: d.to, asset: ASSET, amount: AMOUNT });

        // PostgreSQL, read directly while no service runs: the state the crash point implies.
        const atCrash = await transferRow(h, reqId);
        assert.is(atCrash.state, c.stateAtCrash, `state in PostgreSQL after ${c.point}`);
        assert.equal(await historyInDb(h, reqId), HAPPY_PATH.slice(0, HAPPY_PATH.indexOf(c.stateAtCrash) + 1), 'history in PostgreSQL at the crash');
        const fundingOp: FundingOp = d.from === 'FUNDING' ? 'WITHDRAW' : 'DEPOSIT';
        const appliedAtCrash = c.fundingOpAppliedAtCrash(d);
        assert.equal(
          await fundingOpsOf(h, reqId),
          appliedAtCrash ? [{ op: fundingOp, outcome: 'APPLIED', code: null, amount, user_id: USER, asset: ASSET }] : [],
          'funding_operations at the crash',
        );
        const fundingNow = await fundingInDb(h, USER, ASSET);
        const fundingDelta = appliedAtCrash ? (d.from === 'FUNDING' ? -amount : amount) : 0n;
        assert.is(fundingNow, units(SEED_FUNDING) + fundingDelta, 'FUNDING balance in PostgreSQL at the crash');

        // Restart without CRASH_POINT: the start-up recovery scan must finish the transfer.
        const recovered = await h.restart(armed, SERVICE_ENV);
        const final = await waitForTerminal(h, recovered, reqId);
        assert.is(final.state, 'COMMITTED', `final state; body ${JSON.stringify(final.body)}`);
        assert.is(final.body.amount, AMOUNT, 'amount shown');
        assert.is(final.body.error_code, null, 'no error code on a committed transfer');
        assertPath(final.history, HAPPY_PATH);

        const after = await fundsOf(h, recovered, ASSET);
        const moved = d.from === 'FUNDING' ? amount : -amount;
        assert.equal(after, { funding: before.funding - moved, spot: before.spot + moved }, 'both balances moved by exactly the amount');
        assert.equal(
          await fundingOpsOf(h, reqId),
          [{ op: fundingOp, outcome: 'APPLIED', code: null, amount, user_id: USER, asset: ASSET }],
          'exactly one APPLIED funding operation, the funding-side op of this req_id',
        );
        assert.is(await transferCount(h, USER), 1, 'recovery created no other transfer');
        await assertConserved(h, recovered, seeds);
      }),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// CRA-006: a real target rejection (the SPOT or FUNDING credit would overflow the balance bound)
// drives the transfer into COMPENSATING, where the process is killed.

/** u64::MAX / 10 smallest units: the largest amount one deposit may carry. */
const LARGEST_DEPOSIT = '18446744073.70955161';
const LARGEST_DEPOSITS = 5; // 5 × 1844674407370955161 = 2^63 − 3: 10 more units overflow 2^63 − 1.
const SMALL_SEED = '1';
const TINY_AMOUNT = '0.00000010';

const COMPENSATION_POINTS: readonly { readonly point: CrashPoint; readonly title: string; readonly refundAppliedAtCrash: boolean }[] = [
  {
    point: 'compensating_before_call',
    title: 'crash in COMPENSATING before the refund: recovery refunds the source once and ends ROLLED_BACK',
    refundAppliedAtCrash: false,
  },
  {
    point: 'compensating_after_call',
    title: 'crash after the refund, before ROLLED_BACK: recovery retries the refund, applied once',
    refundAppliedAtCrash: true,
  },
];

for (const c of COMPENSATION_POINTS) {
  test(`CRA-006: ${c.title} (FUNDING→SPOT, the SPOT credit overflows, ${c.point})`, () =>
    withHarness(async (h) => {
      const tiny = units(TINY_AMOUNT);
      const seeds: Seed[] = [
        ...Array.from({ length: LARGEST_DEPOSITS }, (): Seed => ({ account: 'SPOT', amount: LARGEST_DEPOSIT })),
        { account: 'FUNDING', amount: SMALL_SEED },
      ];
      const armed = await h.start({ ...SERVICE_ENV, CRASH_POINT: c.point });
      await seed(h, armed, seeds);
      const before = await fundsOf(h, armed, ASSET);
      assert.equal(before, { funding: units(SMALL_SEED), spot: BigInt(LARGEST_DEPOSITS) * units(LARGEST_DEPOSIT) }, 'seeded balances');

      const reqId = await sendAndDie(h, armed, { from: 'FUNDING', to: 'SPOT', asset: ASSET, amount: TINY_AMOUNT });

      const atCrash = await transferRow(h, reqId);
      assert.is(atCrash.state, 'COMPENSATING', `state in PostgreSQL after ${c.point}`);
      assert.is(atCrash.error_code, 'OVERFLOW', 'the target refused the credit as an overflow');
      assert.equal(await historyInDb(h, reqId), ROLLBACK_PATH.slice(0, -1), 'history in PostgreSQL at the crash');
      const withdraw: OpRow = { op: 'WITHDRAW', outcome: 'APPLIED', code: null, amount: tiny, user_id: USER, asset: ASSET };
      const refund: OpRow = { op: 'REFUND', outcome: 'APPLIED', code: null, amount: tiny, user_id: USER, asset: ASSET };
      assert.equal(await fundingOpsOf(h, reqId), c.refundAppliedAtCrash ? [withdraw, refund] : [withdraw], 'funding_operations at the crash');
      assert.is(await fundingInDb(h, USER, ASSET), units(SMALL_SEED) - (c.refundAppliedAtCrash ? 0n : tiny), 'FUNDING balance in PostgreSQL at the crash');

      const recovered = await h.restart(armed, SERVICE_ENV);
      const final = await waitForTerminal(h, recovered, reqId);
      assert.is(final.state, 'ROLLED_BACK', `final state; body ${JSON.stringify(final.body)}`);
      assert.is(final.body.error_code, 'OVERFLOW', 'error code kept from the target refusal');
      assertPath(final.history, ROLLBACK_PATH);

      assert.equal(await fundsOf(h, recovered, ASSET), before, 'FUNDING restored exactly, SPOT untouched');
      assert.equal(await fundingOpsOf(h, reqId), [withdraw, refund], 'one APPLIED WITHDRAW and exactly one APPLIED REFUND');
      assert.is(await transferCount(h, USER), 1, 'recovery created no other transfer');
      await assertConserved(h, recovered, seeds);
    }),
  );

  test(`CRA-006: ${c.title} (SPOT→FUNDING, the FUNDING credit overflows, ${c.point})`, () =>
    withHarness(async (h) => {
      const tiny = units(TINY_AMOUNT);
      const seeds: Seed[] = [
        ...Array.from({ length: LARGEST_DEPOSITS }, (): Seed => ({ account: 'FUNDING', amount: LARGEST_DEPOSIT })),
        { account: 'SPOT', amount: SMALL_SEED },
      ];
      const armed = await h.start({ ...SERVICE_ENV, CRASH_POINT: c.point });
      await seed(h, armed, seeds);
      const before = await fundsOf(h, armed, ASSET);
      assert.equal(before, { funding: BigInt(LARGEST_DEPOSITS) * units(LARGEST_DEPOSIT), spot: units(SMALL_SEED) }, 'seeded balances');

      const reqId = await sendAndDie(h, armed, { from: 'SPOT', to: 'FUNDING', asset: ASSET, amount: TINY_AMOUNT });

      const atCrash = await transferRow(h, reqId);
      assert.is(atCrash.state, 'COMPENSATING', `state in PostgreSQL after ${c.point}`);
      assert.is(atCrash.error_code, 'OVERFLOW', 'the target refused the credit as an overflow');
      assert.equal(await historyInDb(h, reqId), ROLLBACK_PATH.slice(0, -1), 'history in PostgreSQL at the crash');
      const rejected: OpRow = { op: 'DEPOSIT', outcome: 'REJECTED', code: 'OVERFLOW', amount: tiny, user_id: USER, asset: ASSET };
      assert.equal(await fundingOpsOf(h, reqId), [rejected], 'funding_operations at the crash: the refused deposit only');
      assert.is(await fundingInDb(h, USER, ASSET), before.funding, 'FUNDING balance untouched');

      const recovered = await h.restart(armed, SERVICE_ENV);
      const final = await waitForTerminal(h, recovered, reqId);
      assert.is(final.state, 'ROLLED_BACK', `final state; body ${JSON.stringify(final.body)}`);
      assertPath(final.history, ROLLBACK_PATH);
      assert.equal(await fundsOf(h, recovered, ASSET), before, 'SPOT restored exactly (refunded once), FUNDING untouched');
      assert.equal(await fundingOpsOf(h, reqId), [rejected], 'no funding credit was applied');
      assert.is(await transferCount(h, USER), 1, 'recovery created no other transfer');
      await assertConserved(h, recovered, seeds);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Helpers.

type Funds = { funding: bigint; spot: bigint };

async function seed(h: Harness, svc: ChildService, seeds: readonly Seed[]): Promise<void> {
  for (const [i, s] of seeds.entries()) {
    const r = await svc.call('POST', '/admin/v1/deposit', {
      token: h.adminToken(),
      body: { user_id: USER.toString(), account: s.account, asset: ASSET, amount: s.amount, ref: `crash-seed-${i}` },
    });
    assert.is(r.status, 200, `deposit ${JSON.stringify(s)}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.state, 'DONE', `deposit ${JSON.stringify(s)} done`);
  }
}

/** Every asset's FUNDING and SPOT balance of the user, in smallest units, read over HTTP. */
async function allFunds(h: Harness, svc: ChildService): Promise<Map<string, Funds>> {
  const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(USER) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const out = new Map<string, Funds>();
  const add = (list: unknown, key: keyof Funds) => {
    assert.ok(Array.isArray(list), `balances list: ${JSON.stringify(r.body)}`);
    for (const b of list as { asset: string; available: string }[]) {
      const f = out.get(b.asset) ?? { funding: 0n, spot: 0n };
      f[key] += units(b.available, PRECISION);
      out.set(b.asset, f);
    }
  };
  add(r.body.funding, 'funding');
  add(r.body.spot, 'spot');
  return out;
}

async function fundsOf(h: Harness, svc: ChildService, asset: string): Promise<Funds> {
  return (await allFunds(h, svc)).get(asset) ?? { funding: 0n, spot: 0n };
}

/** INV-004: for every asset the user holds, FUNDING + SPOT equals exactly what was deposited. */
async function assertConserved(h: Harness, svc: ChildService, seeds: readonly Seed[]): Promise<void> {
  const deposited = new Map<string, bigint>([[ASSET, seeds.reduce((n, s) => n + units(s.amount, PRECISION), 0n)]]);
  const held = new Map<string, bigint>();
  for (const [asset, f] of await allFunds(h, svc)) held.set(asset, f.funding + f.spot);
  for (const [asset, total] of held) if (total === 0n && !deposited.has(asset)) held.delete(asset);
  assert.equal(Object.fromEntries(held), Object.fromEntries(deposited), 'INV-004: total per asset (FUNDING + SPOT) equals the deposits');
}

/**
 * Sends the transfer to a service armed with `point` and checks that the process died by SIGKILL
 * at that point while the request was in flight. Returns the req_id, read from PostgreSQL since
 * the client never got an answer.
 */
async function sendAndDie(h: Harness, svc: ChildService, body: Record<string, string>): Promise<string> {
  const outcome = await svc.call('POST', '/api/v1/internal_transfer', { token: h.userToken(USER), body, timeoutMs: CRASH_TIMEOUT_MS }).then(
    (reply) => ({ answered: true as const, reply }),
    (error: unknown) => ({ answered: false as const, error }),
  );
  let exit: ExitInfo;
  try {
    exit = await svc.waitForExit(CRASH_TIMEOUT_MS);
  } catch (error) {
    throw new Error(`${String(error)}\ntransfers now: ${JSON.stringify(await transfersOf(h, USER), jsonBigint)}`);
  }
  assert.ok(!outcome.answered, `the request was answered although the process died: ${outcome.answered ? JSON.stringify(outcome.reply) : ''}`);
  assert.equal(exit, { code: null, signal: 'SIGKILL' }, `killed by SIGKILL; stderr tail:\n${svc.stderrTail()}`);
  // Which point killed it is proven from PostgreSQL by the caller: the crash hook's own log line
  // is written from a coordinator thread and is lost with the process (see the report).
  const rows = await transfersOf(h, USER);
  assert.is(rows.length, 1, `exactly one transfer recorded: ${JSON.stringify(rows, jsonBigint)}`);
  return (rows[0] as { req_id: string }).req_id;
}

type TransferRow = { req_id: string; state: TransferStateName; error_code: string | null };

async function transfersOf(h: Harness, userId: bigint): Promise<TransferRow[]> {
  const rows = await h.sql<{ req_id: string; state: number; error_code: string | null }[]>`
    SELECT req_id, state, error_code FROM transfers_tb WHERE user_id = ${userId} ORDER BY transfer_id`;
  return rows.map((r) => ({ req_id: r.req_id, state: mustState(r.state), error_code: r.error_code }));
}

async function transferRow(h: Harness, reqId: string): Promise<TransferRow> {
  const rows = (await transfersOf(h, USER)).filter((r) => r.req_id === reqId);
  const row = rows[0];
  assert.ok(row !== undefined && rows.length === 1, `transfer ${reqId} in PostgreSQL`);
  return row as TransferRow;
}

async function transferCount(h: Harness, userId: bigint): Promise<number> {
  return (await transfersOf(h, userId)).length;
}

async function historyInDb(h: Harness, reqId: string): Promise<TransferStateName[]> {
  const rows = await h.sql<{ to_state: number }[]>`SELECT to_state FROM transfer_state_history WHERE req_id = ${reqId} ORDER BY id`;
  return rows.map((r) => mustState(r.to_state));
}

async function fundingOpsOf(h: Harness, reqId: string): Promise<OpRow[]> {
  const rows = await h.sql<OpRow[]>`
    SELECT op, outcome, code, amount, user_id, asset FROM funding_operations WHERE req_id = ${reqId}
     ORDER BY CASE op WHEN 'WITHDRAW' THEN 1 WHEN 'DEPOSIT' THEN 2 ELSE 3 END`;
  return rows.map((r) => ({ op: r.op, outcome: r.outcome, code: r.code, amount: r.amount, user_id: r.user_id, asset: r.asset }));
}

async function fundingInDb(h: Harness, userId: bigint, asset: string): Promise<bigint> {
  const rows = await h.sql<{ available: bigint }[]>`SELECT available FROM funding_balances WHERE user_id = ${userId} AND asset = ${asset}`;
  const row = rows[0];
  assert.ok(row !== undefined, `FUNDING account of ${userId} ${asset}`);
  return (row as { available: bigint }).available;
}

type HistoryItem = { readonly from: string | null; readonly state: string; readonly event: string };
type Final = { readonly state: string; readonly body: Record<string, unknown>; readonly history: HistoryItem[] };

/** Polls GET /api/v1/internal_transfer/:req_id until the transfer is terminal (bounded). */
async function waitForTerminal(h: Harness, svc: ChildService, reqId: string): Promise<Final> {
  let last = '';
  return pollUntil(
    async () => {
      const r = await svc.call('GET', `/api/v1/internal_transfer/${reqId}`, { token: h.userToken(USER) });
      last = JSON.stringify(r.body);
      assert.is(r.status, 200, `GET transfer: ${last}`);
      const state = String(r.body.state);
      if (!['COMMITTED', 'FAILED', 'ROLLED_BACK'].includes(state)) return undefined;
      assert.ok(Array.isArray(r.body.history), `history: ${last}`);
      return { state, body: r.body, history: r.body.history as HistoryItem[] };
    },
    { timeoutMs: RECOVERY_TIMEOUT_MS, intervalMs: 50, describe: () => `transfer ${reqId} terminal; last seen ${last}; stderr tail:\n${svc.stderrTail()}` },
  );
}

/** The history is exactly `path`, each entry starting where the one before it ended. */
function assertPath(history: readonly HistoryItem[], path: readonly TransferStateName[]): void {
  assert.equal(history.map((e) => e.state), [...path], `state history: ${JSON.stringify(history)}`);
  history.forEach((e, i) => assert.is(e.from, i === 0 ? null : (path[i - 1] ?? null), `entry ${i} starts where the previous ended`));
}

function mustState(id: number): TransferStateName {
  const name = stateName(id);
  if (name === null) throw new Error(`unknown state id ${id}`);
  return name;
}

function jsonBigint(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

test.before(useOneServerForThisFile);
test.after(cleanupAll);

test.run();
