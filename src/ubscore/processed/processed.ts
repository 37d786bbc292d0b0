// UBSCore's processed set as the ledger sees it: the durable entries in LMDB, the entries decided
// but not yet durable (the overlay), and a Bloom filter of every key in either, which answers
// "never processed" for a fresh key without reading LMDB.
//
// The filter is trusted only once it holds every key, so a filter answer "absent" is never wrong.
// A helper thread (actors/ubscore/filter-worker.ts) reads every durable key into a new filter; meanwhile
// this thread puts into a second filter of the same size (the delta) every key decided since the
// build began, and every key still pending when it began, because the helper may have read past
// the place a pending key takes once it is committed. The two are then joined, bit by bit. Any
// key committed before the build began is there for the helper to read: once a batch's commit
// has resolved, a read of LMDB sees it (the lookup itself relies on the same).
// Until the first build completes, and whenever the filter says "maybe", the overlay and then
// LMDB answer, exactly as without a filter.
//
// Keys are removed from the processed set only by the retention (pruner.ts), never from a
// filter: a filter holding a removed key still holds every live one, and only says "maybe" for
// the removed one, whose LMDB read then finds nothing. After a pass the filter is rebuilt, by the
// same build, for the live keys only; the old filter answers until the new one is complete.

import type { OpRecord } from '../../domain/spot-records.js';
import type { ProcessedWrite } from '../../../wal/block.js';
import { KeyFilter } from '../../../wal/key-filter.js';
import type { WalLog } from '../../../wal/log.js';
import { unreachable } from '../../unreachable.js';
import { FILTER_EXIT_WAIT_MS, KEY_FILTER_KEYS_MAX, KEY_FILTER_KEYS_MIN } from '../../limits.js';
import { within } from '../../within.js';
import { logger } from '../log.js';

/** A new filter is sized for this many times the keys it starts with, so it rebuilds rarely. */
const FILTER_GROWTH = 2;

/** A build's input: every durable key of `walDir`'s processed set into a filter; it stops once `stop[0]` is 1. */
export type FilterBuildInput = {
  readonly walDir: string;
  readonly capacityKeys: number;
  readonly keysMin: number;
  readonly stop: Int32Array<SharedArrayBuffer>;
};
/** What a build answers once: the bits of a filter of every durable key, or why it failed. */
export type FilterBuildOutcome =
  | { readonly kind: 'filter.built'; readonly words: Uint32Array<ArrayBuffer>; readonly keys: number }
  | { readonly kind: 'filter.failed'; readonly message: string };
/** A build under way; `ended` resolves once it has stopped (after its stop flag is set). */
export type FilterBuild = { readonly ended: () => Promise<void> };
/**
 * Starts a build off UBSCore's thread, calling `done` with its outcome: a helper thread
 * (actors/ubscore/filter-build.ts) reads the keys, so millions of them cost UBSCore's thread nothing.
 */
export type StartFilterBuild = (input: FilterBuildInput, done: (outcome: FilterBuildOutcome) => void) => FilterBuild;

/**
 * A build under way: its helper, the keys decided meanwhile in a filter of its size, and the flag
 * that asks the helper to stop (a thread is never terminated: see actors/ubscore/filter-worker.ts).
 */
type Build = {
  readonly helper: FilterBuild;
  readonly capacityKeys: number;
  readonly delta: KeyFilter;
  readonly stop: Int32Array<SharedArrayBuffer>;
};

type ProcessedStats = {
  readonly filterReady: boolean;
  readonly filterKeys: number;
  readonly filterCapacityKeys: number;
  readonly lmdbReads: number;
};

export class ProcessedSet {
  /**
   * Entries decided but not yet durable (the overlay), one map per batch, oldest first: the open
   * batch's is last. A batch's map is dropped whole once the batch is durable, which costs
   * nothing per entry. The lookup must see them before LMDB does.
   */
  private readonly pending: Map<string, OpRecord>[] = [new Map()];
  /** Holds every key once built; null until the first build completes. */
  private filter: KeyFilter | null = null;
  private build: Build | null = null;
  /** A rebuild asked for while a build ran: it starts once that one ends, so one helper runs at a time. */
  private rebuildWaiting = false;
  private closed = false;
  private lmdbReads = 0;

  /** `filterKeysMin` sizes the smallest filter (KEY_FILTER_KEYS_MIN); tests make it small to see rebuilds. */
  constructor(
    private readonly log: WalLog,
    private readonly walDir: string,
    private readonly startFilterBuild: StartFilterBuild,
    private readonly filterKeysMin = KEY_FILTER_KEYS_MIN,
  ) {
    this.startBuild(log.processedCount());
  }

