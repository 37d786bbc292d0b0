// Proves a standby's UBSCore (follow mode): the blocks a real UBSCore wrote to its LMDB,
// followed by a second core, leave that core's WAL and processed set byte for byte the owner's
// and its balances equal; divergent, gapped and corrupt blocks are refused as values; commands
// are refused while following; after lead() it takes commands, the followed keys included.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import type { LogBlock } from '../../src/ubscore/spot-log/store.js';
import type { SpotBalance, UbsCommand } from '../../src/domain/spot-commands.js';
import { openWalDatabases } from '../../wal/log.js';

const TIMEOUT_MS = 10_000;

let root = '';
let dirs = 0;
const running = new Set<UbsCoreHandle>();
/** The owner's directory, its blocks and its balances, made once by a real UBSCore. */
let owner: { dir: string; blocks: LogBlock[]; balances: Map<bigint, readonly SpotBalance[]> };

const deposit = (reqId: string, userId: bigint, amount: bigint): UbsCommand => ({
  kind: 'transfer_op',
  op: 'DEPOSIT',
  reqId,
  userId,
  asset: 'BTC',
  amount,
});
const withdraw = (reqId: string, userId: bigint, amount: bigint): UbsCommand => ({
  kind: 'transfer_op',
  op: 'WITHDRAW',
  reqId,
  userId,
  asset: 'BTC',
  amount,
});

function newDir(): string {
  dirs++;
  return join(root, `wal-${dirs}`);
}

async function start(walDir: string, follow: boolean): Promise<UbsCoreHandle> {
  const core = await startUbsCore({ walDir, batchMax: 16, follow });
  running.add(core);
  return core;
}

async function stop(core: UbsCoreHandle): Promise<void> {
  assert.equal(await core.control.close(), { closed: true });
  await core.worker.terminate();
  running.delete(core);
}

async function balancesOf(client: UbsClient, userId: bigint): Promise<readonly SpotBalance[]> {
  const result = await client.send({ kind: 'balances', userId }, TIMEOUT_MS);
  if (result === null || result.kind !== 'balances') throw new Error(`balances: ${JSON.stringify(result)}`);
  return result.balances;
}

/** Every entry of one LMDB database of a closed core's directory, as hex pairs. */
function entries(dir: string): { wal: LogBlock[]; processed: string[] } {
  const dbs = openWalDatabases(dir);
  try {
    const wal = [...dbs.wal.getRange({})].map(({ key, value }) => ({
      firstSeq: key - value.readUInt32BE(9) + 1,
      lastSeq: key,
      bytes: Buffer.from(value),
    }));
    const processed = [...dbs.processed.getRange({})].map(({ key, value }) => `${key.toString('hex')}=${value.toString('hex')}`);
    return { wal, processed };
  } finally {
    void dbs.env.close();
  }
}

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ubscore-follow-'));
  const dir = newDir();
  const core = await start(dir, false);
  const client = new UbsClient(core.connect());
  // Rounds awaited one by one: each is its own group commit, so the log has several blocks.
  for (let round = 0; round < 4; round++) {
    const sends = [];
    for (let user = 1n; user <= 5n; user++) sends.push(client.send(deposit(`d${round}-${user}`, user, 100n * user), TIMEOUT_MS));
    await Promise.all(sends);
    await client.send(withdraw(`w${round}`, 1n, 7n), TIMEOUT_MS);
  }
  const balances = new Map<bigint, readonly SpotBalance[]>();
  for (let user = 1n; user <= 5n; user++) balances.set(user, await balancesOf(client, user));
  client.close();
  await stop(core);
  owner = { dir, blocks: entries(dir).wal, balances };
  assert.ok(owner.blocks.length >= 4, `the owner wrote ${owner.blocks.length} blocks`);
});

test.after(async () => {
  for (const core of running) await core.worker.terminate();
  await rm(root, { recursive: true, force: true });
});

