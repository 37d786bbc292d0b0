// Proves UBSCore's side of the retention on a real LMDB: a pass deletes exactly the
// entries at or below the horizon that are not kept, and a repeat of a pruned key is applied
// again (why the layers above must never send one); passes go in bounded steps with commands
// answered between them; a close or a kill mid-pass leaves a valid set the next pass finishes;
// the filter rebuilt after a pass answers every live key; and one pass runs at a time.
// test-runner: no-postgres

import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import { UbsMetrics } from '../../src/ubscore/metrics.js';
import { startFilterBuild } from '../../actors/ubscore/filter-build.js';
import { ProcessedSet } from '../../src/ubscore/processed/processed.js';
import { ProcessedPruner } from '../../src/ubscore/processed/pruner.js';
import type { CoreState } from '../../src/ubscore/state.js';
import { PRUNE_STEP_ENTRIES } from '../../src/limits.js';
import { opKeyOf } from '../../src/domain/spot-records.js';
import type { OpRecord } from '../../src/domain/spot-records.js';
import type { UbsCommand, UbsResult } from '../../src/domain/spot-commands.js';
import { encodeBatch } from '../../wal/block.js';
import { openWal } from '../../wal/log.js';

const TIMEOUT_MS = 20_000;
const BATCH_MAX = 512;
/** Three full steps and a few entries more: a pass of four steps. */
const MANY = 3 * PRUNE_STEP_ENTRIES + 5;

let root = '';
let dirs = 0;
const running = new Set<UbsCoreHandle>();

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ubscore-prune-'));
});

test.after(async () => {
  for (const core of running) await core.worker.terminate();
  await rm(root, { recursive: true, force: true });
});

function newDir(): string {
  return join(root, `wal-${++dirs}`);
}

async function start(walDir: string, follow = false): Promise<UbsCoreHandle> {
  const core = await startUbsCore({ walDir, batchMax: BATCH_MAX, follow });
  running.add(core);
  return core;
}

async function stop(core: UbsCoreHandle): Promise<void> {
  await core.control.close();
  await core.worker.terminate();
  running.delete(core);
}

const deposit = (reqId: string, amount = 1n): UbsCommand => ({
  kind: 'transfer_op',
  op: 'DEPOSIT',
  reqId,
  userId: 1n,
  asset: 'BTC',
  amount,
});
const external = (ref: string): UbsCommand => ({ kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref, userId: 2n, asset: 'USDT', amount: 5n });

async function send(client: UbsClient, command: UbsCommand): Promise<UbsResult | null> {
  return client.send(command, TIMEOUT_MS);
}

/** Deposits `count` fresh keys `${prefix}-i`, all in flight at once; each must be applied. */
async function fill(client: UbsClient, prefix: string, count: number): Promise<void> {
  const results = await Promise.all(Array.from({ length: count }, (_, i) => send(client, deposit(`${prefix}-${i}`))));
  for (const result of results) assert.equal(result, { kind: 'applied', duplicate: false });
}

async function metric(core: UbsCoreHandle, name: string): Promise<number | undefined> {
  const answer = await core.control.metrics();
  if (answer.kind !== 'metrics') throw new Error(answer.message);
  return answer.families.find((family) => family.name === name)?.values[0]?.value;
}

async function walSeq(core: UbsCoreHandle): Promise<number> {
  return (await core.control.stats()).walSeq;
}

async function balance(client: UbsClient): Promise<bigint | undefined> {
  const result = await send(client, { kind: 'balances', userId: 1n });
  if (result?.kind !== 'balances') throw new Error(`balances: ${JSON.stringify(result?.kind)}`);
  return result.balances.find((b) => b.asset === 'BTC')?.available;
}

