// Proves the UBSCore thread on a real LMDB directory: commands through UbsClient apply exactly
// once, a restart rebuilds balances and the processed set, concurrent clients are all answered
// with exact totals, and every acknowledged command survives a SIGKILL of its process.
// test-runner: no-postgres

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import type { SpotBalance, UbsCommand, UbsResult } from '../../src/domain/spot-commands.js';

const TIMEOUT_MS = 10_000;
const BATCH_MAX = 64;
/** Acknowledgements the child gives before the SIGKILL: it comes with thousands still in flight. */
const ACKS_BEFORE_KILL = 500;

let root = '';
let dirs = 0;
const running = new Set<UbsCoreHandle>();

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ubscore-actor-'));
});

test.after(async () => {
  for (const core of running) await core.worker.terminate();
  await rm(root, { recursive: true, force: true });
});

function newDir(): string {
  dirs++;
  return join(root, `wal-${dirs}`);
}

async function start(walDir: string, batchMax = BATCH_MAX): Promise<UbsCoreHandle> {
  const core = await startUbsCore({ walDir, batchMax });
  running.add(core);
  return core;
}

/** Graceful stop: every accepted command durable, LMDB closed, thread gone. */
async function stop(core: UbsCoreHandle): Promise<void> {
  assert.equal(await core.control.close(), { closed: true });
  await core.worker.terminate();
  running.delete(core);
}

const deposit = (reqId: string, userId: bigint, amount: bigint, asset = 'BTC'): UbsCommand => ({
  kind: 'transfer_op',
  op: 'DEPOSIT',
  reqId,
  userId,
  asset,
  amount,
});
const withdraw = (reqId: string, userId: bigint, amount: bigint, asset = 'BTC'): UbsCommand => ({
  kind: 'transfer_op',
  op: 'WITHDRAW',
  reqId,
  userId,
  asset,
  amount,
});

async function balancesOf(client: UbsClient, userId: bigint): Promise<readonly SpotBalance[]> {
  const result = await client.send({ kind: 'balances', userId }, TIMEOUT_MS);
  if (result === null || result.kind !== 'balances') throw new Error(`balances: ${JSON.stringify(result?.kind)}`);
  return result.balances;
}

async function available(client: UbsClient, userId: bigint, asset = 'BTC'): Promise<bigint | undefined> {
  return (await balancesOf(client, userId)).find((balance) => balance.asset === asset)?.available;
}

