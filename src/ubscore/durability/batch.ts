// One group-commit batch of UBSCore's engine: the replies it owes, grouped by the client that
// asked (`To`: a thread's port, which only actors/ knows), and the WAL block it writes; and the
// answers given without deciding anything while the disk fails.

import type { WalBatch } from '../../../wal/block.js';
import type { UbsResult } from '../../domain/spot-commands.js';

/** One client's answers in a batch: `results[i]` answers its request `ids[i]`. */
export type Replies = { readonly ids: number[]; readonly results: UbsResult[] };

/** Posts one client's answers as one message (actors/ubscore/ports.ts). */
export type Answer<To> = (to: To, replies: Replies) => void;

export type Batch<To> = {
  /** Replies grouped by the client they answer, posted as one message per client. */
  readonly replies: Map<To, Replies>;
  commands: number;
  /** What the batch writes, set when it is sealed; null when it decided no record. */
  wal: WalBatch | null;
};

export function newBatch<To>(): Batch<To> {
  return { replies: new Map(), commands: 0, wal: null };
}

/**
 * The batch of blocks a standby follows (follow.ts), read from the owner's log in PostgreSQL:
 * written like a decided one, answered to nobody.
 */
export function followedBatch<To>(wal: WalBatch): Batch<To> {
  return { ...newBatch<To>(), wal };
}

/** The answers while the disk fails, or while a standby follows: shared objects, cloned once per reply message. */
const WRITE_FAILED: UbsResult = { kind: 'unavailable', reason: 'write_failed' };
export const WAL_UNWRITABLE: UbsResult = { kind: 'unavailable', reason: 'wal_unwritable' };
export const STANDBY: UbsResult = { kind: 'unavailable', reason: 'standby' };

/** Every command of batches decided on RAM that a failed write threw away is answered `unavailable`. */
export function answerWriteFailed<To>(batches: readonly Batch<To>[], answer: Answer<To>): void {
  for (const batch of batches)
    for (const [to, replies] of batch.replies) answer(to, { ids: replies.ids, results: replies.ids.map(() => WRITE_FAILED) });
}