test('a pass deletes the entries at or below the horizon not kept; kept and newer ones still answer as duplicates', async () => {
  const core = await start(newDir());
  const client = new UbsClient(core.connect());
  await fill(client, 'old', 10);
  assert.equal(await send(client, deposit('kept')), { kind: 'applied', duplicate: false });
  const refused = { kind: 'transfer_op', op: 'WITHDRAW', reqId: 'refused', userId: 3n, asset: 'BTC', amount: 1n } as const;
  assert.equal(await send(client, refused), { kind: 'rejected', code: 'SOURCE_ACCOUNT_NOT_FOUND', duplicate: false });
  assert.equal(await send(client, external('mv-kept')), { kind: 'applied', duplicate: false });
  assert.equal(await send(client, external('mv-gone')), { kind: 'applied', duplicate: false });
  const horizon = await walSeq(core);
  const keptSeq = await send(client, { kind: 'op_seqs', keys: [{ op: 'DEPOSIT', key: 'kept' }] });
  await fill(client, 'new', 5);

  const outcome = await core.control.prune({ throughSeq: horizon, keep: ['kept', 'mv-kept', 'unknown-key'] });
  assert.ok(outcome.kind === 'pruned', JSON.stringify(outcome));
  // 14 entries at or below the horizon read, through the seq index; the 5 newer ones never are.
  assert.equal(
    { ...outcome, ms: 0 },
    {
      kind: 'pruned',
      scanned: 14,
      pruned: 12,
      liveEntries: 7,
      oldestLiveSeq: keptSeq?.kind === 'op_seqs' ? keptSeq.seqs[0] : -1,
      ms: 0,
    },
  );
  assert.equal(await send(client, { kind: 'query_op', op: 'DEPOSIT', key: 'old-0' }), { kind: 'not_found' });
  assert.equal(await send(client, { kind: 'query_op', op: 'WITHDRAW', key: 'refused' }), { kind: 'not_found' });
  assert.equal(await send(client, { kind: 'query_op', op: 'EXTERNAL_DEPOSIT', key: 'mv-gone' }), { kind: 'not_found' });
  // Kept, and newer than the horizon: their repeats are answered with the first outcome.
  assert.equal(await send(client, deposit('kept')), { kind: 'applied', duplicate: true });
  assert.equal(await send(client, external('mv-kept')), { kind: 'applied', duplicate: true });
  for (let i = 0; i < 5; i++) assert.equal(await send(client, deposit(`new-${i}`)), { kind: 'applied', duplicate: true });
  assert.is((await send(client, deposit('new-0', 2n)))?.kind, 'conflict');
  assert.is(await metric(core, 'transfer_ubscore_processed_entries'), 7);
  assert.is(await metric(core, 'transfer_ubscore_processed_pruned_total'), 12);
  assert.is(await metric(core, 'transfer_ubscore_processed_oldest_seq'), outcome.oldestLiveSeq ?? -1);
  client.close();
  await stop(core);
});

test('a repeat of a pruned key is applied again: UBSCore no longer knows it (the layers above must refuse repeats)', async () => {
  const core = await start(newDir());
  const client = new UbsClient(core.connect());
  await fill(client, 'once', 3);
  assert.is(await balance(client), 3n);
  assert.is((await core.control.prune({ throughSeq: await walSeq(core), keep: [] })).kind, 'pruned');
  assert.equal(await send(client, deposit('once-0')), { kind: 'applied', duplicate: false });
  assert.is(await balance(client), 4n, 'the pruned deposit was credited a second time');
  client.close();
  await stop(core);
});

test('a pass over N entries takes ceil(N / PRUNE_STEP_ENTRIES) steps, and commands are answered between them', async () => {
  const core = await start(newDir());
  const client = new UbsClient(core.connect());
  await fill(client, 'bulk', MANY);
  const horizon = await walSeq(core);
  let passDone = false;
  const pass = core.control.prune({ throughSeq: horizon, keep: [] }).then((outcome) => {
    passDone = true;
    return outcome;
  });
  assert.equal(await send(client, deposit('between')), { kind: 'applied', duplicate: false });
  assert.not.ok(passDone, 'a command waited for the whole pass');
  const outcome = await pass;
  assert.ok(outcome.kind === 'pruned' && outcome.pruned === MANY && outcome.liveEntries === 1, JSON.stringify(outcome));
  assert.is(await metric(core, 'transfer_ubscore_processed_prune_steps_total'), Math.ceil(MANY / PRUNE_STEP_ENTRIES));
  client.close();
  await stop(core);
});