test('follow writes the owner blocks and processed entries byte for byte and gives the same balances', async () => {
  const dir = newDir();
  const core = await start(dir, true);
  const half = Math.floor(owner.blocks.length / 2);
  const first = await core.control.follow(owner.blocks.slice(0, half));
  assert.equal(first, { kind: 'applied', lastSeq: owner.blocks[half - 1]?.lastSeq, appliedBlocks: half, skippedBlocks: 0 });
  // The first half again, then the rest: the held ones are checked and skipped.
  const rest = await core.control.follow(owner.blocks);
  const last = owner.blocks[owner.blocks.length - 1]?.lastSeq;
  assert.equal(rest, { kind: 'applied', lastSeq: last, appliedBlocks: owner.blocks.length - half, skippedBlocks: half });
  assert.equal((await core.control.stats()).walSeq, last);
  assert.equal(await core.control.lead(null), { kind: 'leading', lastSeq: last });
  const client = new UbsClient(core.connect());
  for (const [user, balances] of owner.balances) assert.equal(await balancesOf(client, user), balances, `user ${user}`);
  // The followed processed set answers: the owner's keys are duplicates here.
  assert.equal(await client.send(deposit('d0-1', 1n, 100n), TIMEOUT_MS), { kind: 'applied', duplicate: true });
  client.close();
  await stop(core);
  const mine = entries(dir);
  const theirs = entries(owner.dir);
  // The follower's own last deposit was a duplicate: no record, so both logs are the same.
  assert.equal(
    mine.wal.map((b) => b.bytes.toString('hex')),
    theirs.wal.map((b) => b.bytes.toString('hex')),
  );
  assert.equal(mine.processed, theirs.processed);
});

test('commands are refused while following; lead() then takes them; follow after lead is refused', async () => {
  const core = await start(newDir(), true);
  const client = new UbsClient(core.connect());
  assert.equal(await client.send(deposit('x1', 9n, 5n), TIMEOUT_MS), { kind: 'unavailable', reason: 'standby' });
  assert.equal(await client.send({ kind: 'balances', userId: 9n }, TIMEOUT_MS), { kind: 'unavailable', reason: 'standby' });
  assert.equal(await core.control.lead(null), { kind: 'leading', lastSeq: 0 });
  assert.equal(await client.send(deposit('x1', 9n, 5n), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  const late = await core.control.follow(owner.blocks);
  assert.equal(late.kind, 'refused');
  client.close();
  await stop(core);
});

test('divergent, gapped and corrupt blocks are refused as values, and nothing of the call is applied', async () => {
  const core = await start(newDir(), true);
  const [b1, b2, b3] = owner.blocks as [LogBlock, LogBlock, LogBlock];
  const gap = await core.control.follow([b2]);
  assert.equal(gap.kind, 'gap', JSON.stringify(gap));
  // The refusal names the seqs the log is missing, for the operator who must find them.
  assert.match((gap as { reason: string }).reason, new RegExp(`seqs 1\\.\\.${b2.firstSeq - 1} are missing`));
  const flipped = (block: LogBlock): LogBlock => {
    const bytes = Buffer.from(block.bytes);
    bytes[bytes.length - 3] = (bytes[bytes.length - 3] as number) ^ 0x40;
    return { ...block, bytes };
  };
  // A good block then a corrupt one: the call is refused whole.
  const corrupt = await core.control.follow([b1, flipped(b2)]);
  assert.equal(corrupt.kind, 'corrupt', JSON.stringify(corrupt));
  assert.equal((await core.control.stats()).walSeq, 0);
  assert.equal(await core.control.follow([b1, b2]), { kind: 'applied', lastSeq: b2.lastSeq, appliedBlocks: 2, skippedBlocks: 0 });
  // A block it holds, with other bytes (its header intact): the logs diverged.
  const divergent = await core.control.follow([flipped(b2), b3]);
  assert.equal(divergent.kind, 'divergent', JSON.stringify(divergent));
  assert.equal((await core.control.stats()).walSeq, b2.lastSeq);
  await stop(core);
});

test.run();
