// Proves every rule of the pure spot ledger, row by row (command → answer, balance, recorded?),
// that an auditor's independent sum agrees with it, and that replaying its records rebuilds it.
// test-runner: no-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { AMOUNT_UNITS_MAX, BALANCE_UNITS_MAX } from '../../src/domain/money.js';
import type { AccountStatus } from '../../src/domain/types.js';
import { USER_ID_MAX } from '../../src/domain/checks.js';
import { isDebitOp } from '../../src/domain/spot-records.js';
import { SpotLedger } from '../../src/ubscore/ledger/core.js';
import type { OpRecord, ProcessedLookup, WalRecord } from '../../src/domain/spot-records.js';
import type { UbsCommand, UbsOpName, UbsResult } from '../../src/domain/spot-commands.js';
import { decode, encode } from '../../wal/codec.js';

type Balance = readonly [userId: bigint, asset: string, available: bigint, status?: AccountStatus];
type Row = {
  readonly command: UbsCommand;
  readonly result: UbsResult;
  readonly recorded: boolean;
  readonly balance?: Balance;
};

/** The ledger plus the processed set an actor would keep around it (durable or in flight). */
class Harness {
  readonly ledger = new SpotLedger();
  readonly processed = new Map<string, OpRecord>();
  readonly records: WalRecord[] = [];
  readonly lookup: ProcessedLookup = (opKey) => this.processed.get(opKey);

  run(command: UbsCommand): { result: UbsResult; recorded: boolean } {
    const decision = this.ledger.decide(command, this.lookup);
    if (decision.record !== null) {
      this.records.push(decision.record);
      if (decision.processedKey !== null && decision.record.kind === 'op') this.processed.set(decision.processedKey, decision.record);
    }
    return { result: decision.result, recorded: decision.record !== null };
  }
}

// Command builders keep the rows one line each.
const transfer = (op: 'WITHDRAW' | 'DEPOSIT' | 'REFUND', reqId: string, userId: bigint, asset: string, amount: bigint): UbsCommand => ({
  kind: 'transfer_op',
  op,
  reqId,
  userId,
  asset,
  amount,
});
const external = (
  op: 'EXTERNAL_DEPOSIT' | 'EXTERNAL_WITHDRAW',
  ref: string,
  userId: bigint,
  asset: string,
  amount: bigint,
): UbsCommand => ({ kind: 'external_op', op, ref, userId, asset, amount });
const setStatus = (userId: bigint, asset: string, status: AccountStatus): UbsCommand => ({ kind: 'set_status', userId, asset, status });
const query = (op: UbsOpName, key: string): UbsCommand => ({ kind: 'query_op', op, key });
/** Builds a command from deliberately ill-typed input, as another thread could send it. */
const raw = (value: unknown): UbsCommand => value as UbsCommand;

const applied = (duplicate = false): UbsResult => ({ kind: 'applied', duplicate });
const rejected = (code: Extract<UbsResult, { kind: 'rejected' }>['code'], duplicate = false): UbsResult => ({
  kind: 'rejected',
  code,
  duplicate,
});
const invalid = (code: Extract<UbsResult, { kind: 'invalid' }>['code']): UbsResult => ({ kind: 'invalid', code });

