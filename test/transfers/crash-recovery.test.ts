// Proves that a transfer whose service is killed with SIGKILL at each named crash point (CRA-001..CRA-006) is finished by a restarted service exactly once, with no state skipped and every user's funds conserved exactly (INV-004).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { ACCOUNT_TYPE, FUNDING_OP_CODES } from '../../src/db/transfer-writes.js';
import { EVENT_CODES, EVENTS, STATE_IDS, stateName, type TransferStateName, transition } from '../../src/domain/fsm.js';
import type { CrashPoint } from '../../src/faults/crash-points.js';
import { units } from '../support/funds.js';
import {
  cleanupAll,
  pollUntil,
  useOneServerForThisFile,
  withHarness,
  type ChildService,
  type ExitInfo,
  type Harness,
} from '../support/process.js';

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
type OpRow = {
  readonly op: FundingOp;
  readonly outcome: 'APPLIED' | 'REJECTED';
  readonly code: string | null;
  readonly amount: bigint;
  readonly user_id: bigint;
  readonly asset: string;
};
type Seed = { readonly account: Account; readonly amount: string };

/** The transfer's whole history once recovered, by direction, for a transfer the HTTP path created. */
const ROLLBACK_PATH: Readonly<Record<Account, readonly TransferStateName[]>> = {
  FUNDING: ['INIT', 'SOURCE_DONE', 'TARGET_PENDING', 'COMPENSATING', 'ROLLED_BACK'],
  SPOT: ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'COMPENSATING', 'ROLLED_BACK'],
};

/** The environment every service started by this file shares (besides the harness's own). */
const SERVICE_ENV: Readonly<Record<string, string>> = {
  // The crashing request must still be in flight when the process dies, whatever the machine.
  HAPPY_PATH_DEADLINE_MS: '10000',
  RETRY_BASE_MS: '50',
  RETRY_CAP_MS: '500',
};

// ---------------------------------------------------------------------------------------------
// CRA-001..CRA-005 and the boundaries of the two-commit happy path: a transfer that must end
// COMMITTED. With the Funding side's call sharing the transaction of the moves around it, the
// happy path no longer stops in INIT (CRA-001), in SOURCE_DONE (CRA-004), in SOURCE_PENDING on
// the FUNDING side, or in TARGET_PENDING on the FUNDING side: those cases start from a transfer
// seeded in that state (written to PostgreSQL with the effects that state implies, as an earlier
// version, the mailbox-full path or an operator could leave it), and the restarted service's
// start-up recovery drives it into the crash point. Recovery must still finish it exactly once.

/**
 * How the transfer reaches the crash: `live` is a POST to the armed service; a state name is a
 * transfer seeded in that state, driven by the armed service's start-up recovery.
 */
type Start = 'live' | 'INIT' | 'SOURCE_PENDING' | 'SOURCE_DONE' | 'TARGET_PENDING';

type CommitCase = {
  readonly id: string;
  readonly point: CrashPoint;
  readonly title: string;
  readonly dir: Direction;
  readonly start: Start;
  /** The history PostgreSQL shows right after the kill; its last entry is the state at the crash. */
  readonly atCrash: readonly TransferStateName[];
  /** Whether the funding-side operation was already applied when the process died. */
  readonly fundingApplied: boolean;
};

const F2S: Direction = { from: 'FUNDING', to: 'SPOT' };
const S2F: Direction = { from: 'SPOT', to: 'FUNDING' };

