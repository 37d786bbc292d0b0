// Proves a shard's mailbox counts transfers, not tasks: the transfers of one turn leave in batches
// of at most SUBMIT_BATCH_MAX, each caller gets its own answer as soon as its own transfer ends
// (not when its batch does: the slowest of a batch no longer holds the others), at most COORDINATOR_CONCURRENCY_MAX are in the shard with
// COORDINATOR_MAILBOX_MAX waiting and the next is busy. And the submit port's main-thread end
// (SubmitLink) answers each transfer exactly once: the shard's answer by id, in any order, or an
// error when the port closes or the batch cannot be sent.
// test-runner: no-postgres

import { setImmediate as nextTurn } from 'node:timers/promises';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TransferMailbox } from '../../actors/coordinator/mailbox.js';
import { SubmitLink } from '../../actors/coordinator/submit-link.js';
import { serveSubmits } from '../../actors/coordinator/submit-serve.js';
import type { CoordinatorAnswers, CoordinatorSubmit } from '../../actors/protocol.js';
import type { NewTransfer, SubmitReply } from '../../src/domain/transfer.js';
import { SUBMIT_BATCH_MAX } from '../../src/limits.js';

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

type Answer = (index: number, reply: SubmitReply) => void;

/** A shard whose transfers finish only when the test says so: a whole batch, or one transfer of it. */
function heldShard() {
  const batches: { transfers: readonly NewTransfer[]; finish: () => void; finishOne: (i: number) => void }[] = [];
  const send = (transfers: readonly NewTransfer[], answer: Answer) => {
    const done = new Set<number>();
    const finishOne = (i: number) => {
      if (done.has(i)) return;
      done.add(i);
      answer(i, answerOf(transfers[i] as NewTransfer));
    };
    batches.push({
      transfers,
      finishOne,
      finish: () => {
        for (const i of transfers.keys()) finishOne(i);
      },
    });
  };
  return { batches, send };
}