test('deposit and withdraw through UbsClient', async () => {
  const core = await start(newDir());
  const client = new UbsClient(core.connect());
  assert.equal(await client.send(deposit('d1', 1n, 100n), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  assert.equal(await client.send(withdraw('w1', 1n, 30n), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  assert.equal(await client.send(withdraw('w2', 1n, 71n), TIMEOUT_MS), {
    kind: 'rejected',
    code: 'INSUFFICIENT_BALANCE',
    duplicate: false,
  });
  assert.equal(await balancesOf(client, 1n), [{ asset: 'BTC', available: 70n, status: 'ACTIVE' }]);
  assert.equal(await client.send({ kind: 'query_op', op: 'WITHDRAW', key: 'w2' }, TIMEOUT_MS), {
    kind: 'rejected',
    code: 'INSUFFICIENT_BALANCE',
    duplicate: true,
  });
  assert.equal(await client.send(deposit('bad', 0n, 1n), TIMEOUT_MS), { kind: 'invalid', code: 'INVALID_USER' });
  client.close();
  await stop(core);
});

test('the same (reqId, op) twice in one turn and again later applies exactly once', async () => {
  const core = await start(newDir());
  const client = new UbsClient(core.connect());
  const [first, second] = await Promise.all([
    client.send(deposit('same', 2n, 500n), TIMEOUT_MS),
    client.send(deposit('same', 2n, 500n), TIMEOUT_MS),
  ]);
  assert.equal(first, { kind: 'applied', duplicate: false });
  assert.equal(second, { kind: 'applied', duplicate: true });
  assert.equal(await client.send(deposit('same', 2n, 500n), TIMEOUT_MS), { kind: 'applied', duplicate: true });
  assert.is((await client.send(deposit('same', 2n, 501n), TIMEOUT_MS))?.kind, 'conflict');
  assert.is(await available(client, 2n), 500n);
  client.close();
  await stop(core);
});

test('a restart rebuilds balances and the processed set', async () => {
  const dir = newDir();
  const first = await start(dir);
  const client = new UbsClient(first.connect());
  await client.send(deposit('r1', 3n, 1_000n), TIMEOUT_MS);
  await client.send(withdraw('r2', 3n, 400n), TIMEOUT_MS);
  await client.send(withdraw('r3', 3n, 900n), TIMEOUT_MS);
  await client.send({ kind: 'set_status', userId: 3n, asset: 'ETH', status: 'FROZEN' }, TIMEOUT_MS);
  client.close();
  await stop(first);

  const second = await start(dir);
  assert.is(second.ready.replayedRecords, 4);
  const again = new UbsClient(second.connect());
  assert.equal(await balancesOf(again, 3n), [
    { asset: 'BTC', available: 600n, status: 'ACTIVE' },
    { asset: 'ETH', available: 0n, status: 'FROZEN' },
  ]);
  assert.equal(await again.send(deposit('r1', 3n, 1_000n), TIMEOUT_MS), { kind: 'applied', duplicate: true });
  assert.equal(await again.send(withdraw('r3', 3n, 900n), TIMEOUT_MS), { kind: 'rejected', code: 'INSUFFICIENT_BALANCE', duplicate: true });
  assert.equal(await again.send({ kind: 'transfer_op', op: 'REFUND', reqId: 'r2', userId: 3n, asset: 'BTC', amount: 400n }, TIMEOUT_MS), {
    kind: 'applied',
    duplicate: false,
  });
  assert.is(await available(again, 3n), 1_000n);
  const counters = await second.control.stats();
  assert.equal(counters, { accounts: 2, walSeq: 5, batches: 1, commands: 5 });
  again.close();
  await stop(second);
});

/** Sends `count` commands for a few users from one client, all in flight at once. */
function load(client: UbsClient, prefix: string, count: number): Promise<{ command: UbsCommand; result: UbsResult | null }[]> {
  const sends: Promise<{ command: UbsCommand; result: UbsResult | null }>[] = [];
  for (let i = 0; i < count; i++) {
    const userId = BigInt(10 + (i % 5));
    const command = i % 3 === 2 ? withdraw(`${prefix}-${i}`, userId, 7n) : deposit(`${prefix}-${i}`, userId, 5n);
    sends.push(client.send(command, TIMEOUT_MS).then((result) => ({ command, result })));
  }
  return Promise.all(sends);
}

test('two clients on two ports, 2,000 commands in flight: all answered, totals exact', async () => {
  const core = await start(newDir());
  const clients = [new UbsClient(core.connect(), { batchMax: 100 }), new UbsClient(core.connect(), { batchMax: 100 })];
  const outcomes = (await Promise.all(clients.map((client, i) => load(client, `c${i}`, 1_000)))).flat();
  const expected = new Map<bigint, bigint>();
  for (const { command, result } of outcomes) {
    assert.ok(result !== null, 'every command is answered');
    if (command.kind !== 'transfer_op' || result?.kind !== 'applied') {
      // Only a withdrawal may be refused: before the user's first deposit, or short of funds.
      assert.ok(command.kind === 'transfer_op' && command.op === 'WITHDRAW', 'a deposit was refused');
      assert.ok(
        result?.kind === 'rejected' && ['SOURCE_ACCOUNT_NOT_FOUND', 'INSUFFICIENT_BALANCE'].includes(result.code),
        JSON.stringify(result),
      );
      continue;
    }
    const sign = command.op === 'WITHDRAW' ? -1n : 1n;
    expected.set(command.userId, (expected.get(command.userId) ?? 0n) + sign * command.amount);
  }
  for (const [userId, total] of expected) assert.is(await available(clients[0] as UbsClient, userId), total, `user ${userId}`);
  const stats = await core.control.stats();
  assert.is(stats.commands, 2_000 + expected.size);
  assert.ok(stats.batches >= 2_000 / BATCH_MAX, `batches bounded by batchMax: ${stats.batches}`);
  for (const client of clients) client.close();
  await stop(core);
});

test('every acknowledged command survives a SIGKILL of its process right after its reply', async () => {
  // In a process of its own, killed as a power cut would: terminating a worker thread while
  // lmdb-js commits on a thread of the pool is not a crash a deployment has (and can crash the
  // whole test process natively), a SIGKILL is.
  const dir = newDir();
  const child = spawn(process.execPath, [fileURLToPath(new URL('../support/ubscore-child.js', import.meta.url)), dir, '4000', '20'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const acknowledged: string[] = [];
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const lines = createInterface({ input: child.stdout });
  try {
    for await (const line of lines) {
      if (line === 'ready' || line === 'done') continue;
      assert.match(line, /^t\d+$/, `an acknowledgement: ${line}`);
      acknowledged.push(line);
      if (acknowledged.length === ACKS_BEFORE_KILL) child.kill('SIGKILL');
    }
  } finally {
    // A failed assertion above must not leave the child running (it waits to be killed).
    child.kill('SIGKILL');
  }
  assert.is(await exited, 'SIGKILL', `the child was killed, not ended: ${stderr}`);
  assert.ok(acknowledged.length >= ACKS_BEFORE_KILL, `${acknowledged.length} acknowledged before the kill`);

  const reopened = await start(dir);
  const again = new UbsClient(reopened.connect());
  const answers = await Promise.all(acknowledged.map((key) => again.send({ kind: 'query_op', op: 'DEPOSIT', key }, TIMEOUT_MS)));
  for (const answer of answers) assert.equal(answer, { kind: 'applied', duplicate: true });
  const balance = (await available(again, 20n)) ?? 0n;
  assert.ok(balance >= BigInt(acknowledged.length), `balance ${balance} covers ${acknowledged.length} acknowledged`);
  assert.is(balance, BigInt(reopened.ready.replayedRecords));
  again.close();
  await stop(reopened);
});

test('no answer in time resolves null (unknown), and a closed client resolves null', async () => {
  const channel = new MessageChannel();
  const client = new UbsClient(channel.port1);
  const started = Date.now();
  assert.is(await client.send(deposit('lost', 1n, 1n), 50), null);
  assert.ok(Date.now() - started >= 45);
  const pending = client.send(deposit('lost2', 1n, 1n), TIMEOUT_MS);
  client.close();
  assert.is(await pending, null);
  assert.is(await client.send(deposit('lost3', 1n, 1n), TIMEOUT_MS), null);
  channel.port2.close();
});

test('a core that cannot start rejects with the reason', async () => {
  const cases: [string, number, RegExp][] = [
    [newDir(), 0, /batchMax/],
    // A path under a regular file can never become an LMDB directory.
    [join(await writeBlocker(), 'wal'), BATCH_MAX, /start failed/],
  ];
  for (const [walDir, batchMax, reason] of cases) {
    try {
      await start(walDir, batchMax);
      assert.unreachable(`started on ${walDir} with batchMax ${batchMax}`);
    } catch (error) {
      assert.match(String(error), reason);
    }
  }
});

test('sends beyond inFlightMax resolve null at once instead of queueing', async () => {
  const channel = new MessageChannel();
  const client = new UbsClient(channel.port1, { inFlightMax: 2 });
  const first = client.send(deposit('f1', 1n, 1n), TIMEOUT_MS);
  const second = client.send(deposit('f2', 1n, 1n), TIMEOUT_MS);
  assert.is(await client.send(deposit('f3', 1n, 1n), TIMEOUT_MS), null);
  client.close();
  assert.equal(await Promise.all([first, second]), [null, null]);
  channel.port2.close();
});

async function writeBlocker(): Promise<string> {
  const file = join(root, `blocker-${++dirs}`);
  await writeFile(file, 'not a directory');
  return file;
}

test.run();