const COMMIT_CASES: readonly CommitCase[] = [
  {
    id: 'CRA-001',
    point: 'init_before_source_pending',
    dir: F2S,
    start: 'INIT',
    atCrash: ['INIT'],
    fundingApplied: false,
    title: 'crash after INIT, before the first step: recovery reads INIT and starts the transfer from the beginning',
  },
  {
    id: 'CRA-001',
    point: 'init_before_source_pending',
    dir: S2F,
    start: 'INIT',
    atCrash: ['INIT'],
    fundingApplied: false,
    title: 'crash after INIT, before SOURCE_PENDING: recovery reads INIT and starts the transfer from the beginning',
  },
  {
    id: 'CRA-002',
    point: 'source_pending_before_call',
    dir: F2S,
    start: 'SOURCE_PENDING',
    atCrash: ['INIT', 'SOURCE_PENDING'],
    fundingApplied: false,
    title: 'crash in SOURCE_PENDING before the withdraw: recovery calls the withdraw, applied once',
  },
  {
    id: 'CRA-002',
    point: 'source_pending_before_call',
    dir: S2F,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_PENDING'],
    fundingApplied: false,
    title: 'crash in SOURCE_PENDING before the withdraw: recovery calls the withdraw, applied once',
  },
  {
    id: 'CRA-003',
    point: 'source_pending_after_call',
    dir: F2S,
    start: 'SOURCE_PENDING',
    atCrash: ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'TARGET_PENDING'],
    fundingApplied: true,
    title: 'crash right after the withdraw, which committed with its moves: recovery goes on from TARGET_PENDING, debited once',
  },
  {
    id: 'CRA-003',
    point: 'source_pending_after_call',
    dir: S2F,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_PENDING'],
    fundingApplied: false,
    title: 'crash after the withdraw, before SOURCE_DONE: recovery retries the withdraw, applied once',
  },
  {
    id: 'CRA-004',
    point: 'source_done_before_target_pending',
    dir: F2S,
    start: 'SOURCE_DONE',
    atCrash: ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE'],
    fundingApplied: true,
    title: 'crash after SOURCE_DONE, before TARGET_PENDING: recovery moves on to the deposit, source debited once',
  },
  {
    id: 'CRA-004',
    point: 'source_done_before_target_pending',
    dir: S2F,
    start: 'SOURCE_DONE',
    atCrash: ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE'],
    fundingApplied: false,
    title: 'crash after SOURCE_DONE, before the credit: recovery credits once',
  },
  {
    id: 'CRA-005',
    point: 'target_pending_before_call',
    dir: F2S,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_DONE', 'TARGET_PENDING'],
    fundingApplied: true,
    title: 'crash in TARGET_PENDING before the deposit: recovery calls the deposit, credited once',
  },
  {
    id: 'CRA-005',
    point: 'target_pending_before_call',
    dir: S2F,
    start: 'TARGET_PENDING',
    atCrash: ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'TARGET_PENDING'],
    fundingApplied: false,
    title: 'crash in TARGET_PENDING before the deposit: recovery calls the deposit, credited once',
  },
  {
    id: 'CRA-005',
    point: 'target_pending_after_call',
    dir: F2S,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_DONE', 'TARGET_PENDING'],
    fundingApplied: true,
    title: 'crash after the deposit, before COMMITTED: recovery retries the deposit, credited once',
  },
  {
    id: 'CRA-005',
    point: 'target_pending_after_call',
    dir: S2F,
    start: 'TARGET_PENDING',
    atCrash: ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED'],
    fundingApplied: true,
    title: 'crash right after the deposit, which committed with COMMITTED: nothing left to do, credited once',
  },
  // The three boundaries of the two-commit happy path.
  {
    id: 'CRA-005',
    point: 'created_debited_before_target_call',
    dir: F2S,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_DONE', 'TARGET_PENDING'],
    fundingApplied: true,
    title: 'crash after the create-and-debit commit, before the UBSCore call: recovery credits once',
  },
  {
    id: 'CRA-005',
    point: 'target_credited_before_committed',
    dir: F2S,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_DONE', 'TARGET_PENDING'],
    fundingApplied: true,
    title: 'crash after UBSCore answered the credit, before the COMMITTED write: recovery repeats the credit (a duplicate), applied once',
  },
  {
    id: 'CRA-003',
    point: 'source_debited_before_credit_txn',
    dir: S2F,
    start: 'live',
    atCrash: ['INIT', 'SOURCE_PENDING'],
    fundingApplied: false,
    title: 'crash after the UBSCore debit, before the credit transaction: recovery repeats the debit (a duplicate) and credits once',
  },
];

const SEED_FUNDING = '1000';
const SEED_SPOT = '500';
const AMOUNT = '123.45678901';

