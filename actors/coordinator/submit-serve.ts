// The shard's end of its submit port (actors/coordinator/submit-link.ts is the main thread's):
// batches of new transfers in, each transfer's answer out as soon as its own drive ends.

import type { MessagePort } from 'node:worker_threads';
import type { NewTransfer, SubmitReply } from '../../src/domain/transfer.js';
import { errorDetail, errorText } from '../../src/error-text.js';
import { SUBMIT_BATCH_MAX } from '../../src/limits.js';
import type { Logger } from '../../src/log.js';
import type { CoordinatorAnswers, CoordinatorSubmit } from '../protocol.js';
import { sendPerTurn } from './port-answers.js';

/**
 * The submit port: every transfer of a batch is submitted at once, so they share the shard's
 * batched statements, and each is answered the moment its drive ends. The answers ready in one
 * turn leave in one message. One transfer's exception is that transfer's error, not the batch's.
 */
export function serveSubmits(
  port: MessagePort,
  shard: { readonly submit: (t: NewTransfer) => Promise<SubmitReply> },
  log: Pick<Logger, 'error'>,
): void {
  const answer = sendPerTurn(port, (ids, answers: SubmitReply[]): CoordinatorAnswers => ({ kind: 'coord.answers', ids, answers }));
  port.on('message', (message: CoordinatorSubmit) => {
    if (message.kind !== 'coord.submit' || message.ids.length !== message.transfers.length || message.ids.length > SUBMIT_BATCH_MAX) {
      const error = `a submit batch holds 1 to ${SUBMIT_BATCH_MAX} transfers, each with its id; got a ${JSON.stringify(message.kind)} message with ${message.ids?.length} ids and ${message.transfers?.length} transfers`;
      for (const id of message.ids ?? []) answer(id, { kind: 'error', message: error });
      return;
    }
    for (const [i, t] of message.transfers.entries()) {
      const id = message.ids[i] as number;
      shard.submit(t).then(
        (reply) => answer(id, reply),
        (error: unknown) => {
          log.error('coordinator submit failed', { req_id: t.reqId, error: errorDetail(error) });
          answer(id, { kind: 'error', message: errorText(error) });
        },
      );
    }
  });
}