const INPUT_ROWS: readonly Row[] = [
  { command: transfer('DEPOSIT', 'r1', 0n, 'BTC', 1n), result: invalid('INVALID_USER'), recorded: false },
  { command: transfer('DEPOSIT', 'r1', USER_ID_MAX + 1n, 'BTC', 1n), result: invalid('INVALID_USER'), recorded: false },
  {
    command: raw({ kind: 'transfer_op', op: 'DEPOSIT', reqId: 'r1', userId: 1, asset: 'BTC', amount: 1n }),
    result: invalid('INVALID_USER'),
    recorded: false,
  },
  { command: transfer('DEPOSIT', 'r1', 1n, 'BTC', 0n), result: invalid('INVALID_AMOUNT'), recorded: false },
  { command: transfer('DEPOSIT', 'r1', 1n, 'BTC', -5n), result: invalid('INVALID_AMOUNT'), recorded: false },
  {
    command: raw({ kind: 'transfer_op', op: 'DEPOSIT', reqId: 'r1', userId: 1n, asset: 'BTC', amount: 1 }),
    result: invalid('INVALID_AMOUNT'),
    recorded: false,
  },
  { command: transfer('DEPOSIT', 'r1', 1n, 'BTC', AMOUNT_UNITS_MAX + 1n), result: invalid('OVERFLOW'), recorded: false },
  { command: transfer('DEPOSIT', 'r1', 1n, 'btc', 1n), result: invalid('INVALID_ASSET'), recorded: false },
  { command: transfer('DEPOSIT', 'r1', 1n, '', 1n), result: invalid('INVALID_ASSET'), recorded: false },
  { command: transfer('DEPOSIT', 'r1', 1n, 'A'.repeat(17), 1n), result: invalid('INVALID_ASSET'), recorded: false },
  { command: transfer('DEPOSIT', 'r 1', 1n, 'BTC', 1n), result: invalid('INVALID_REQUEST'), recorded: false },
  { command: transfer('DEPOSIT', '', 1n, 'BTC', 1n), result: invalid('INVALID_REQUEST'), recorded: false },
  { command: transfer('DEPOSIT', 'k'.repeat(65), 1n, 'BTC', 1n), result: invalid('INVALID_REQUEST'), recorded: false },
  {
    command: raw({ kind: 'transfer_op', op: 'EXTERNAL_DEPOSIT', reqId: 'r1', userId: 1n, asset: 'BTC', amount: 1n }),
    result: invalid('INVALID_REQUEST'),
    recorded: false,
  },
  {
    command: raw({ kind: 'external_op', op: 'DEPOSIT', ref: 'r1', userId: 1n, asset: 'BTC', amount: 1n }),
    result: invalid('INVALID_REQUEST'),
    recorded: false,
  },
  { command: raw({ kind: 'set_status', userId: 1n, asset: 'BTC', status: 'CLOSED' }), result: invalid('INVALID_REQUEST'), recorded: false },
  { command: raw({ kind: 'set_status', userId: 0n, asset: 'BTC', status: 'FROZEN' }), result: invalid('INVALID_USER'), recorded: false },
  { command: raw({ kind: 'query_op', op: 'TRANSFER', key: 'r1' }), result: invalid('INVALID_REQUEST'), recorded: false },
  { command: raw({ kind: 'balances', userId: -1n }), result: invalid('INVALID_USER'), recorded: false },
  { command: raw({ kind: 'mint', userId: 1n }), result: invalid('INVALID_REQUEST'), recorded: false },
  { command: raw(null), result: invalid('INVALID_REQUEST'), recorded: false },
];