for (const c of COMMIT_CASES) {
  const d = c.dir;
  test(`${c.id}: ${c.title} (${d.from}→${d.to}, ${c.point}, ${c.start === 'live' ? 'on the HTTP path' : `seeded ${c.start}`})`, () =>
    withHarness(async (h) => {
      const amount = units(AMOUNT, PRECISION);
      const seeds: Seed[] = [
        { account: 'FUNDING', amount: SEED_FUNDING },
        { account: 'SPOT', amount: SEED_SPOT },
      ];
      const armedEnv = { ...SERVICE_ENV, CRASH_POINT: c.point };
      let reqId: string;
      let before: Funds;
      let armed: ChildService;
      if (c.start === 'live') {
        armed = await h.start(armedEnv);
        await seed(h, armed, seeds);
        before = await fundsOf(h, armed, ASSET);
        reqId = await sendAndDie(h, armed, { from: d.from, to: d.to, asset: ASSET, amount: AMOUNT });
      } else {
        ({ reqId, before } = await seedTransfer(h, seeds, d, c.start, amount));
        armed = await h.startToDie(armedEnv);
        const exit = await armed.waitForExit(CRASH_TIMEOUT_MS);
        assert.equal(exit, { code: null, signal: 'SIGKILL' }, `killed by SIGKILL during recovery; stderr tail:\n${armed.stderrTail()}`);
      }
      assert.equal(before, { funding: units(SEED_FUNDING), spot: units(SEED_SPOT) }, 'seeded balances');

      // PostgreSQL, read directly while no service runs: the state the crash point implies.
      const atCrash = await transferRow(h, reqId);
      assert.is(atCrash.state, c.atCrash[c.atCrash.length - 1], `state in PostgreSQL after ${c.point}`);
      assert.equal(await historyInDb(h, reqId), [...c.atCrash], 'history in PostgreSQL at the crash');
      const fundingOp: FundingOp = d.from === 'FUNDING' ? 'WITHDRAW' : 'DEPOSIT';
      assert.equal(
        await fundingOpsOf(h, reqId),
        c.fundingApplied ? [{ op: fundingOp, outcome: 'APPLIED', code: null, amount, user_id: USER, asset: ASSET }] : [],
        'funding_operations at the crash',
      );
      const fundingDelta = c.fundingApplied ? (d.from === 'FUNDING' ? -amount : amount) : 0n;
      assert.is(await fundingInDb(h, USER, ASSET), units(SEED_FUNDING) + fundingDelta, 'FUNDING balance in PostgreSQL at the crash');

      // Restart without CRASH_POINT: the start-up recovery scan must finish the transfer.
      const recovered = await h.restart(armed, SERVICE_ENV);
      const final = await waitForTerminal(h, recovered, reqId);
      assert.is(final.state, 'COMMITTED', `final state; body ${JSON.stringify(final.body)}`);
      assert.is(final.body.amount, AMOUNT, 'amount shown');
      assert.is(final.body.error_code, null, 'no error code on a committed transfer');
      assertPath(final.history, recoveredPath(c));

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
    }));
}

/** The moves recovery makes to COMMITTED, by source and the state it finds (written out, not derived). */
const RECOVERY_MOVES: Readonly<Record<Account, Partial<Record<TransferStateName, readonly TransferStateName[]>>>> = {
  FUNDING: {
    INIT: ['SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED'],
    SOURCE_PENDING: ['SOURCE_DONE', 'TARGET_PENDING', 'COMMITTED'],
    SOURCE_DONE: ['TARGET_PENDING', 'COMMITTED'],
    TARGET_PENDING: ['COMMITTED'],
    COMMITTED: [],
  },
  SPOT: {
    INIT: ['SOURCE_PENDING', 'SOURCE_DONE', 'COMMITTED'],
    SOURCE_PENDING: ['SOURCE_DONE', 'COMMITTED'],
    SOURCE_DONE: ['COMMITTED'],
    TARGET_PENDING: ['COMMITTED'],
    COMMITTED: [],
  },
};

function recoveredPath(c: CommitCase): TransferStateName[] {
  const moves = RECOVERY_MOVES[c.dir.from][c.atCrash[c.atCrash.length - 1] as TransferStateName];
  if (moves === undefined) throw new Error(`no recovery path from ${c.atCrash.join(' → ')}`);
  return [...c.atCrash, ...moves];
}

/**
 * Seeds a transfer in `state` with exactly the effects that state implies, while no service
 * runs, and answers its req_id and the balances before it. FUNDING-side effects are written to
 * PostgreSQL directly (the debit and its operation record); a SPOT debit can only come from
 * UBSCore, so a SPOT-source transfer past SOURCE_PENDING is made by a service killed right after
 * that debit, then moved on in PostgreSQL.
 */
