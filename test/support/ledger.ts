// Exact funds for tests that drive the layers directly: seeding, totals across both stores,
// and waiting for a transfer to settle.

import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import type { WriteItem } from '../../src/db/transfer-writes.js';
import type { NewTransfer, TransferView } from '../../src/domain/transfer.js';
import type { AccountKind } from '../../src/domain/types.js';
import type { Layers } from './layers.js';

export async function seed(L: Layers, userId: bigint, asset: string, funding: bigint, spot: bigint): Promise<void> {
  if (funding > 0n) {
    await L.sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (${userId}, ${asset}, ${funding})
                ON CONFLICT (user_id, asset) DO UPDATE SET available = funding_balances.available + EXCLUDED.available`;
  }
  if (spot > 0n) {
    const r = await L.ubs.send({ kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref: `seed-${ulid()}`, userId, asset, amount: spot }, 5_000);
    assert.equal(r, { kind: 'applied', duplicate: false });
  }
}

export async function balances(L: Layers, userId: bigint, asset: string): Promise<{ funding: bigint; spot: bigint }> {
  const rows = await L.sql<{ available: bigint }[]>`SELECT available FROM funding_balances WHERE user_id = ${userId} AND asset = ${asset}`;
  const spot = await L.ubs.send({ kind: 'balances', userId }, 5_000);
  assert.ok(spot !== null && spot.kind === 'balances');
  const line = spot.kind === 'balances' ? spot.balances.find((b) => b.asset === asset) : undefined;
  return { funding: rows[0]?.available ?? 0n, spot: line?.available ?? 0n };
}

/** FUNDING + SPOT + in flight (debited at the source, not yet credited or refunded). */
export async function total(L: Layers, userId: bigint, asset: string): Promise<bigint> {
  const b = await balances(L, userId, asset);
  const flight = await L.sql<{ s: bigint | null }[]>`
    SELECT sum(amount)::bigint AS s FROM transfers_tb WHERE user_id = ${userId} AND asset = ${asset} AND state IN (20, 30, -20)`;
  return b.funding + b.spot + (flight[0]?.s ?? 0n);
}

export function newTransfer(userId: bigint, from: AccountKind, asset: string, amount: bigint): NewTransfer {
  return { reqId: ulid(), userId, from, to: from === 'FUNDING' ? 'SPOT' : 'FUNDING', asset, amount, clientOrderId: null };
}

/** Polls until the transfer is in `state` (or terminal when omitted), within `timeoutMs`. */
export async function settle(L: Layers, reqId: string, state?: string, timeoutMs = 5_000): Promise<TransferView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await L.store.get(reqId);
    assert.ok(v !== null, `transfer ${reqId} missing`);
    if (v !== null && (state === undefined ? ['COMMITTED', 'FAILED', 'ROLLED_BACK'].includes(v.state) : v.state === state)) return v;
    if (Date.now() > deadline) assert.unreachable(`transfer ${reqId} still ${v?.state} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export async function path(L: Layers, reqId: string): Promise<string[]> {
  return (await L.store.history(reqId)).map((h) => h.to);
}

const COIN = 10n ** 8n;
let lastUserId = 10_000n;

/** A user id no other test in this file has used. */
export function newUserId(): bigint {
  lastUserId += 1n;
  return lastUserId;
}

/** A new user with USDT on both sides (10 each unless told). */
export async function fundedUser(L: Layers, funding = 10n * COIN, spot = 10n * COIN): Promise<bigint> {
  const user = newUserId();
  await seed(L, user, 'USDT', funding, spot);
  return user;
}

/** FUNDING → SPOT: created, debited and moved to TARGET_PENDING in one write, as the driver's start does. */
export function createAndDebit(t: NewTransfer): Extract<WriteItem, { kind: 'create' }> {
  return {
    kind: 'create',
    transfer: t,
    op: 'WITHDRAW',
    paths: {
      ok: [
        { event: 'SOURCE_OK', to: 'SOURCE_DONE' },
        { event: 'TARGET_CALL', to: 'TARGET_PENDING' },
      ],
      ko: [{ event: 'SOURCE_FAIL', to: 'FAILED' }],
    },
    code: null,
    checkFundingTarget: false,
    dueNow: false,
  };
}

/**
 * The transfer a Funding operation asked on its own belongs to: created in INIT (not due, so the
 * recovery scan leaves it to the test) with the request's user, asset and amount. The adapter
 * records an operation by its transfer and answers CONFLICT for a req_id that names none.
 */
export async function transferOf(
  L: Layers,
  req: { reqId: string; userId: bigint; asset: string; amount: bigint },
  from: AccountKind = 'FUNDING',
): Promise<typeof req> {
  const t: NewTransfer = { ...req, from, to: from === 'FUNDING' ? 'SPOT' : 'FUNDING', clientOrderId: null };
  assert.ok((await L.store.insert(t)) !== null, `transfer ${req.reqId} created`);
  return req;
}
