// Shard 0's end of another shard's write port (actors/coordinator/write-link.ts is that shard's):
// its writes join shard 0's own batched writer, and each outcome goes back as a value as soon as
// its batch ends, those of one turn in one message.

import type { MessagePort } from 'node:worker_threads';
import type { TransferWriter } from '../../src/db/transfer-writes.js';
import { errorText } from '../../src/error-text.js';
import { oncePerTurn } from '../../src/turn-flush.js';
import type { SharedWriteAnswers, SharedWriteOutcome, SharedWrites } from '../protocol.js';

/** A thrown value as an outcome: its message, and its code when it is a string (a SQLSTATE, a driver's code). */
export function failedOutcome(error: unknown): SharedWriteOutcome {
  const code = (error as { code?: unknown } | null)?.code;
  return { kind: 'failed', message: errorText(error), code: typeof code === 'string' ? code : null };
}

export function serveWrites(port: MessagePort, writes: TransferWriter): void {
  let ids: number[] = [];
  let outcomes: SharedWriteOutcome[] = [];
  const send = oncePerTurn(() => {
    const message: SharedWriteAnswers = { kind: 'writes.answers', ids, outcomes };
    ids = [];
    outcomes = [];
    port.postMessage(message);
  });
  const answer = (id: number, outcome: SharedWriteOutcome) => {
    ids.push(id);
    outcomes.push(outcome);
    send();
  };
  port.on('message', (message: SharedWrites) => {
    if (message.kind !== 'writes.request' || !Array.isArray(message.ids) || message.ids.length !== message.items?.length) {
      const error = `a shared write request holds as many writes as ids; got a ${JSON.stringify(message.kind)} message with ${message.ids?.length} ids and ${message.items?.length} writes`;
      for (const id of message.ids ?? []) answer(id, { kind: 'failed', message: error, code: null });
      return;
    }
    for (const [i, item] of message.items.entries()) {
      const id = message.ids[i] as number;
      // A write that throws at once (a path the FSM forbids) is that write's failure, not the message's.
      let written: Promise<SharedWriteOutcome>;
      try {
        written = writes.write(item).then((result) => ({ kind: 'result', result }), failedOutcome);
      } catch (error) {
        written = Promise.resolve(failedOutcome(error));
      }
      void written.then((outcome) => answer(id, outcome));
    }
  });
}
