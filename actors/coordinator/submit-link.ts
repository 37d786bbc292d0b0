// The main thread's end of one shard's submit port: sends batches of new transfers and hands
// each transfer its own answer as it comes back (a transfer whose drive ended early is answered
// early). Every transfer sent gets exactly one answer: the shard's, or an error once the port
// closes (the shard stopped, or its thread died) with the transfer still unanswered.

import type { MessagePort } from 'node:worker_threads';
import type { NewTransfer, SubmitReply } from '../../src/domain/transfer.js';
import type { CoordinatorAnswers, CoordinatorSubmit } from '../protocol.js';
import { WaitingById } from './port-answers.js';

type Answer = (index: number, reply: SubmitReply) => void;

/** A transfer sent and not yet answered: whom to tell, and its place in its batch. */
type Waiter = { readonly answer: Answer; readonly index: number };

export class SubmitLink {
  private readonly waiting = new WaitingById<Waiter>();
  private closed = false;

  constructor(
    private readonly port: MessagePort,
    /** Told of a message that is not a well-formed batch of answers (a programmer's error). */
    private readonly onMalformed: (detail: string) => void,
  ) {
    port.on('message', (message: CoordinatorAnswers) => this.answered(message));
    port.on('close', () => this.close('the coordinator shard closed its submit port'));
  }

  /** Sends the batch; `answer(i, reply)` is called exactly once for each transfer, in whatever order they end. Never throws. */
  send(transfers: readonly NewTransfer[], answer: Answer): void {
    if (this.closed) {
      for (const i of transfers.keys()) answer(i, { kind: 'error', message: 'the coordinator shard is stopped' });
      return;
    }
    const ids = transfers.map((_t, index) => this.waiting.add({ answer, index }));
    const message: CoordinatorSubmit = { kind: 'coord.submit', ids, transfers };
    try {
      this.port.postMessage(message);
    } catch (error) {
      // Not sent (a value that cannot cross): nothing of the batch reached the shard.
      for (const id of ids) this.waiting.take(id);
      for (const i of transfers.keys()) answer(i, { kind: 'error', message: `the batch could not be sent to the shard: ${String(error)}` });
    }
  }

  /** Answers every transfer still waiting with an error; later sends are answered so at once. */
  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiting.takeAll()) w.answer(w.index, { kind: 'error', message: reason });
    this.port.close();
  }

  private answered(message: CoordinatorAnswers): void {
    this.waiting.answered(
      message,
      'coord.answers',
      message.answers,
      { value: 'answer', waiter: 'transfer' },
      (w, reply: SubmitReply) => w.answer(w.index, reply),
      this.onMalformed,
    );
  }
}
