// Shard 0's end of another shard's write port (actors/coordinator/write-link.ts is that shard's):
// its writes join shard 0's own batched writer, and each outcome goes back as a value as soon as
// its batch ends, those of one turn in one message.

import type { MessagePort } from 'node:worker_threads';
import type { TransferWriter, WriteItem } from '../../src/db/transfer-writes.js';
import { errorCode, errorText } from '../../src/error-text.js';
import type { SharedWriteAnswers, SharedWriteOutcome, SharedWrites } from '../protocol.js';
import { sendPerTurn } from './port-answers.js';

/**
 * One write's outcome as a value. A thrown error, at once (a path the FSM forbids) or from the
 * database, is that write's failure: its message, and its code when it is a string (a SQLSTATE,
 * a driver's code).
 */
async function outcomeOf(writes: TransferWriter, item: WriteItem): Promise<SharedWriteOutcome> {
  try {
    return { kind: 'result', result: await writes.write(item) };
  } catch (error) {
    return { kind: 'failed', message: errorText(error), code: errorCode(error) };
  }
}

export function serveWrites(port: MessagePort, writes: TransferWriter): void {
  const answer = sendPerTurn(
    port,
    (ids, outcomes: SharedWriteOutcome[]): SharedWriteAnswers => ({ kind: 'writes.answers', ids, outcomes }),
  );
  port.on('message', (message: SharedWrites) => {
    if (message.kind !== 'writes.request' || !Array.isArray(message.ids) || message.ids.length !== message.items?.length) {
      const error = `a shared write request holds as many writes as ids; got a ${JSON.stringify(message.kind)} message with ${message.ids?.length} ids and ${message.items?.length} writes`;
      for (const id of message.ids ?? []) answer(id, { kind: 'failed', message: error, code: null });
      return;
    }
    for (const [i, item] of message.items.entries()) {
      const id = message.ids[i] as number;
      void outcomeOf(writes, item).then((outcome) => answer(id, outcome));
    }
  });
}
