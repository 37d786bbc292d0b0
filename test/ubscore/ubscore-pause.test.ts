// Proves UBSCore's backup pause on a real LMDB directory: while it holds, no command is decided (one sent then is answered only after resume, in order), the copy taken meanwhile holds exactly the records up to the paused position, and a pause nobody lifts lifts by itself.
// test-runner: no-postgres

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { UbsClient, startUbsCore } from '../../actors/ubscore/client.js';
import type { UbsCoreHandle } from '../../actors/ubscore/client.js';
import type { UbsCommand } from '../../src/domain/spot-commands.js';
import { openWal } from '../../wal/log.js';

const TIMEOUT_MS = 10_000;
let root = '';
const running = new Set<UbsCoreHandle>();

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'ubscore-pause-'));
});

test.after(async () => {
  for (const core of running) await core.worker.terminate();
  await rm(root, { recursive: true, force: true });
});

async function start(name: string): Promise<{ core: UbsCoreHandle; client: UbsClient }> {
  const core = await startUbsCore({ walDir: join(root, name), batchMax: 64 });
  running.add(core);
  return { core, client: new UbsClient(core.connect()) };
}

async function stop(core: UbsCoreHandle, client: UbsClient): Promise<void> {
  client.close();
  await core.control.close();
  await core.worker.terminate();
  running.delete(core);
}

const deposit = (ref: string): UbsCommand => ({ kind: 'external_op', op: 'EXTERNAL_DEPOSIT', ref, userId: 7n, asset: 'USDT', amount: 5n });

test('while paused nothing is decided; the copy ends exactly at the paused position; resume answers the held commands', async () => {
  const { core, client } = await start('held');
  assert.equal(await client.send(deposit('before'), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  const paused = await core.control.pause(TIMEOUT_MS);
  assert.equal(paused, { kind: 'paused', walSeq: 1 });
  let answered = false;
  const held = client.send(deposit('during'), TIMEOUT_MS).then((r) => {
    answered = true;
    return r;
  });
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.is(answered, false, 'a command sent during the pause is not decided');
  const copied = await core.control.copyTo(join(root, 'copy'));
  assert.equal(copied.kind === 'copied' ? [copied.walSeq, copied.ledgerId] : copied, [1, null]);
  assert.equal(await core.control.resume(), { kind: 'resumed', heldMessages: 1, expired: false });
  assert.equal(await held, { kind: 'applied', duplicate: false });
  await stop(core, client);
  const copy = openWal(join(root, 'copy'));
  try {
    assert.is(copy.lastSeq(), 1, 'the copy holds the records up to the pause and nothing after');
    assert.ok(copy.getProcessed('EXTERNAL_DEPOSIT:before') !== undefined, 'the command before the pause is in the copy');
    assert.is(copy.getProcessed('EXTERNAL_DEPOSIT:during'), undefined, 'the one held by the pause is not');
  } finally {
    await copy.close();
  }
});

test('a pause that is not lifted lifts by itself; a copy outside a pause is refused', async () => {
  const { core, client } = await start('expiry');
  assert.equal((await core.control.copyTo(join(root, 'refused'))).kind, 'refused');
  assert.equal(await core.control.pause(200), { kind: 'paused', walSeq: 0 });
  assert.equal(await client.send(deposit('late'), TIMEOUT_MS), { kind: 'applied', duplicate: false });
  assert.equal(await core.control.resume(), { kind: 'resumed', heldMessages: 0, expired: true });
  await stop(core, client);
});

test.run();
