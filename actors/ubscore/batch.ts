// One group-commit batch of UBSCore's actor: the replies it owes, grouped by port, and the WAL
// block it writes; and the answers given without deciding anything while the disk fails.

import type { MessagePort } from 'node:worker_threads';
import type { WalBatch } from '../../wal/block.js';
import type { UbsPortMessage, UbsResult } from '../protocol.js';
import { logger } from './log.js';
import { postReplies, type PortReplies, type RequestUnpacker } from './wire.js';

export type Batch = {
  /** Replies grouped by the port they answer, posted as one message per port. */
  readonly replies: Map<MessagePort, PortReplies>;
  commands: number;
  /** What the batch writes, set when it is sealed; null when it decided no record. */
  wal: WalBatch | null;
};

export function newBatch(): Batch {
  return { replies: new Map(), commands: 0, wal: null };
}

/** The answers while the disk fails: shared objects, cloned once per reply message. */
const WRITE_FAILED: UbsResult = { kind: 'unavailable', reason: 'write_failed' };
const WAL_UNWRITABLE: UbsResult = { kind: 'unavailable', reason: 'wal_unwritable' };

/** Every command of batches decided on RAM that a failed write threw away is answered `unavailable`. */
export function answerWriteFailed(batches: readonly Batch[]): void {
  for (const batch of batches)
    for (const [port, replies] of batch.replies) postReplies(port, { ids: replies.ids, results: replies.ids.map(() => WRITE_FAILED) });
}

/** While the disk fails: every request of `message` is answered `unavailable` at once, nothing is decided. */
export function refuseAll(unpacker: RequestUnpacker, port: MessagePort, message: UbsPortMessage): void {
  const replies: PortReplies = { ids: [], results: [] };
  const problem = unpacker.unpack(message, (id) => {
    if (!Number.isSafeInteger(id)) return;
    replies.ids.push(id);
    replies.results.push(WAL_UNWRITABLE);
  });
  if (problem !== null) logger.error('dropped the rest of a malformed port message', { problem });
  postReplies(port, replies);
}
