// Exact funds as a client sees them, in smallest units: for the conservation checks that end
// every scenario.

import * as assert from 'uvu/assert';
import type { ChildService, Harness } from './process.js';
import type { TestService } from './service.js';

export type Funds = { readonly funding: bigint; readonly spot: bigint };

/** Units of a decimal string with `precision` decimals ("0.00000000" is 0n). */
export function units(text: string, precision = 8): bigint {
  const [whole, fraction = ''] = text.split('.');
  assert.ok(/^[0-9]+$/.test(whole ?? '') && /^[0-9]*$/.test(fraction), `not a decimal: ${text}`);
  return BigInt(whole as string) * 10n ** BigInt(precision) + BigInt(fraction.padEnd(precision, '0') || '0');
}

export async function fundsOf(svc: TestService, userId: bigint | number, asset: string): Promise<Funds> {
  const r = await svc.call('GET', '/api/v1/balances', { token: svc.userToken(userId) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const pick = (list: unknown): bigint => {
    const found = (list as { asset: string; available: string }[]).find((b) => b.asset === asset);
    return found === undefined ? 0n : units(found.available);
  };
  return { funding: pick(r.body.funding), spot: pick(r.body.spot) };
}

export async function totalOf(svc: TestService, userId: bigint | number, asset: string): Promise<bigint> {
  const f = await fundsOf(svc, userId, asset);
  return f.funding + f.spot;
}

export async function deposit(
  svc: TestService,
  userId: bigint | number,
  account: 'FUNDING' | 'SPOT',
  asset: string,
  amount: string,
  ref: string,
): Promise<void> {
  const r = await svc.call('POST', '/admin/v1/deposit', {
    token: svc.adminToken(),
    body: { user_id: String(userId), account, asset, amount, ref },
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
}

export function transfer(svc: TestService, userId: bigint | number, body: Record<string, unknown>, token?: string) {
  return svc.call('POST', '/api/v1/internal_transfer', { token: token ?? svc.userToken(userId), body });
}

/**
 * Where a transfer answer ends, as a client following the contract learns it: a final answer as
 * it came, a 202 PENDING polled by req_id until final. Under a loaded machine an adapter call may
 * outlive its timeout and the transfer finish on a retry, after the answer.
 */
export async function finalOf(
  svc: TestService,
  userId: bigint | number,
  reply: { body: Record<string, unknown> },
  withinMs = 60_000,
): Promise<{ state: string; code: string | null }> {
  if (reply.body.state !== 'PENDING') return { state: String(reply.body.state), code: (reply.body.code as string | undefined) ?? null };
  const deadline = Date.now() + withinMs;
  for (;;) {
    const r = await svc.call('GET', `/api/v1/internal_transfer/${String(reply.body.req_id)}`, { token: svc.userToken(userId) });
    assert.is(r.status, 200, JSON.stringify(r.body));
    if (r.body.state !== 'PENDING') return { state: String(r.body.state), code: (r.body.error_code as string | null) ?? null };
    assert.ok(Date.now() < deadline, `${String(reply.body.req_id)} still ${String(r.body.internal_state)} after ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A child service's user 10 USDT on FUNDING by an operator's deposit (`ref`), then 4 of them moved to SPOT, COMMITTED. */
export async function fundAndMove(h: Harness, svc: ChildService, userId: number, ref: string): Promise<void> {
  const r = await svc.call('POST', '/admin/v1/deposit', {
    token: h.adminToken(),
    body: { user_id: String(userId), account: 'FUNDING', asset: 'USDT', amount: '10', ref },
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const t = await svc.call('POST', '/api/v1/internal_transfer', {
    token: h.userToken(userId),
    body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '4' },
  });
  assert.is(t.body.state, 'COMMITTED', JSON.stringify(t.body));
}