test('the transfers of one turn leave together in batches of at most SUBMIT_BATCH_MAX, and each caller gets its own answer', async () => {
  const sizes: number[] = [];
  const mailbox = new TransferMailbox({
    mailboxMax: 1_000,
    concurrencyMax: 1_000,
    send: (transfers, answer) => {
      sizes.push(transfers.length);
      // Answered last to first: each caller still gets its own.
      for (let i = transfers.length - 1; i >= 0; i--) answer(i, answerOf(transfers[i] as NewTransfer));
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

test('a transfer is answered as soon as its own drive ends, not when the last of its batch does, and frees its place then', async () => {
  const shard = heldShard();
  const mailbox = new TransferMailbox({ mailboxMax: 5, concurrencyMax: 3, send: shard.send });
  const replies = Array.from({ length: 4 }, (_, i) => mailbox.submit(transfer(i)));
  await nextTurn();
  assert.equal(
    shard.batches.map((b) => b.transfers.length),
    [3],
  );
  const answered = replies.map(() => false);
  for (const [i, r] of replies.entries())
    void r.then(() => {
      answered[i] = true;
    });
  shard.batches[0]?.finishOne(1);
  await nextTurn();
  assert.equal(answered, [false, true, false, false]);
  assert.equal(await replies[1], answerOf(transfer(1)));
  // Its place went to the transfer that waited.
  assert.equal(
    shard.batches.map((b) => b.transfers.map((t) => t.reqId)),
    [[0, 1, 2].map((i) => transfer(i).reqId), [transfer(3).reqId]],
  );
  shard.batches[0]?.finish();
  shard.batches[1]?.finish();
  assert.equal(
    await Promise.all(replies),
    [0, 1, 2, 3].map((i) => answerOf(transfer(i))),
  );
  assert.equal([mailbox.inFlight, mailbox.depth], [0, 0]);
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
  // The places freed in one turn are filled in the next, together.
  await nextTurn();
  assert.equal(
    shard.batches.map((b) => b.transfers.length),
    [3, 3],
  );
  assert.equal([mailbox.inFlight, mailbox.depth], [3, 2]);
  const more = Array.from({ length: 4 }, (_, i) => mailbox.submit(transfer(20 + i)));
  assert.equal(await more[3], { kind: 'busy' });

  shard.batches[1]?.finish();
  await replies[5];
  await nextTurn();
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

/** A SubmitLink on one end of a real channel; the test plays the shard on the other. */
function link() {
  const channel = new MessageChannel();
  const malformed: string[] = [];
  const submits: CoordinatorSubmit[] = [];
  channel.port2.on('message', (m: CoordinatorSubmit) => submits.push(m));
  const submit = new SubmitLink(channel.port1, (detail) => malformed.push(detail));
  const collected: [number, SubmitReply][] = [];
  const answer: Answer = (i, reply) => collected.push([i, reply]);
  const answers = (m: CoordinatorAnswers) => channel.port2.postMessage(m);
  unrefBoth(channel);
  return { channel, submit, submits, malformed, collected, answer, answers };
}

test('SubmitLink: each answer reaches its transfer by id, in whatever order the shard sends them', async () => {
  const l = link();
  l.submit.send([transfer(0), transfer(1), transfer(2)], l.answer);
  await pollFor(() => l.submits.length === 1);
  const ids = l.submits[0]?.ids ?? [];
  assert.is(ids.length, 3);
  l.answers({ kind: 'coord.answers', ids: [ids[2] as number], answers: [answerOf(transfer(2))] });
  l.answers({ kind: 'coord.answers', ids: [ids[0] as number, ids[1] as number], answers: [answerOf(transfer(0)), answerOf(transfer(1))] });
  await pollFor(() => l.collected.length === 3);
  assert.equal(l.collected, [
    [2, answerOf(transfer(2))],
    [0, answerOf(transfer(0))],
    [1, answerOf(transfer(1))],
  ]);
  // An id nobody waits for (answered twice) is reported, not answered again.
  l.answers({ kind: 'coord.answers', ids: [ids[0] as number], answers: [answerOf(transfer(0))] });
  await pollFor(() => l.malformed.length === 1);
  assert.is(l.collected.length, 3);
  l.submit.close('test over');
  l.channel.port2.close();
});

test('SubmitLink: a port the shard closes answers every transfer still waiting with an error, and every later one at once', async () => {
  const l = link();
  l.submit.send([transfer(0), transfer(1)], l.answer);
  await pollFor(() => l.submits.length === 1);
  const first = l.submits[0]?.ids[0] as number;
  l.answers({ kind: 'coord.answers', ids: [first], answers: [answerOf(transfer(0))] });
  await pollFor(() => l.collected.length === 1);
  l.channel.port2.close();
  await pollFor(() => l.collected.length === 2);
  assert.equal(l.collected[1]?.[0], 1);
  assert.equal(l.collected[1]?.[1].kind, 'error');
  l.submit.send([transfer(5)], l.answer);
  assert.equal(l.collected[2], [0, { kind: 'error', message: 'the coordinator shard is stopped' }]);
});

test('SubmitLink: a batch that cannot cross to the shard answers each of its transfers with an error, and leaves nothing waiting', async () => {
  const l = link();
  const unclonable = { ...transfer(0), extra: () => undefined } as unknown as NewTransfer;
  l.submit.send([unclonable, transfer(1)], l.answer);
  assert.equal(
    l.collected.map(([i, r]) => [i, r.kind]),
    [
      [0, 'error'],
      [1, 'error'],
    ],
  );
  l.submit.close('test over');
  assert.is(l.collected.length, 2, 'closing answers nothing twice');
  l.channel.port2.close();
});

test("the shard answers each transfer of a batch on the submit port as soon as its own drive ends; a drive that throws is that transfer's error", async () => {
  const channel = new MessageChannel();
  const release = new Map<string, (reply: SubmitReply) => void>();
  const errors: string[] = [];
  serveSubmits(
    channel.port2,
    {
      submit: (t) =>
        t.reqId === transfer(2).reqId ? Promise.reject(new Error('store down')) : new Promise((resolve) => release.set(t.reqId, resolve)),
    },
    { error: (message) => errors.push(message) },
  );
  const received: CoordinatorAnswers[] = [];
  channel.port1.on('message', (m: CoordinatorAnswers) => received.push(m));
  unrefBoth(channel);
  const submit: CoordinatorSubmit = { kind: 'coord.submit', ids: [10, 11, 12], transfers: [transfer(0), transfer(1), transfer(2)] };
  channel.port1.postMessage(submit);
  await pollFor(() => release.size === 2 && received.length === 1);
  assert.equal(received[0]?.ids, [12]);
  assert.equal(received[0]?.answers[0]?.kind, 'error');
  assert.equal(errors, ['coordinator submit failed']);
  release.get(transfer(1).reqId)?.({ kind: 'refused', code: 'INSUFFICIENT_BALANCE' });
  await pollFor(() => received.length === 2);
  assert.equal(received[1], { kind: 'coord.answers', ids: [11], answers: [{ kind: 'refused', code: 'INSUFFICIENT_BALANCE' }] });
  release.get(transfer(0).reqId)?.(answerOf(transfer(0)));
  await pollFor(() => received.length === 3);
  assert.equal(received[2], { kind: 'coord.answers', ids: [10], answers: [answerOf(transfer(0))] });
  // A batch too large is refused whole, each transfer answered with the reason.
  const tooMany = Array.from({ length: SUBMIT_BATCH_MAX + 1 }, (_, i) => transfer(100 + i));
  channel.port1.postMessage({ kind: 'coord.submit', ids: tooMany.map((_t, i) => 100 + i), transfers: tooMany });
  await pollFor(() => received.length === 4);
  assert.is(received[3]?.ids.length, SUBMIT_BATCH_MAX + 1);
  assert.ok(received[3]?.answers.every((a) => a.kind === 'error'));
  channel.port1.close();
});

/** A failed assertion must not leave the file's process running on an open port. */
function unrefBoth(channel: MessageChannel): void {
  channel.port1.unref();
  channel.port2.unref();
}

async function pollFor(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await nextTurn();
  assert.ok(ok(), 'in time');
}

test.run();