  /** The first outcome recorded for `opKey`, durable or not; undefined if it was never decided. */
  readonly lookup = (opKey: string): OpRecord | undefined => {
    const filter = this.filter;
    if (filter !== null && !filter.mightContain(opKey)) return undefined;
    for (const batch of this.pending) {
      const record = batch.get(opKey);
      if (record !== undefined) return record;
    }
    this.lmdbReads++;
    return this.log.getProcessed(opKey);
  };

  /** A decided entry of the open batch: from now on it answers every lookup, before and after it is durable. */
  add(opKey: string, record: OpRecord): void {
    (this.pending[this.pending.length - 1] as Map<string, OpRecord>).set(opKey, record);
    this.build?.delta.add(opKey);
    const filter = this.filter;
    if (filter === null) return;
    filter.add(opKey);
    // Past its capacity the filter still holds every key, but says "maybe" more often.
    if (this.build === null && filter.count > filter.capacityKeys && filter.capacityKeys < KEY_FILTER_KEYS_MAX)
      this.startBuild(filter.count);
  }

  /** Whether `opKey` was decided and is not yet durable: the retention never touches such an entry. */
  isPending(opKey: string): boolean {
    for (const batch of this.pending) if (batch.has(opKey)) return true;
    return false;
  }

  /**
   * After a retention pass: builds a filter sized for the live keys (LMDB's count now), to use
   * once it is complete. Until then the current filter, which still holds every live key, answers.
   */
  rebuildFilter(): void {
    if (this.closed) return;
    if (this.build !== null) {
      this.rebuildWaiting = true;
      return;
    }
    this.startBuild(this.log.processedCount());
  }

  /** Whether the filter holds at least twice `liveKeys` keys: half or more of them pruned since it was built. */
  filterOutgrown(liveKeys: number): boolean {
    const filter = this.filter;
    return filter !== null && this.build === null && filter.count >= 2 * Math.max(liveKeys, 1);
  }

  /** The open batch is sealed: the entries added from now on belong to the next one. */
  seal(): void {
    this.pending.push(new Map());
  }

  /**
   * The oldest sealed batch is durable: LMDB answers for its entries from now on. Batches become
   * durable in the order they were sealed; `entries` is what it wrote, checked against the map.
   */
  settle(entries: readonly ProcessedWrite[]): void {
    const oldest = this.pending.length > 1 ? this.pending.shift() : undefined;
    if (oldest === undefined || oldest.size !== entries.length) {
      throw new Error(
        `ubscore: a durable batch wrote ${entries.length} processed entries, its pending map holds ${oldest?.size ?? 'none'}`,
      );
    }
  }

  /**
   * Stops a build under way and waits for its thread to end, bounded: called before the log
   * closes. A thread that outlived UBSCore's own would be ended with it, maybe inside one of
   * lmdb's native calls, which aborts the process.
   */
  async close(): Promise<void> {
    this.closed = true;
    const build = this.build;
    this.build = null;
    if (build === null) return;
    Atomics.store(build.stop, 0, 1);
    await within(build.helper.ended(), FILTER_EXIT_WAIT_MS, undefined);
  }

  stats(): ProcessedStats {
    const filter = this.filter;
    return {
      filterReady: filter !== null,
      filterKeys: filter?.count ?? 0,
      filterCapacityKeys: filter?.capacityKeys ?? 0,
      lmdbReads: this.lmdbReads,
    };
  }

  private startBuild(keys: number): void {
    const capacityKeys = FILTER_GROWTH * keys;
    const delta = new KeyFilter(capacityKeys, this.filterKeysMin);
    for (const batch of this.pending) for (const key of batch.keys()) delta.add(key);
    const stop = new Int32Array(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT));
    const input: FilterBuildInput = { walDir: this.walDir, capacityKeys, keysMin: this.filterKeysMin, stop };
    let build: Build | null = null;
    const helper = this.startFilterBuild(input, (outcome) => {
      if (build !== null) this.onEvent(build, outcome);
    });
    build = { helper, capacityKeys, delta, stop };
    this.build = build;
  }

  private onEvent(build: Build, event: FilterBuildOutcome): void {
    if (this.build !== build || this.closed) return;
    this.build = null;
    switch (event.kind) {
      case 'filter.built': {
        const filter = new KeyFilter(build.capacityKeys, this.filterKeysMin, event.words, event.keys);
        filter.addAll(build.delta);
        this.filter = filter;
        break;
      }
      case 'filter.failed':
        // Without a complete filter every lookup reads LMDB: slower, never wrong.
        logger.error('building the processed-set filter failed; lookups read LMDB', { reason: event.message });
        break;
      default:
        unreachable(event);
    }
    if (this.rebuildWaiting) {
      this.rebuildWaiting = false;
      this.startBuild(this.log.processedCount());
    }
  }
}
