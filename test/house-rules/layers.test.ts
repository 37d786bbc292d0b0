// Proves each layer below the API (coordinator, Funding adapter, Trading adapter, UBSCore) refuses bad input on its own, with the spec's code, and changes nothing.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import type { NewTransfer } from '../../src/domain/transfer.js';
import { AMOUNT_UNITS_MAX } from '../../src/domain/money.js';
import type { UbsCommand } from '../../src/domain/spot-commands.js';
import { startLayers, type Layers } from '../support/layers.js';
import { transferOf } from '../support/ledger.js';

let L: Layers;
const USER = 301n;
const COIN = 10n ** 8n;

test.before(async () => {
  L = await startLayers();
  await L.sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (${USER}, 'USDT', ${100n * COIN})`;
  const seeded = await L.ubs.send(
    { kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref: 'layers-seed', userId: USER, asset: 'USDT', amount: 100n * COIN },
    5_000,
  );
  assert.equal(seeded, { kind: 'applied', duplicate: false });
});

test.after(async () => {
  await L.stop();
});

async function unchanged(): Promise<void> {
  const funding = await L.sql<{ available: bigint }[]>`SELECT available FROM funding_balances WHERE user_id = ${USER}`;
  assert.is(funding[0]?.available, 100n * COIN);
  const spot = await L.ubs.send({ kind: 'balances', userId: USER }, 5_000);
  assert.equal(spot, { kind: 'balances', balances: [{ asset: 'USDT', available: 100n * COIN, status: 'ACTIVE' }] });
  const ops = await L.sql`SELECT count(*)::int AS n FROM funding_operation_records WHERE outcome = 'APPLIED'`;
  assert.is(ops[0]?.n, 0);
}

const good: NewTransfer = { reqId: ulid(), userId: USER, from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: COIN, clientOrderId: null };

test('coordinator: refuses every malformed transfer with its code and records nothing', async () => {
  const rows: Array<[Partial<Record<keyof NewTransfer, unknown>>, string]> = [
    [{ reqId: 'not-a-ulid' }, 'INVALID_REQUEST'],
    [{ userId: 0n }, 'INVALID_USER'],
    [{ userId: -5n }, 'INVALID_USER'],
    [{ userId: 5 }, 'INVALID_USER'],
    [{ from: 'FUTURE' }, 'INVALID_ACCOUNT_TYPE'],
    [{ to: 'funding' }, 'INVALID_ACCOUNT_TYPE'],
    [{ to: 'FUNDING' }, 'SAME_ACCOUNT'],
    [{ asset: 'usdt' }, 'INVALID_ASSET'],
    [{ asset: 'NOPE' }, 'INVALID_ASSET'],
    [{ amount: 0n }, 'INVALID_AMOUNT'],
    [{ amount: -1n }, 'INVALID_AMOUNT'],
    [{ amount: 5 }, 'INVALID_AMOUNT'],
    [{ amount: AMOUNT_UNITS_MAX + 1n }, 'OVERFLOW'],
    [{ amount: 1_000_001n * COIN }, 'AMOUNT_TOO_LARGE'],
    [{ clientOrderId: 'has space' }, 'INVALID_REQUEST'],
    // Spec 001 §1.5.8 order: the format of a later field, then account types, then the asset.
    [{ to: 'FUNDING', from: 'FUNDING', clientOrderId: 'has space' }, 'INVALID_REQUEST'],
    [{ to: 'FUNDING', asset: 'usdt' }, 'SAME_ACCOUNT'],
    [{ from: 'FUTURE', asset: 'usdt' }, 'INVALID_ACCOUNT_TYPE'],
  ];
  for (const [change, code] of rows) {
    const outcome = await L.shard.submit({ ...good, ...change } as NewTransfer);
    assert.equal(
      outcome,
      { kind: 'refused', code },
      JSON.stringify(change, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)),
    );
  }
  const created = await L.sql`SELECT count(*)::int AS n FROM transfers_tb`;
  assert.is(created[0]?.n, 0);
  await unchanged();
});

test('coordinator: a suspended or non-transferable asset is refused before any transfer exists', async () => {
  for (const [change, code] of [
    ["status = 'SUSPENDED'", 'ASSET_SUSPENDED'],
    ['internal_transfer_enabled = false', 'TRANSFER_NOT_ALLOWED'],
  ] as const) {
    await L.sql.unsafe(`UPDATE assets SET ${change} WHERE symbol = 'USDT'`);
    L.assets.invalidate();
    try {
      assert.equal(await L.shard.submit({ ...good, reqId: ulid() }), { kind: 'refused', code });
    } finally {
      await L.sql`UPDATE assets SET status = 'ACTIVE', internal_transfer_enabled = true WHERE symbol = 'USDT'`;
      L.assets.invalidate();
    }
  }
  const created = await L.sql`SELECT count(*)::int AS n FROM transfers_tb`;
  assert.is(created[0]?.n, 0);
  await unchanged();
});

const badOps: Array<[Record<string, unknown>, string]> = [
  [{ reqId: 'x' }, 'INVALID_REQUEST'],
  [{ userId: 0n }, 'INVALID_USER'],
  [{ asset: 'usdt' }, 'INVALID_ASSET'],
  [{ amount: 0n }, 'INVALID_AMOUNT'],
  [{ amount: -3n }, 'INVALID_AMOUNT'],
  [{ amount: 3 }, 'INVALID_AMOUNT'],
  [{ amount: AMOUNT_UNITS_MAX + 1n }, 'OVERFLOW'],
];

test('Funding adapter: refuses malformed operations without touching PostgreSQL', async () => {
  for (const [change, code] of badOps) {
    const req = { reqId: ulid(), userId: USER, asset: 'USDT', amount: COIN, ...change } as Parameters<typeof L.funding.withdraw>[0];
    for (const op of ['withdraw', 'deposit'] as const) assert.equal(await L.funding[op](req), { kind: 'FAILED', code }, `${op} ${code}`);
  }
  const recorded = await L.sql`SELECT count(*)::int AS n FROM funding_operations`;
  assert.is(recorded[0]?.n, 0);
  await unchanged();
});

test('Trading adapter: refuses malformed operations without sending them to UBSCore', async () => {
  for (const [change, code] of badOps) {
    const req = { reqId: ulid(), userId: USER, asset: 'USDT', amount: COIN, ...change } as Parameters<typeof L.trading.withdraw>[0];
    for (const op of ['withdraw', 'deposit'] as const) assert.equal(await L.trading[op](req), { kind: 'FAILED', code }, `${op} ${code}`);
  }
  await unchanged();
});

test('UBSCore: refuses malformed commands sent straight to it, records nothing', async () => {
  const base = { kind: 'transfer_op', op: 'WITHDRAW', reqId: ulid(), userId: USER, asset: 'USDT', amount: COIN };
  const rows: Array<[Record<string, unknown>, string]> = [
    [{ reqId: 'bad id' }, 'INVALID_REQUEST'],
    [{ userId: 0n }, 'INVALID_USER'],
    [{ userId: 2n ** 63n }, 'INVALID_USER'],
    [{ asset: '' }, 'INVALID_ASSET'],
    [{ amount: 0n }, 'INVALID_AMOUNT'],
    [{ amount: 7 }, 'INVALID_AMOUNT'],
    [{ amount: AMOUNT_UNITS_MAX + 1n }, 'OVERFLOW'],
    [{ op: 'STEAL' }, 'INVALID_REQUEST'],
    [{ kind: 'nonsense' }, 'INVALID_REQUEST'],
  ];
  for (const [change, code] of rows) {
    const result = await L.ubs.send({ ...base, ...change } as unknown as UbsCommand, 5_000);
    assert.equal(result, { kind: 'invalid', code }, code);
  }
  await unchanged();
});

test('refunds without a withdraw are never applied and never answered FAILED, at either adapter', async () => {
  const req = await transferOf(L, { reqId: ulid(), userId: USER, asset: 'USDT', amount: COIN });
  for (const adapter of [L.funding, L.trading]) {
    const outcome = await adapter.refund(req);
    assert.is(outcome.kind, 'PENDING', `${adapter.account} refund`);
  }
  await unchanged();
});

test('business rejections at the adapters are definitive: FAILED with the code, recorded, repeatable', async () => {
  const req = await transferOf(L, { reqId: ulid(), userId: USER, asset: 'USDT', amount: 1_000n * COIN });
  for (const adapter of [L.funding, L.trading]) {
    assert.equal(await adapter.withdraw(req), { kind: 'FAILED', code: 'INSUFFICIENT_BALANCE' });
    assert.equal(await adapter.withdraw(req), { kind: 'FAILED', code: 'INSUFFICIENT_BALANCE' });
    assert.equal(await adapter.query(req.reqId, 'WITHDRAW'), { kind: 'FAILED', code: 'INSUFFICIENT_BALANCE' });
  }
  const missing = await transferOf(L, { ...req, reqId: ulid(), userId: 999n, amount: COIN });
  assert.equal(await L.funding.withdraw(missing), { kind: 'FAILED', code: 'SOURCE_ACCOUNT_NOT_FOUND' });
  const incoming = await transferOf(L, { ...missing, reqId: ulid() }, 'SPOT');
  assert.equal(await L.funding.deposit(incoming), { kind: 'FAILED', code: 'TARGET_ACCOUNT_NOT_FOUND' });
  assert.equal(await L.trading.withdraw({ ...missing, reqId: ulid() }), { kind: 'FAILED', code: 'SOURCE_ACCOUNT_NOT_FOUND' });
  // The same (req_id, op) with other parameters than its transfer's, or a req_id that names no
  // transfer, is never applied and never answered definitively.
  assert.is((await L.funding.withdraw({ ...missing, amount: 2n })).kind, 'PENDING');
  assert.is((await L.funding.withdraw({ ...missing, reqId: ulid() })).kind, 'PENDING');
  await unchanged();
});

test.run();
