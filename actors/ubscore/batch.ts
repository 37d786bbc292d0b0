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
  /**
   * A standby's batch (follow.ts): blocks it read from the owner's log in PostgreSQL, which only
   * its LMDB needs; it answers nobody.
   */
  readonly followed: boolean;
};

export function newBatch(): Batch {
  return { replies: new Map(), commands: 0, wal: null, followed: false };
}

/** The batch of blocks a standby follows: written like a decided one, answered to nobody. */
export function followedBatch(wal: WalBatch): Batch {
  return { replies: new Map(), commands: 0, wal, followed: true };
}

/** The answers while the disk fails, or while a standby follows: shared objects, cloned once per reply message. */
const WRITE_FAILED: UbsResult = { kind: 'unavailable', reason: 'write_failed' };
const WAL_UNWRITABLE: UbsResult = { kind: 'unavailable', reason: 'wal_unwritable' };
const STANDBY: UbsResult = { kind: 'unavailable', reason: 'standby' };

/** Every command of batches decided on RAM that a failed write threw away is answered `unavailable`. */
export function answerWriteFailed(batches: readonly Batch[]): void {
  for (const batch of batches)
    for (const [port, replies] of batch.replies) postReplies(port, { ids: replies.ids, results: replies.ids.map(() => WRITE_FAILED) });
}

/**
 * While the disk fails, or while a standby follows: every request of `message` is answered
 * `unavailable` at once (an unknown outcome: the caller retries), nothing is decided.
 */
export function refuseAll(unpacker: RequestUnpacker, port: MessagePort, message: UbsPortMessage, why: 'disk' | 'standby' = 'disk'): void {
  const refusal = why === 'standby' ? STANDBY : WAL_UNWRITABLE;
  const replies: PortReplies = { ids: [], results: [] };
  const problem = unpacker.unpack(message, (id) => {
    if (!Number.isSafeInteger(id)) return;
    replies.ids.push(id);
    replies.results.push(refusal);
  });
  if (problem !== null) logger.error('dropped the rest of a malformed port message', { problem });
  postReplies(port, replies);
}
