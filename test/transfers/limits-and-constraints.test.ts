// Proves the daily limits count only what moved and hold on every path (a FAILED transfer gives
// its place back, two requests at once cannot both take the last place, a transfer recorded by
// the full-mailbox path is held to them when the shard drives it), and that a PostgreSQL
// constraint refusing a Funding operation's row ends the transfer as an explicit failure
// (spec 001 §4.1: FAILED at the source, compensated at the target) instead of a retry for ever.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import type { NewTransfer } from '../../src/domain/transfer.js';
import { createLogger } from '../../src/log.js';
import { parkForScan } from '../../src/services/admission.js';
import { balances, fundedUser, newTransfer, path, settle } from '../support/ledger.js';
import { startLayers, type Layers } from '../support/layers.js';

const COIN = 10n ** 8n;
const PER_DAY = 2;
const quiet = createLogger({ level: 'error', name: 'test', write: () => undefined });

let L: Layers;

test.before(async () => {
  L = await startLayers({ dailyTransferLimit: PER_DAY, happyPathDeadlineMs: 5_000 });
});

test.after(async () => {
  await L.stop();
});

async function submit(t: NewTransfer) {
  const reply = await L.shard.submit(t);
  return reply.kind === 'transfer' ? reply.view.state : reply.kind === 'refused' ? reply.code : 'DUPLICATE_REQUEST';
}

test('daily limit: FAILED transfers give their place back; only transfers that moved funds count', async () => {
  const user = await fundedUser(L, 3n * COIN, 0n);
  // Three refused for the balance: none counts (with them counted, the next would be refused).
  for (let i = 0; i < 3; i++) assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', 50n * COIN)), 'FAILED');
  assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', COIN)), 'COMMITTED');
  assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', COIN)), 'COMMITTED');
  assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', COIN)), 'DAILY_LIMIT_EXCEEDED');
  assert.equal(await balances(L, user, 'USDT'), { funding: COIN, spot: 2n * COIN });
});

test('daily limit: requests at once cannot both take the last place', async () => {
  const user = await fundedUser(L, 10n * COIN, 0n);
  assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', COIN)), 'COMMITTED');
  const both = await Promise.all(Array.from({ length: 4 }, () => submit(newTransfer(user, 'FUNDING', 'USDT', COIN))));
  assert.equal(both.sort(), ['COMMITTED', 'DAILY_LIMIT_EXCEEDED', 'DAILY_LIMIT_EXCEEDED', 'DAILY_LIMIT_EXCEEDED']);
  const rows = await L.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = ${user} AND state <> -10`;
  assert.is(rows[0]?.n, PER_DAY);
});

test('daily limit: a transfer recorded by the full-mailbox path is held to the limit when the shard drives it', async () => {
  const user = await fundedUser(L, 10n * COIN, 0n);
  // One taken by the shard, one recorded while its mailbox was full: both within the limit.
  assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', COIN)), 'COMMITTED');
  const second = newTransfer(user, 'FUNDING', 'USDT', COIN);
  assert.is((await parkForScan(second, L.store, quiet, { current: null })).kind, 'transfer');
  // A third recorded the same way is over the limit: refused when driven, nothing moved.
  const third = newTransfer(user, 'FUNDING', 'USDT', COIN);
  assert.is((await parkForScan(third, L.store, quiet, { current: null })).kind, 'transfer');
  await L.shard.driveNow(second.reqId);
  await L.shard.driveNow(third.reqId);
  assert.is((await settle(L, second.reqId)).state, 'COMMITTED');
  const refused = await settle(L, third.reqId);
  assert.equal([refused.state, refused.errorCode], ['FAILED', 'DAILY_LIMIT_EXCEEDED']);
  // And the shard's own next request sees both counted.
  assert.is(await submit(newTransfer(user, 'FUNDING', 'USDT', COIN)), 'DAILY_LIMIT_EXCEEDED');
  assert.equal(await balances(L, user, 'USDT'), { funding: 8n * COIN, spot: 2n * COIN });
});

/** A CHECK on this user's FUNDING row that the service knows nothing of, as a DBA might add. */
async function constrain(user: bigint, check: string): Promise<string> {
  const name = `test_cap_${user}`;
  await L.sql.unsafe(`ALTER TABLE funding_balances ADD CONSTRAINT ${name} CHECK (user_id <> ${user} OR (${check})) NOT VALID`);
  return name;
}

test('FND: a constraint refusing the FUNDING debit ends the transfer FAILED with CONSTRAINT_VIOLATION, nothing moved', async () => {
  const user = await fundedUser(L, 10n * COIN, 0n);
  const name = await constrain(user, `available >= ${5n * COIN}`);
  try {
    const t = newTransfer(user, 'FUNDING', 'USDT', 6n * COIN);
    const reply = await L.shard.submit(t);
    assert.is(reply.kind, 'transfer', reply.kind === 'refused' ? reply.code : '');
    const done = await settle(L, t.reqId);
    assert.equal([done.state, done.errorCode], ['FAILED', 'CONSTRAINT_VIOLATION']);
    assert.equal(await balances(L, user, 'USDT'), { funding: 10n * COIN, spot: 0n });
  } finally {
    await L.sql.unsafe(`ALTER TABLE funding_balances DROP CONSTRAINT ${name}`);
  }
});

test('FND: a constraint refusing the FUNDING credit compensates: SPOT refunded, ROLLED_BACK, funds exact', async () => {
  const user = await fundedUser(L, 10n * COIN, 10n * COIN);
  const name = await constrain(user, `available <= ${12n * COIN}`);
  try {
    const t = { ...newTransfer(user, 'SPOT', 'USDT', 5n * COIN), reqId: ulid() };
    await L.shard.submit(t);
    const done = await settle(L, t.reqId);
    assert.equal([done.state, done.errorCode], ['ROLLED_BACK', 'CONSTRAINT_VIOLATION']);
    assert.equal(await path(L, t.reqId), ['INIT', 'SOURCE_PENDING', 'SOURCE_DONE', 'COMPENSATING', 'ROLLED_BACK']);
    assert.equal(await balances(L, user, 'USDT'), { funding: 10n * COIN, spot: 10n * COIN });
  } finally {
    await L.sql.unsafe(`ALTER TABLE funding_balances DROP CONSTRAINT ${name}`);
  }
});

test.run();
