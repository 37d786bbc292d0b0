// Proves a shard's mailbox counts transfers, not tasks: the transfers of one turn leave in batches of at most SUBMIT_BATCH_MAX, each caller gets its own answer, at most COORDINATOR_CONCURRENCY_MAX are in the shard with COORDINATOR_MAILBOX_MAX waiting and the next is busy, and a failed batch answers every transfer.

import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TransferMailbox } from '../actors/coordinator/mailbox.js';
import type { NewTransfer, SubmitReply } from '../src/domain/transfer.js';
import { SUBMIT_BATCH_MAX } from '../src/limits.js';

function transfer(i: number): NewTransfer {
  return {
    reqId: `REQ${String(i).padStart(23, '0')}`,
    userId: 7n,
    from: 'FUNDING',
    to: 'SPOT',
    asset: 'USDT',
    amount: BigInt(i + 1),
    clientOrderId: null,
  };
}

/** Refuses each transfer with a code naming its req_id, so an answer shows whose it is. */
function answerOf(t: NewTransfer): SubmitReply {
  return { kind: 'error', message: t.reqId };
}

/** A shard whose batches finish only when the test says so. */
function heldShard() {
  const batches: { transfers: readonly NewTransfer[]; finish: () => void }[] = [];
  const send = (transfers: readonly NewTransfer[]) =>
    new Promise<readonly SubmitReply[]>((resolve) => batches.push({ transfers, finish: () => resolve(transfers.map(answerOf)) }));
  return { batches, send };
}

test('the transfers of one turn leave together in batches of at most SUBMIT_BATCH_MAX, and each caller gets its own answer', async () => {
  const sizes: number[] = [];
  const mailbox = new TransferMailbox({
    mailboxMax: 1_000,
    concurrencyMax: 1_000,
    send: async (transfers) => {
      sizes.push(transfers.length);
      return transfers.map(answerOf);
    },
  });
  const count = 2 * SUBMIT_BATCH_MAX + 5;
  const replies = await Promise.all(Array.from({ length: count }, (_, i) => mailbox.submit(transfer(i))));
  assert.equal(sizes, [SUBMIT_BATCH_MAX, SUBMIT_BATCH_MAX, 5]);
  replies.forEach((r, i) => {
    assert.equal(r, answerOf(transfer(i)));
  });
  assert.equal([mailbox.depth, mailbox.inFlight], [0, 0]);
});

test('at most concurrencyMax transfers are in the shard and mailboxMax wait; one more is busy at once, and room frees as batches finish', async () => {
  const shard = heldShard();
  const mailbox = new TransferMailbox({ mailboxMax: 5, concurrencyMax: 3, send: shard.send });
  const replies: Promise<SubmitReply>[] = Array.from({ length: 10 }, (_, i) => mailbox.submit(transfer(i)));
  assert.equal(await replies[8], { kind: 'busy' });
  assert.equal(await replies[9], { kind: 'busy' });
  await nextTurn();
  assert.equal(
    shard.batches.map((b) => b.transfers.length),
    [3],
  );
  assert.equal([mailbox.inFlight, mailbox.depth], [3, 5]);
  assert.equal(await mailbox.submit(transfer(10)), { kind: 'busy' });

  shard.batches[0]?.finish();
  for (let i = 0; i < 3; i++) assert.equal(await replies[i], answerOf(transfer(i)));
  assert.equal(
    shard.batches.map((b) => b.transfers.length),
    [3, 3],
  );
  assert.equal([mailbox.inFlight, mailbox.depth], [3, 2]);
  const more = Array.from({ length: 4 }, (_, i) => mailbox.submit(transfer(20 + i)));
  assert.equal(await more[3], { kind: 'busy' });

  shard.batches[1]?.finish();
  await replies[5];
  shard.batches[2]?.finish();
  for (let i = 3; i < 8; i++) assert.equal(await replies[i], answerOf(transfer(i)));
  await nextTurn();
  assert.equal(
    shard.batches.flatMap((b) => b.transfers.map((t) => t.reqId)),
    [...[0, 1, 2, 3, 4, 5, 6, 7, 20, 21, 22].map((i) => transfer(i).reqId)],
  );
  shard.batches[3]?.finish();
  for (let i = 0; i < 3; i++) assert.equal(await more[i], answerOf(transfer(20 + i)));
  assert.equal([mailbox.inFlight, mailbox.depth], [0, 0]);
});

test('a batch that fails, or answers fewer transfers than it carried, answers every one of them with an error', async () => {
  const failing = new TransferMailbox({ mailboxMax: 10, concurrencyMax: 10, send: () => Promise.reject(new Error('worker gone')) });
  const failed = await Promise.all([failing.submit(transfer(0)), failing.submit(transfer(1))]);
  assert.equal(
    failed.map((r) => r.kind),
    ['error', 'error'],
  );
  assert.match(String((failed[0] as { message: string }).message), 'worker gone');
  assert.is(failing.inFlight, 0);

  const short = new TransferMailbox({ mailboxMax: 10, concurrencyMax: 10, send: async (transfers) => transfers.slice(1).map(answerOf) });
  const shorted = await Promise.all([short.submit(transfer(0)), short.submit(transfer(1))]);
  assert.equal(
    shorted.map((r) => r.kind),
    ['error', 'error'],
  );
  assert.is(short.inFlight, 0);
});

test.run();
