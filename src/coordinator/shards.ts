// What the main thread asks of the coordinator shards, and how they are started: typed here, in
// src, so that the service composes them without knowing that each shard runs on its own thread
// (actors/coordinator/pool.ts implements it).

import type { FinishedCounts } from '../alerts/failure-window.js';
import type { HaltMiss, VersionedHalt } from '../db/halt-state.js';
import type { Logger } from '../log.js';
import type { ShardScrape } from '../metrics/aggregate.js';
import type { CoordinatorConfig } from './types.js';
import type { NewTransfer, SubmitReply } from '../domain/transfer.js';

export type CoordinatorShards = {
  /** Answers `busy` at once when the shard's mailbox is full. */
  submit(transfer: NewTransfer): Promise<SubmitReply>;
  /** Drives one transfer now, on its shard (an operator's retry). */
  drive(userId: bigint, reqId: string): Promise<SubmitReply>;
  /** Every shard's registry and mailbox depth; a shard that does not answer gives its last families, marked not fresh. */
  metrics(): Promise<ShardScrape[]>;
  /** Transfers finished since start, and of those the ones a failure of the service met; null when a shard did not answer. */
  finishedCounts(): Promise<FinishedCounts | null>;
  /** Makes every shard forget its cached assets; resolves once all have. */
  assetsChanged(): Promise<void>;
  /** Tells every shard (or `only` these) the service was halted or resumed; answers the shards that did not take it. */
  haltChanged(halt: VersionedHalt, only: readonly number[] | null): Promise<readonly HaltMiss[]>;
  stop(): Promise<void>;
};

export type CoordinatorStartOptions = {
  readonly shards: number;
  readonly base: Omit<CoordinatorConfig, 'shard' | 'shards'>;
  readonly mailboxMax: number;
  readonly concurrencyMax: number;
  readonly logLevel: 'debug' | 'info' | 'warn' | 'error';
  readonly logFormat: 'json' | 'pretty';
  readonly log: Logger;
  /** A coordinator thread died: the process must stop and recover from its stores. */
  readonly onFatal: (error: Error) => void;
};