const TRANSFER_ROWS: readonly Row[] = [
  // A withdrawal from an account that never existed is a recorded rejection.
  { command: transfer('WITHDRAW', 'w0', 1n, 'BTC', 10n), result: rejected('SOURCE_ACCOUNT_NOT_FOUND'), recorded: true },
  // A deposit creates the account lazily.
  { command: transfer('DEPOSIT', 'd1', 1n, 'BTC', 100n), result: applied(), recorded: true, balance: [1n, 'BTC', 100n, 'ACTIVE'] },
  // Insufficient funds: recorded, and a repeat after more funds arrive still answers the rejection.
  {
    command: transfer('WITHDRAW', 'w1', 1n, 'BTC', 150n),
    result: rejected('INSUFFICIENT_BALANCE'),
    recorded: true,
    balance: [1n, 'BTC', 100n],
  },
  { command: transfer('DEPOSIT', 'd2', 1n, 'BTC', 100n), result: applied(), recorded: true, balance: [1n, 'BTC', 200n] },
  {
    command: transfer('WITHDRAW', 'w1', 1n, 'BTC', 150n),
    result: rejected('INSUFFICIENT_BALANCE', true),
    recorded: false,
    balance: [1n, 'BTC', 200n],
  },
  {
    command: transfer('WITHDRAW', 'w0', 1n, 'BTC', 10n),
    result: rejected('SOURCE_ACCOUNT_NOT_FOUND', true),
    recorded: false,
    balance: [1n, 'BTC', 200n],
  },
  // Applied once; a repeat is a duplicate; the same key with other parameters is a conflict.
  { command: transfer('WITHDRAW', 'w2', 1n, 'BTC', 50n), result: applied(), recorded: true, balance: [1n, 'BTC', 150n] },
  { command: transfer('WITHDRAW', 'w2', 1n, 'BTC', 50n), result: applied(true), recorded: false, balance: [1n, 'BTC', 150n] },
  {
    command: transfer('WITHDRAW', 'w2', 1n, 'BTC', 60n),
    result: { kind: 'conflict', detail: '' },
    recorded: false,
    balance: [1n, 'BTC', 150n],
  },
  {
    command: transfer('WITHDRAW', 'w2', 2n, 'BTC', 50n),
    result: { kind: 'conflict', detail: '' },
    recorded: false,
    balance: [1n, 'BTC', 150n],
  },
  { command: transfer('DEPOSIT', 'd1', 1n, 'BTC', 100n), result: applied(true), recorded: false, balance: [1n, 'BTC', 150n] },
  // A refund needs an applied withdrawal with the same parameters, and credits exactly once.
  {
    command: transfer('REFUND', 'w9', 1n, 'BTC', 50n),
    result: rejected('REFUND_WITHOUT_WITHDRAW'),
    recorded: true,
    balance: [1n, 'BTC', 150n],
  },
  {
    command: transfer('REFUND', 'w1', 1n, 'BTC', 150n),
    result: rejected('REFUND_WITHOUT_WITHDRAW'),
    recorded: true,
    balance: [1n, 'BTC', 150n],
  },
  { command: transfer('WITHDRAW', 'w3', 1n, 'BTC', 30n), result: applied(), recorded: true, balance: [1n, 'BTC', 120n] },
  {
    command: transfer('REFUND', 'w3', 1n, 'BTC', 31n),
    result: rejected('REFUND_WITHOUT_WITHDRAW'),
    recorded: true,
    balance: [1n, 'BTC', 120n],
  },
  { command: transfer('REFUND', 'w2', 1n, 'BTC', 50n), result: applied(), recorded: true, balance: [1n, 'BTC', 170n] },
  { command: transfer('REFUND', 'w2', 1n, 'BTC', 50n), result: applied(true), recorded: false, balance: [1n, 'BTC', 170n] },
  // Operations are keyed per op: DEPOSIT:w2 is not WITHDRAW:w2.
  { command: transfer('DEPOSIT', 'w2', 1n, 'BTC', 5n), result: applied(), recorded: true, balance: [1n, 'BTC', 175n] },
];

const STATUS_ROWS: readonly Row[] = [
  { command: setStatus(1n, 'BTC', 'FROZEN'), result: { kind: 'status_set' }, recorded: true, balance: [1n, 'BTC', 175n, 'FROZEN'] },
  { command: transfer('WITHDRAW', 'w4', 1n, 'BTC', 10n), result: rejected('ACCOUNT_FROZEN'), recorded: true, balance: [1n, 'BTC', 175n] },
  {
    command: external('EXTERNAL_WITHDRAW', 'e1', 1n, 'BTC', 10n),
    result: rejected('ACCOUNT_FROZEN'),
    recorded: true,
    balance: [1n, 'BTC', 175n],
  },
  // Status restricts outflow only: credits still land.
  { command: transfer('DEPOSIT', 'd3', 1n, 'BTC', 10n), result: applied(), recorded: true, balance: [1n, 'BTC', 185n, 'FROZEN'] },
  { command: external('EXTERNAL_DEPOSIT', 'e2', 1n, 'BTC', 15n), result: applied(), recorded: true, balance: [1n, 'BTC', 200n] },
  { command: setStatus(1n, 'BTC', 'DISABLED'), result: { kind: 'status_set' }, recorded: true, balance: [1n, 'BTC', 200n, 'DISABLED'] },
  { command: transfer('WITHDRAW', 'w5', 1n, 'BTC', 10n), result: rejected('ACCOUNT_DISABLED'), recorded: true, balance: [1n, 'BTC', 200n] },
  { command: setStatus(1n, 'BTC', 'ACTIVE'), result: { kind: 'status_set' }, recorded: true, balance: [1n, 'BTC', 200n, 'ACTIVE'] },
  // The recorded rejection answers every repeat, even now the account is active again.
  {
    command: transfer('WITHDRAW', 'w4', 1n, 'BTC', 10n),
    result: rejected('ACCOUNT_FROZEN', true),
    recorded: false,
    balance: [1n, 'BTC', 200n],
  },
  { command: transfer('WITHDRAW', 'w6', 1n, 'BTC', 10n), result: applied(), recorded: true, balance: [1n, 'BTC', 190n] },
  // set_status creates a missing account with a zero balance.
  { command: setStatus(2n, 'ETH', 'FROZEN'), result: { kind: 'status_set' }, recorded: true, balance: [2n, 'ETH', 0n, 'FROZEN'] },
];

