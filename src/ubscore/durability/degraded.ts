// UBSCore while its disk takes no writes. A write that fails (a full disk) leaves RAM ahead of
// disk. Then no decision that is not durable is answered as success: the failed batch, every
// later one and the open one are answered `unavailable` at once (an unknown outcome; callers retry
// idempotently), RAM is thrown away and rebuilt from disk by the start-up path, every new command
// is answered `unavailable`, and a probe write is retried with capped backoff until the disk
// takes writes again (wal/recovery.ts). The main thread hears `ubs.degraded` and `ubs.recovered`.

import { errorDetail as describe } from '../../error-text.js';
import { commitFailure, overflowedHeap } from '../../../wal/disk.js';
import { DiskRecovery, probeWalDir } from '../../../wal/recovery.js';
import type { UbsHealthEvent } from '../control.js';
import { logger } from '../log.js';
import { closeCoreState, type CoreState } from '../state.js';

/** What a degraded episode needs of the actor. */
export type EpisodeHooks = {
  readonly walDir: string;
  /** No write starts with fewer bytes free than this on the WAL's filesystem; 0: no check. */
  readonly diskReserveBytes: number;
  /** Throws RAM away and restores it from disk; called by the recovery with no write in flight. */
  readonly rebuild: () => Promise<void>;
  /** The probe write succeeded after `attempts` attempts: serve again. */
  readonly recovered: (attempts: number) => void;
  readonly post: (event: UbsHealthEvent) => void;
  readonly fatal: (message: string) => void;
  /** Whether a close has begun: it waits for no recovery, it closes what is durable. */
  readonly closing: () => boolean;
  /** Wakes a close waiting for the writer to drain: nothing more will be written. */
  readonly drained: () => void;
};

/** A degraded episode: since when, and the recovery that ends it. */
export class DegradedEpisode {
  readonly since = Date.now();
  readonly recovery: DiskRecovery;

  constructor(private readonly hooks: EpisodeHooks) {
    this.recovery = new DiskRecovery({
      rebuild: hooks.rebuild,
      probe: () => probeWalDir(hooks.walDir, hooks.diskReserveBytes),
      recovered: hooks.recovered,
      log: (line) => logger.warn(line),
    });
  }

  /**
   * Reads why the write failed, then tells the main thread and starts the recovery, or stops the
   * process when lmdb-js overflowed its heap reporting the failure.
   */
  report(label: string, error: unknown, commandsUnanswered: number): void {
    void commitFailure(error).then((failure) => {
      const reason = `${label} failed: ${failure.message} (code ${String(failure.code)})`;
      // lmdb-js overflowed a heap buffer reporting this failure: nothing in this process can be trusted.
      if (overflowedHeap(failure)) {
        this.hooks.fatal(
          `${reason}; lmdb-js overflows its heap reporting a failed page write, so the process stops and the restart replays the durable WAL`,
        );
        return;
      }
      logger.critical(
        'UBSCore cannot write its WAL: RAM is rebuilt from disk and every command is answered unavailable until a probe write succeeds',
        { reason, commands_unanswered: commandsUnanswered },
      );
      this.hooks.post({ kind: 'ubs.degraded', cause: 'wal', reason, since: this.since });
      // A close under way waits for no recovery: it closes what is durable.
      if (!this.hooks.closing()) this.recovery.start();
      else this.hooks.drained();
    });
  }

  /** The episode is over: the main thread hears how long it lasted. */
  ended(attempts: number, durableSeq: number): void {
    const degradedMs = Date.now() - this.since;
    logger.warn('UBSCore writes its WAL again and serves commands', { degraded_ms: degradedMs, attempts, durable_seq: durableSeq });
    this.hooks.post({ kind: 'ubs.recovered', since: this.since, degradedMs, attempts });
  }
}

/** Drops the state before a rebuild; a failure to close is logged, since opening a new one is what must succeed. */
export async function closeForRebuild(state: CoreState): Promise<void> {
  try {
    await closeCoreState(state);
  } catch (error) {
    // The old environment is dropped either way.
    logger.error('closing the state before a rebuild failed', { reason: describe(error) });
  }
}

/** The line a rebuild leaves: where the reopened state starts. */
export function logRebuilt(state: CoreState, durableSeq: number): void {
  const { snapshotSeq, replayedRecords } = state.restored;
  logger.warn('state rebuilt from disk', { snapshot_seq: snapshotSeq, replayed_records: replayedRecords, durable_seq: durableSeq });
}