async function seedTransfer(
  h: Harness,
  seeds: readonly Seed[],
  d: Direction,
  state: Exclude<Start, 'live'>,
  amount: bigint,
): Promise<{ reqId: string; before: Funds }> {
  const spotDebited = d.from === 'SPOT' && (state === 'SOURCE_DONE' || state === 'TARGET_PENDING');
  const plain = await h.start(spotDebited ? { ...SERVICE_ENV, CRASH_POINT: 'source_debited_before_credit_txn' } : SERVICE_ENV);
  await seed(h, plain, seeds);
  const before = await fundsOf(h, plain, ASSET);
  if (spotDebited) {
    const reqId = await sendAndDie(h, plain, { from: d.from, to: d.to, asset: ASSET, amount: AMOUNT });
    const extra: TransferStateName[] = state === 'SOURCE_DONE' ? ['SOURCE_DONE'] : ['SOURCE_DONE', 'TARGET_PENDING'];
    await moveInDb(h, reqId, 'SOURCE_PENDING', extra);
    return { reqId, before };
  }
  await plain.stop();
  const reqId = ulid();
  const path: TransferStateName[] =
    state === 'INIT' ? ['INIT'] : state === 'SOURCE_PENDING' ? ['INIT', 'SOURCE_PENDING'] : ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE'];
  await h.sql.begin(async (tx) => {
    await tx`
      INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state)
      VALUES (${reqId}, ${USER}, ${ASSET}, ${amount}, ${ACCOUNT_TYPE[d.from]}, ${ACCOUNT_TYPE[d.from]}, ${ACCOUNT_TYPE[d.to]}, ${STATE_IDS[state]})`;
    await tx`INSERT INTO transfers_active (req_id, user_id) VALUES (${reqId}, ${USER})`;
    let from: TransferStateName | null = null;
    for (const s of path) {
      await tx`INSERT INTO transfer_state_history (transfer_id, from_state, to_state, event)
               SELECT transfer_id, ${from === null ? null : STATE_IDS[from]}, ${STATE_IDS[s]}, ${eventCode(from, s)} FROM transfers_tb WHERE req_id = ${reqId}`;
      from = s;
    }
    if (state === 'SOURCE_DONE') {
      // A FUNDING source in SOURCE_DONE has been debited, with its operation record.
      await tx`UPDATE funding_balances SET available = available - ${amount} WHERE user_id = ${USER} AND asset = ${ASSET}`;
      await tx`INSERT INTO funding_operations (transfer_id, op) SELECT transfer_id, ${FUNDING_OP_CODES.WITHDRAW} FROM transfers_tb WHERE req_id = ${reqId}`;
    }
  });
  return { reqId, before };
}

/** The code of the event that leads from `from` to `to` (CREATED for a first row), as a history row stores it. */
function eventCode(from: TransferStateName | null, to: TransferStateName): number {
  if (from === null) return EVENT_CODES.CREATED;
  const event = EVENTS.find((e) => {
    const next = transition(from, e);
    return next.ok && next.to === to;
  });
  if (event === undefined) throw new Error(`no event leads from ${from} to ${to}`);
  return EVENT_CODES[event];
}