const EXTERNAL_ROWS: readonly Row[] = [
  { command: external('EXTERNAL_WITHDRAW', 'x1', 3n, 'USDT', 1n), result: rejected('SOURCE_ACCOUNT_NOT_FOUND'), recorded: true },
  { command: external('EXTERNAL_DEPOSIT', 'x2', 3n, 'USDT', 40n), result: applied(), recorded: true, balance: [3n, 'USDT', 40n, 'ACTIVE'] },
  {
    command: external('EXTERNAL_WITHDRAW', 'x3', 3n, 'USDT', 41n),
    result: rejected('INSUFFICIENT_BALANCE'),
    recorded: true,
    balance: [3n, 'USDT', 40n],
  },
  { command: external('EXTERNAL_WITHDRAW', 'x4', 3n, 'USDT', 40n), result: applied(), recorded: true, balance: [3n, 'USDT', 0n] },
  { command: external('EXTERNAL_WITHDRAW', 'x4', 3n, 'USDT', 40n), result: applied(true), recorded: false, balance: [3n, 'USDT', 0n] },
  {
    command: external('EXTERNAL_DEPOSIT', 'x2', 3n, 'USDT', 41n),
    result: { kind: 'conflict', detail: '' },
    recorded: false,
    balance: [3n, 'USDT', 0n],
  },
];

// Five maximal deposits fit under BALANCE_UNITS_MAX; the remainder decides the edge.
const HEADROOM_UNITS = BALANCE_UNITS_MAX - 5n * AMOUNT_UNITS_MAX;
const OVERFLOW_ROWS: readonly Row[] = [
  ...[1, 2, 3, 4, 5].map(
    (i): Row => ({ command: transfer('DEPOSIT', `big${i}`, 5n, 'BTC', AMOUNT_UNITS_MAX), result: applied(), recorded: true }),
  ),
  // A deposit that would overflow is refused and recorded: a late repeat must never apply.
  {
    command: transfer('DEPOSIT', 'edge', 5n, 'BTC', HEADROOM_UNITS + 1n),
    result: rejected('OVERFLOW'),
    recorded: true,
    balance: [5n, 'BTC', 5n * AMOUNT_UNITS_MAX],
  },
  { command: external('EXTERNAL_DEPOSIT', 'edge', 5n, 'BTC', HEADROOM_UNITS + 1n), result: rejected('OVERFLOW'), recorded: true },
  { command: transfer('DEPOSIT', 'edge', 5n, 'BTC', HEADROOM_UNITS + 1n), result: rejected('OVERFLOW', true), recorded: false },
  {
    command: transfer('DEPOSIT', 'edge2', 5n, 'BTC', HEADROOM_UNITS),
    result: applied(),
    recorded: true,
    balance: [5n, 'BTC', BALANCE_UNITS_MAX],
  },
  {
    command: transfer('WITHDRAW', 'out', 5n, 'BTC', 10n),
    result: applied(),
    recorded: true,
    balance: [5n, 'BTC', BALANCE_UNITS_MAX - 10n],
  },
  { command: transfer('REFUND', 'out', 5n, 'BTC', 10n), result: applied(), recorded: true, balance: [5n, 'BTC', BALANCE_UNITS_MAX] },
];

const QUERY_ROWS: readonly Row[] = [
  { command: query('WITHDRAW', 'w2'), result: applied(true), recorded: false },
  { command: query('WITHDRAW', 'w1'), result: rejected('INSUFFICIENT_BALANCE', true), recorded: false },
  { command: query('REFUND', 'w9'), result: rejected('REFUND_WITHOUT_WITHDRAW', true), recorded: false },
  { command: query('EXTERNAL_DEPOSIT', 'x2'), result: applied(true), recorded: false },
  { command: query('DEPOSIT', 'never'), result: { kind: 'not_found' }, recorded: false },
  { command: query('DEPOSIT', 'edge'), result: rejected('OVERFLOW', true), recorded: false },
  { command: query('DEPOSIT', 'edge2'), result: applied(true), recorded: false },
];