test('a second pass while one runs is refused, as is a malformed plan', async () => {
  const core = await start(newDir());
  const client = new UbsClient(core.connect());
  await fill(client, 'bulk', MANY);
  const horizon = await walSeq(core);
  const first = core.control.prune({ throughSeq: horizon, keep: [] });
  assert.equal(await core.control.prune({ throughSeq: horizon, keep: [] }), { kind: 'refused', reason: 'a pass is under way' });
  assert.is((await first).kind, 'pruned');
  const malformed = [{ throughSeq: -1, keep: [] }, { throughSeq: 1.5, keep: [] }, { throughSeq: 1, keep: [7] }, { throughSeq: 1 }];
  for (const plan of malformed) assert.is((await core.control.prune(plan as never)).kind, 'refused', JSON.stringify(plan));
  client.close();
  await stop(core);
});

test('a close mid-pass leaves a valid set: the first step is durable, and the next pass finishes', async () => {
  const dir = newDir();
  const first = await start(dir);
  let client = new UbsClient(first.connect());
  await fill(client, 'c', MANY);
  const horizon = await walSeq(first);
  client.close();
  // The pass's first step starts as it is asked for; the close, the next control message, ends it.
  const pass = first.control.prune({ throughSeq: horizon, keep: [] });
  const closed = first.control.close();
  const ended = await Promise.race([pass, sleep(TIMEOUT_MS, undefined, { ref: false }).then(() => ({ kind: 'no answer' }) as const)]);
  await closed;
  await stop(first);
  assert.ok(ended.kind === 'refused' && ended.reason === 'UBSCore is closing', JSON.stringify(ended));

  const second = await start(dir);
  assert.is(await metric(second, 'transfer_ubscore_processed_entries'), MANY - PRUNE_STEP_ENTRIES);
  client = new UbsClient(second.connect());
  await checkResumedPass(second, client, horizon);
  client.close();
  await stop(second);
});

/** After an interrupted pass: every entry is either gone or answers as a duplicate; the next pass deletes the rest. */
async function checkResumedPass(core: UbsCoreHandle, client: UbsClient, horizon: number): Promise<void> {
  const answers = await Promise.all(
    Array.from({ length: MANY }, (_, i) => send(client, { kind: 'query_op', op: 'DEPOSIT', key: `c-${i}` })),
  );
  assert.is(answers.filter((a) => a?.kind === 'not_found').length, PRUNE_STEP_ENTRIES);
  assert.is(answers.filter((a) => a?.kind === 'applied' && a.duplicate).length, MANY - PRUNE_STEP_ENTRIES);
  const outcome = await core.control.prune({ throughSeq: horizon, keep: [] });
  assert.ok(
    outcome.kind === 'pruned' && outcome.pruned === MANY - PRUNE_STEP_ENTRIES && outcome.liveEntries === 0,
    JSON.stringify(outcome),
  );
  assert.is(outcome.oldestLiveSeq, null);
}

test('killed at the crash point ubscore_prune_after_step, the set is valid and the next pass finishes', async () => {
  const dir = newDir();
  const script = `
    const { UbsClient, startUbsCore } = await import(${JSON.stringify(new URL('../../actors/ubscore/client.js', import.meta.url).href)});
    const core = await startUbsCore({ walDir: process.env.PRUNE_WAL_DIR, batchMax: ${BATCH_MAX}, crashPoint: 'ubscore_prune_after_step' });
    const client = new UbsClient(core.connect());
    await Promise.all(Array.from({ length: ${MANY} }, (_, i) =>
      client.send({ kind: 'transfer_op', op: 'DEPOSIT', reqId: 'c-' + i, userId: 1n, asset: 'BTC', amount: 1n }, 20000)));
    await core.control.prune({ throughSeq: (await core.control.stats()).walSeq, keep: [] });
    process.exit(0);
  `;
  // A file, not --eval: UBSCore's worker threads inherit execArgv, and --input-type refuses their file entries.
  const file = join(root, `crash-${dirs}.mjs`);
  await writeFile(file, script);
  const child = spawn(process.execPath, [file], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { PATH: process.env.PATH ?? '', PRUNE_WAL_DIR: dir },
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (c, s) => resolve([c, s])),
  );
  assert.equal([code, signal], [null, 'SIGKILL'], stderr);
  assert.match(stderr, /ubscore_prune_after_step/);

  const core = await start(dir);
  const client = new UbsClient(core.connect());
  assert.is(await metric(core, 'transfer_ubscore_processed_entries'), MANY - PRUNE_STEP_ENTRIES);
  await checkResumedPass(core, client, MANY);
  client.close();
  await stop(core);
});