/** Moves a transfer on in PostgreSQL through `states`, one history row each, as an earlier version's steps would have. */
async function moveInDb(h: Harness, reqId: string, from: TransferStateName, states: readonly TransferStateName[]): Promise<void> {
  await h.sql.begin(async (tx) => {
    let at = from;
    for (const s of states) {
      await tx`INSERT INTO transfer_state_history (transfer_id, from_state, to_state, event)
               SELECT transfer_id, ${STATE_IDS[at]}, ${STATE_IDS[s]}, ${eventCode(at, s)} FROM transfers_tb WHERE req_id = ${reqId}`;
      at = s;
    }
    await tx`UPDATE transfers_tb SET state = ${STATE_IDS[at]} WHERE req_id = ${reqId} AND state = ${STATE_IDS[from]}`;
  });
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
    title: 'crash after the refund: recovery finds it applied (FUNDING: committed with ROLLED_BACK) or retries it, applied once',
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

      // The FUNDING refund commits with its move to ROLLED_BACK (spec 003 §4.3).
      const atCrash = await transferRow(h, reqId);
      const crashedAt = c.refundAppliedAtCrash ? ROLLBACK_PATH.FUNDING : ROLLBACK_PATH.FUNDING.slice(0, -1);
      assert.is(atCrash.state, crashedAt[crashedAt.length - 1], `state in PostgreSQL after ${c.point}`);
      assert.is(atCrash.error_code, 'OVERFLOW', 'the target refused the credit as an overflow');
      assert.equal(await historyInDb(h, reqId), [...crashedAt], 'history in PostgreSQL at the crash');
      const withdraw: OpRow = { op: 'WITHDRAW', outcome: 'APPLIED', code: null, amount: tiny, user_id: USER, asset: ASSET };
      const refund: OpRow = { op: 'REFUND', outcome: 'APPLIED', code: null, amount: tiny, user_id: USER, asset: ASSET };
      assert.equal(
        await fundingOpsOf(h, reqId),
        c.refundAppliedAtCrash ? [withdraw, refund] : [withdraw],
        'funding_operations at the crash',
      );
      assert.is(
        await fundingInDb(h, USER, ASSET),
        units(SMALL_SEED) - (c.refundAppliedAtCrash ? 0n : tiny),
        'FUNDING balance in PostgreSQL at the crash',
      );

      const recovered = await h.restart(armed, SERVICE_ENV);
      const final = await waitForTerminal(h, recovered, reqId);
      assert.is(final.state, 'ROLLED_BACK', `final state; body ${JSON.stringify(final.body)}`);
      assert.is(final.body.error_code, 'OVERFLOW', 'error code kept from the target refusal');
      assertPath(final.history, ROLLBACK_PATH.FUNDING);

      assert.equal(await fundsOf(h, recovered, ASSET), before, 'FUNDING restored exactly, SPOT untouched');
      assert.equal(await fundingOpsOf(h, reqId), [withdraw, refund], 'one APPLIED WITHDRAW and exactly one APPLIED REFUND');
      assert.is(await transferCount(h, USER), 1, 'recovery created no other transfer');
      await assertConserved(h, recovered, seeds);
    }));

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
      assert.equal(await historyInDb(h, reqId), ROLLBACK_PATH.SPOT.slice(0, -1), 'history in PostgreSQL at the crash');
      const rejected: OpRow = { op: 'DEPOSIT', outcome: 'REJECTED', code: 'OVERFLOW', amount: tiny, user_id: USER, asset: ASSET };
      assert.equal(await fundingOpsOf(h, reqId), [rejected], 'funding_operations at the crash: the refused deposit only');
      assert.is(await fundingInDb(h, USER, ASSET), before.funding, 'FUNDING balance untouched');

      const recovered = await h.restart(armed, SERVICE_ENV);
      const final = await waitForTerminal(h, recovered, reqId);
      assert.is(final.state, 'ROLLED_BACK', `final state; body ${JSON.stringify(final.body)}`);
      assertPath(final.history, ROLLBACK_PATH.SPOT);
      assert.equal(await fundsOf(h, recovered, ASSET), before, 'SPOT restored exactly (refunded once), FUNDING untouched');
      assert.equal(await fundingOpsOf(h, reqId), [rejected], 'no funding credit was applied');
      assert.is(await transferCount(h, USER), 1, 'recovery created no other transfer');
      await assertConserved(h, recovered, seeds);
    }));
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
  assert.ok(
    !outcome.answered,
    `the request was answered although the process died: ${outcome.answered ? JSON.stringify(outcome.reply) : ''}`,
  );
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
  const rows = await h.sql<{ to_state: number }[]>`
    SELECT to_state FROM transfer_state_history WHERE transfer_id = (SELECT transfer_id FROM transfers_tb WHERE req_id = ${reqId}) ORDER BY id`;
  return rows.map((r) => mustState(r.to_state));
}

async function fundingOpsOf(h: Harness, reqId: string): Promise<OpRow[]> {
  const rows = await h.sql<OpRow[]>`
    SELECT op, outcome, code, amount, user_id, asset FROM funding_operation_records WHERE req_id = ${reqId}
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
    {
      timeoutMs: RECOVERY_TIMEOUT_MS,
      intervalMs: 50,
      describe: () => `transfer ${reqId} terminal; last seen ${last}; stderr tail:\n${svc.stderrTail()}`,
    },
  );
}

/** The history is exactly `path`, each entry starting where the one before it ended. */
function assertPath(history: readonly HistoryItem[], path: readonly TransferStateName[]): void {
  assert.equal(
    history.map((e) => e.state),
    [...path],
    `state history: ${JSON.stringify(history)}`,
  );
  history.forEach((e, i) => {
    assert.is(e.from, i === 0 ? null : (path[i - 1] ?? null), `entry ${i} starts where the previous ended`);
  });
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
