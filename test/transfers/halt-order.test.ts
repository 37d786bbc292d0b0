// Proves the halt's state is ordered and never lost by a shard: every stored halt and resume carries the next version, a shard's read that straddles a halt never lifts it (nor a late read undoes a resume), a shard that cannot read the stored halt holds its INIT transfers until it can, an INIT transfer's retry timer firing while halted leaves it INIT, a shard that missed the control message reads the stored halt before its recovery pass and its retry timers, and a shard that misses the control message is named in the answer and told again until it holds the halt.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HaltFlag } from '../../src/coordinator/halt-flag.js';
import { type HaltMiss, readHalt, type VersionedHalt, writeHalt } from '../../src/db/halt-state.js';
import type { Sql } from '../../src/db/sql.js';
import { newReqId } from '../../src/http/req-ids.js';
import { createLogger } from '../../src/log.js';
import { HaltSwitch } from '../../src/services/halt.js';
import { startLayers, type Layers } from '../support/layers.js';

const HALTED = { reason: 'test', since: new Date(0).toISOString() };
const quiet = createLogger({ level: 'error', name: 'test', write: () => undefined });

async function until(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `layers.sql`, whose answers are handed back only once `release` is called: a read that has run but not yet ended. */
function heldBack(sql: Sql): { readonly sql: Sql; readonly read: Promise<void>; readonly release: () => void } {
  let release = (): void => undefined;
  let ran = (): void => undefined;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  const read = new Promise<void>((r) => {
    ran = r;
  });
  const slow = async (strings: TemplateStringsArray, ...values: unknown[]) => {
    const rows = await (sql as unknown as (s: TemplateStringsArray, ...v: unknown[]) => Promise<unknown>)(strings, ...values);
    ran();
    await gate;
    return rows;
  };
  return { sql: slow as unknown as Sql, read, release };
}

async function parkedInit(layers: Layers, userId: bigint): Promise<string> {
  await layers.sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (${userId.toString()}, 'USDT', 1000)`;
  const t = { reqId: newReqId(), userId, from: 'FUNDING' as const, to: 'SPOT' as const, asset: 'USDT', amount: 10n, clientOrderId: null };
  assert.is((await layers.store.create(t)).kind, 'created');
  return t.reqId;
}

test('every halt and resume is stored with the next version; a resume is a row, not a deletion; a row without a version reads as version 0', async () => {
  const layers = await startLayers();
  try {
    assert.equal(await readHalt(layers.sql), { state: null, version: 0 }, 'nothing stored');
    assert.is(await writeHalt(layers.sql, HALTED), 1);
    assert.equal(await readHalt(layers.sql), { state: HALTED, version: 1 });
    assert.is(await writeHalt(layers.sql, null), 2);
    assert.equal(await readHalt(layers.sql), { state: null, version: 2 }, 'the resume is stored with its version');
    assert.is(await writeHalt(layers.sql, HALTED), 3);
    await layers.sql`UPDATE service_state SET value = ${JSON.stringify(HALTED)}::text::jsonb WHERE key = 'halt'`;
    assert.equal(await readHalt(layers.sql), { state: HALTED, version: 0 }, 'a halt stored before versions');
  } finally {
    await layers.stop();
  }
});

test('a refresh whose read began before the halt and ended after the control message keeps the halt: the INIT transfer is held', async () => {
  const layers = await startLayers();
  try {
    const reqId = await parkedInit(layers, 961n);
    await layers.halt.refresh(layers.sql);
    const straddling = heldBack(layers.sql);
    // The read runs before the halt is stored, and its answer arrives after the message set it.
    const refreshing = layers.halt.refresh(straddling.sql);
    await straddling.read;
    const version = await writeHalt(layers.sql, HALTED);
    await layers.halt.set({ state: HALTED, version }, 0);
    straddling.release();
    assert.equal(await refreshing, HALTED, 'the older read did not lift the halt');
    assert.equal(layers.halt.current, HALTED);
    const stepped = await layers.driver.step(reqId);
    assert.is(stepped.kind, 'held', 'no move out of INIT after the straddling refresh');
    // And the other way: a read of the halt that ends after the resume's message does not halt again.
    const late = heldBack(layers.sql);
    const rereading = layers.halt.refresh(late.sql);
    await late.read;
    const resumed = await writeHalt(layers.sql, null);
    await layers.halt.set({ state: null, version: resumed }, 0);
    late.release();
    assert.is(await rereading, null, 'the older read did not halt again');
    assert.is((await layers.driver.step(reqId)).kind, 'moved', 'the transfer leaves INIT after the resume');
  } finally {
    await layers.stop();
  }
});

test('refreshes that arrive while a read runs share the next read, which starts after it: 1,000 retry timers firing together cost 2 reads, each answered by a read begun after its call', async () => {
  const flag = new HaltFlag();
  let stored: VersionedHalt = { state: null, version: 1 };
  const reads: { readonly at: VersionedHalt; release: () => void }[] = [];
  const sql = (async () => {
    const at = stored;
    await new Promise<void>((release) => reads.push({ at, release }));
    return [{ value: at.state === null ? { halted: false, version: at.version } : { halted: true, ...at.state, version: at.version } }];
  }) as unknown as Sql;
  const first = flag.refresh(sql);
  await until('the first read', () => reads.length === 1);
  // The halt is stored while the first read runs: every caller from now on must see it.
  stored = { state: HALTED, version: 2 };
  const later = Array.from({ length: 1_000 }, () => flag.refresh(sql));
  reads[0]?.release();
  assert.is(await first, null, 'the first read was taken before the halt');
  await until('the shared second read', () => reads.length === 2);
  reads[1]?.release();
  for (const answer of await Promise.all(later)) assert.equal(answer, HALTED, 'every later caller got a read begun after its call');
  assert.is(reads.length, 2, 'one read for all the callers that came while the first ran');
  const alone = flag.refresh(sql);
  await until('a read of its own', () => reads.length === 3);
  reads[2]?.release();
  assert.equal(await alone, HALTED);
});

test('a shard that cannot read the stored halt holds its INIT transfers once its view is older than the bound, and drives them once a read succeeds', async () => {
  let now = 1_000_000;
  const flag = new HaltFlag({ unknownAfterMs: 1_000, now: () => now });
  assert.ok(flag.enter(), 'a flag that never read the store is not watched');
  flag.leave();
  const store = { rows: [] as { value: unknown }[], fail: false };
  const sql = (async () => {
    if (store.fail) throw new Error('connection refused');
    return store.rows;
  }) as unknown as Sql;
  assert.is(await flag.refresh(sql), null);
  store.fail = true;
  now += 1_000;
  await flag.refresh(sql).catch(() => undefined);
  assert.ok(flag.enter(), 'within the bound the last state read holds');
  flag.leave();
  now += 1;
  await flag.refresh(sql).catch(() => undefined);
  assert.is(flag.enter(), false, 'past the bound with no read: counted as halted');
  assert.ok(flag.current?.reason.includes('unknown'), 'and shown as an unknown halt');
  assert.is(await flag.through(async () => 'moved', 'held'), 'held');
  store.fail = false;
  assert.is(await flag.refresh(sql), null, 'a read that succeeds lifts the unknown');
  assert.ok(flag.enter());
  flag.leave();
});

test("an INIT transfer's retry timer that fires while halted leaves it INIT with nothing written; resume drives it", async () => {
  // The first precheck throws (a store that failed): the drive schedules a retry timer on the INIT transfer.
  let failures = 1;
  const layers = await startLayers({ retryBaseMs: 200, retryCapMs: 200 });
  try {
    const reqId = await parkedInit(layers, 962n);
    const assets = layers.assets;
    const get = assets.get.bind(assets);
    assets.get = async (symbol: string) => {
      if (failures-- > 0) throw new Error('assets read failed');
      return get(symbol);
    };
    const first = await layers.shard.driveNow(reqId);
    assert.is(first?.state, 'INIT', 'the step failed and a retry timer waits');
    const rowOf = async () =>
      (
        await layers.sql<{ state: number; updated_at: Date; n: number }[]>`
        SELECT state, updated_at, (SELECT count(*)::int FROM transfer_state_history AS h WHERE h.transfer_id = transfers_tb.transfer_id) AS n
        FROM transfers_tb WHERE req_id = ${reqId}`
      )[0];
    await layers.halt.set({ state: HALTED, version: 1 }, 0);
    const before = await rowOf();
    let fired = false;
    const step = layers.driver.step.bind(layers.driver);
    layers.driver.step = async (id, known) => {
      const result = await step(id, known);
      if (id === reqId) fired = true;
      return result;
    };
    await until('the retry timer to fire', () => fired);
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(await rowOf(), before, 'held in INIT: state, updated_at and history unchanged');
    const funding = await layers.sql<{ available: bigint }[]>`SELECT available FROM funding_balances WHERE user_id = 962`;
    assert.is(funding[0]?.available, 1000n, 'the FUNDING source was not debited');
    await layers.halt.set({ state: null, version: 2 }, 0);
    layers.shard.resumed();
    await until('the resumed transfer to commit', async () => (await rowOf())?.state === 40);
  } finally {
    await layers.stop();
  }
});

test("a shard that missed the halt's control message still holds its INIT transfers: a recovery pass and a retry timer read the stored halt first", async () => {
  let failures = 0;
  const layers = await startLayers({ retryBaseMs: 200, retryCapMs: 200 });
  try {
    const stateOf = async (reqId: string) =>
      (await layers.sql<{ state: number }[]>`SELECT state FROM transfers_tb WHERE req_id = ${reqId}`)[0]?.state;
    // The recovery pass: the halt is stored, no message reaches the shard, the pass runs.
    const parked = await parkedInit(layers, 963n);
    await writeHalt(layers.sql, HALTED);
    assert.is(layers.halt.current, null, 'no control message: the shard has not heard of the halt');
    layers.shard.resumed();
    await until('the pass to read the stored halt', () => layers.halt.current !== null);
    await new Promise((r) => setTimeout(r, 300));
    assert.is(await stateOf(parked), 0, 'the parked transfer stays INIT');
    await layers.halt.set({ state: null, version: await writeHalt(layers.sql, null) }, 0);
    layers.shard.resumed();
    await until('the parked transfer to commit after the resume', async () => (await stateOf(parked)) === 40);
    // The retry timer: an INIT transfer whose first step failed waits on its timer; the halt is stored meanwhile.
    const assets = layers.assets;
    const get = assets.get.bind(assets);
    assets.get = async (symbol: string) => {
      if (failures-- > 0) throw new Error('assets read failed');
      return get(symbol);
    };
    const retried = await parkedInit(layers, 964n);
    failures = 1;
    // Stored before the drive, so the timer cannot fire ahead of it however slow the machine is.
    await writeHalt(layers.sql, HALTED);
    assert.is(layers.halt.current, null, 'no control message this time either');
    assert.is((await layers.shard.driveNow(retried))?.state, 'INIT', 'the step failed and a retry timer waits');
    let fired = false;
    const step = layers.driver.step.bind(layers.driver);
    layers.driver.step = async (id, known) => {
      const result = await step(id, known);
      if (id === retried) fired = true;
      return result;
    };
    await until('the retry timer to fire', () => fired);
    assert.is(await stateOf(retried), 0, 'the retried transfer stays INIT');
    assert.equal(layers.halt.current, HALTED, 'the timer read the stored halt');
  } finally {
    await layers.stop();
  }
});

test('a shard that misses the halt is named in the answer and told again until it holds it; a newer change stops the retry of an older one', async () => {
  const layers = await startLayers();
  const halt = await HaltSwitch.load(layers.sql, quiet);
  try {
    const shards = [new HaltFlag(), new HaltFlag()];
    let refusals = 2;
    const told: (readonly number[] | null)[] = [];
    halt.onChange(async (change: VersionedHalt, only: readonly number[] | null): Promise<HaltMiss[]> => {
      told.push(only);
      const misses: HaltMiss[] = [];
      for (const [shard, flag] of shards.entries()) {
        if (only !== null && !only.includes(shard)) continue;
        if (shard === 1 && refusals-- > 0) misses.push({ shard, reason: 'no answer within 2000 ms' });
        else await flag.set(change, 0);
      }
      return misses;
    });
    assert.is(await halt.halt('drill'), true);
    assert.equal(halt.unheld, [{ shard: 1, reason: 'no answer within 2000 ms' }], 'the answer names the shard that does not hold it');
    assert.is(shards[0]?.current?.reason, 'drill');
    assert.is(shards[1]?.current, null);
    await until('shard 1 to be told again and hold the halt', () => shards[1]?.current?.reason === 'drill');
    assert.equal(halt.unheld, [], 'every shard holds it now');
    assert.equal(told, [null, [1], [1]], 'told again to shard 1 only, until it answered');
    // A resume that shard 1 misses, replaced by a halt before it is told again: the halt is what shard 1 ends with.
    refusals = 1;
    assert.is((await halt.resume())?.reason, 'drill');
    assert.equal(halt.unheld, [{ shard: 1, reason: 'no answer within 2000 ms' }]);
    assert.is(await halt.halt('third'), true);
    assert.equal(halt.unheld, []);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(
      shards.map((s) => s.current?.reason),
      ['third', 'third'],
      'the older resume was not told again over the newer halt',
    );
  } finally {
    halt.stop();
    await layers.stop();
  }
});

test.run();