test("a standby's core (follow mode) prunes its own LMDB too", async () => {
  const dir = newDir();
  const owner = await start(dir);
  const client = new UbsClient(owner.connect());
  await fill(client, 's', 20);
  const horizon = await walSeq(owner);
  client.close();
  await stop(owner);
  const standby = await start(dir, true);
  const outcome = await standby.control.prune({ throughSeq: horizon - 5, keep: ['s-0'] });
  assert.ok(outcome.kind === 'pruned' && outcome.pruned === 14 && outcome.liveEntries === 6, JSON.stringify(outcome));
  await stop(standby);
});

function op(seq: number, key: string): OpRecord {
  return { kind: 'op', seq, op: 'DEPOSIT', key, userId: 1n, asset: 'BTC', amount: 1n, outcome: { kind: 'applied' } };
}

async function untilRebuilt(set: ProcessedSet, capacityBelow: number): Promise<void> {
  const deadline = Date.now() + TIMEOUT_MS;
  while (!set.stats().filterReady || set.stats().filterCapacityKeys >= capacityBelow) {
    if (Date.now() > deadline) throw new Error(`the filter was never rebuilt: ${JSON.stringify(set.stats())}`);
    await sleep(5);
  }
}

test('the filter rebuilt after a pass holds every live key, pending ones included, and no pruned one', async () => {
  const dir = newDir();
  const log = openWal(dir);
  const records = Array.from({ length: 4_000 }, (_, i) => op(i + 1, `f-${i}`));
  const batch = encodeBatch(records);
  if (batch === null) throw new Error('no records');
  await log.appendBatch(batch);
  const set = new ProcessedSet(log, dir, startFilterBuild, 16);
  await untilRebuilt(set, Number.MAX_SAFE_INTEGER);
  const before = set.stats().filterCapacityKeys;
  const keep = (opKey: string): boolean => opKey.endsWith('7');
  let from: number | null = 0;
  do {
    from = (await log.pruneProcessed(from, 1_000, 4_000, keep)).next;
  } while (from !== null);
  // Decided while the new filter is built, and not yet durable: only the build's delta has it.
  const pending = op(4_001, 'pending');
  set.add(opKeyOf('DEPOSIT', 'pending'), pending);
  set.rebuildFilter();
  await untilRebuilt(set, before);
  const live = records.filter((r) => keep(opKeyOf(r.op, r.key)));
  for (const record of [...live, pending]) assert.equal(set.lookup(opKeyOf(record.op, record.key)), record, record.key);
  const reads = set.stats().lmdbReads;
  for (const record of records.filter((r) => !keep(opKeyOf(r.op, r.key)))) assert.is(set.lookup(opKeyOf(record.op, record.key)), undefined);
  assert.ok(set.stats().lmdbReads - reads < 200, `pruned keys read LMDB ${set.stats().lmdbReads - reads} times in 3,600`);
  assert.is(log.processedCount(), live.length);
  await set.close();
  await log.close();
});

test('a step keeps an entry decided again and not yet durable (the overlay), even at or below the horizon', async () => {
  const dir = newDir();
  const log = openWal(dir);
  const records = [op(1, 'again'), op(2, 'gone')];
  const batch = encodeBatch(records);
  if (batch === null) throw new Error('no records');
  await log.appendBatch(batch);
  const set = new ProcessedSet(log, dir, startFilterBuild, 16);
  // A standby's followed block may write a key again (the owner pruned and applied it anew).
  set.add(opKeyOf('DEPOSIT', 'again'), op(3, 'again'));
  const state = { log, processed: set } as unknown as CoreState;
  const pruner = new ProcessedPruner({
    state: () => state,
    wake: () => undefined,
    crash: () => undefined,
    metrics: new UbsMetrics(),
  });
  const outcome = pruner.start({ throughSeq: 2, keep: [] });
  for (let write = pruner.nextWrite(); write !== null; write = pruner.nextWrite()) await write();
  assert.equal({ ...(await outcome), ms: 0 }, { kind: 'pruned', scanned: 2, pruned: 1, liveEntries: 1, oldestLiveSeq: 1, ms: 0 });
  assert.equal(log.getProcessed(opKeyOf('DEPOSIT', 'again')), records[0]);
  await set.close();
  await log.close();
});

test.run();