function checkRows(harness: Harness, rows: readonly Row[], label: string): void {
  rows.forEach((row, index) => {
    const where = `${label} row ${index}`;
    const { result, recorded } = harness.run(row.command);
    if (row.result.kind === 'conflict') assert.is(result.kind, 'conflict', where);
    else assert.equal(result, row.result, where);
    assert.is(recorded, row.recorded, `${where}: recorded`);
    if (row.balance !== undefined) {
      const [userId, asset, available, status] = row.balance;
      const balance = harness.ledger.balanceOf(userId, asset);
      assert.is(balance?.available, available, `${where}: balance`);
      if (status !== undefined) assert.is(balance?.status, status, `${where}: status`);
    }
  });
}

/** The auditor: rebuilds every balance from the records alone, by a different route. */
function auditBalances(records: readonly WalRecord[]): Map<string, bigint> {
  const totals = new Map<string, bigint>();
  for (const record of records) {
    if (record.kind !== 'op' || record.outcome.kind !== 'applied') continue;
    const account = `${record.userId}:${record.asset}`;
    const sign = isDebitOp(record.op) ? -1n : 1n;
    totals.set(account, (totals.get(account) ?? 0n) + sign * record.amount);
  }
  return totals;
}

function allRows(): [readonly Row[], string][] {
  return [
    [INPUT_ROWS, 'input'],
    [TRANSFER_ROWS, 'transfer'],
    [STATUS_ROWS, 'status'],
    [EXTERNAL_ROWS, 'external'],
    [OVERFLOW_ROWS, 'overflow'],
    [QUERY_ROWS, 'query'],
  ];
}

test('every row answers as expected, and the auditor agrees with every balance', () => {
  const harness = new Harness();
  for (const [rows, label] of allRows()) checkRows(harness, rows, label);
  for (const [account, total] of auditBalances(harness.records)) {
    const [userId, asset] = account.split(':') as [string, string];
    assert.is(harness.ledger.balanceOf(BigInt(userId), asset)?.available, total, `audit ${account}`);
  }
});

test('balances lists one user sorted by asset, and nothing for an unknown user', () => {
  const harness = new Harness();
  harness.run(transfer('DEPOSIT', 'a', 8n, 'USDT', 3n));
  harness.run(transfer('DEPOSIT', 'b', 8n, 'BTC', 2n));
  harness.run(setStatus(8n, 'ETH', 'FROZEN'));
  harness.run(transfer('DEPOSIT', 'c', 9n, 'AAA', 1n));
  assert.equal(harness.run({ kind: 'balances', userId: 8n }).result, {
    kind: 'balances',
    balances: [
      { asset: 'BTC', available: 2n, status: 'ACTIVE' },
      { asset: 'ETH', available: 0n, status: 'FROZEN' },
      { asset: 'USDT', available: 3n, status: 'ACTIVE' },
    ],
  });
  assert.equal(harness.run({ kind: 'balances', userId: 10n }).result, { kind: 'balances', balances: [] });
});

test('replaying the records through the codec rebuilds exactly the same ledger', () => {
  const live = new Harness();
  for (const [rows, label] of allRows()) checkRows(live, rows, label);
  const replayed = new SpotLedger();
  for (const record of live.records) {
    const decoded = decode(encode(record), record.seq);
    assert.ok(decoded.ok);
    if (decoded.ok) replayed.applyRecord(decoded.record);
  }
  assert.is(replayed.lastSeq, live.ledger.lastSeq);
  assert.is(replayed.accountCount, live.ledger.accountCount);
  for (const userId of [1n, 2n, 3n, 5n, 8n]) {
    const command: UbsCommand = { kind: 'balances', userId };
    assert.equal(replayed.decide(command, () => undefined).result, live.ledger.decide(command, () => undefined).result);
  }
});

test('applyRecord refuses a record that breaks the rules or the sequence', () => {
  const harness = new Harness();
  harness.run(transfer('DEPOSIT', 'a', 1n, 'BTC', 10n));
  const overdraft: WalRecord = {
    kind: 'op',
    seq: 2,
    op: 'WITHDRAW',
    key: 'b',
    userId: 1n,
    asset: 'BTC',
    amount: 11n,
    outcome: { kind: 'applied' },
  };
  assert.throws(() => harness.ledger.applyRecord(overdraft), /cannot pay/);
  assert.throws(() => harness.ledger.applyRecord({ ...overdraft, seq: 3, amount: 1n }), /does not follow/);
  assert.is(harness.ledger.balanceOf(1n, 'BTC')?.available, 10n);
  assert.is(harness.ledger.lastSeq, 1);
});

test.run();
