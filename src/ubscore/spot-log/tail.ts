// A standby's tailer: reads the owner's new blocks from spot_log every STANDBY_POLL_MS
// and hands them to the standby's UBSCore (`follow`), which verifies, writes and applies them. It
// knows how far behind the owner the standby is, for /readyz, and does the last catch-up before
// the standby takes over.

import type { UbsFollowOutcome } from '../control.js';
import type { LogBlock, SpotLogStore } from './store.js';
import { STANDBY_READ_BLOCKS_MAX } from '../../limits.js';
import { errorDetail } from '../../error-text.js';

/** How far the standby is behind the owner: records, and how long the oldest unapplied one has waited. */
export type StandbyLag = { readonly lag_records: number; readonly lag_ms: number; readonly applied_seq: number };

type TailDeps = {
  readonly store: Pick<SpotLogStore, 'read' | 'lastSeq'>;
  readonly follow: (blocks: readonly LogBlock[]) => Promise<UbsFollowOutcome>;
  /** UBSCore's last seq when the tail starts. */
  readonly appliedSeq: number;
  readonly pollMs: number;
  readonly log: {
    readonly warn: (message: string, fields?: Record<string, unknown>) => void;
    readonly critical: (message: string, fields?: Record<string, unknown>) => void;
  };
  /**
   * The standby's log and the owner's diverged, or the owner's log has a gap after this one's last
   * seq (archived past it): following can never go on; only a rebuild at the next start mends it.
   */
  readonly onBroken: (reason: string) => void;
};

export class SpotLogTailer {
  private applied: number;
  private pgLast = 0;
  /** When PostgreSQL was first seen ahead of what is applied; null while caught up. */
  private behindSince: number | null = null;
  private timer: NodeJS.Timeout | null = null;
  private turn: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(private readonly deps: TailDeps) {
    this.applied = deps.appliedSeq;
  }

  lag(): StandbyLag {
    const behind = Math.max(0, this.pgLast - this.applied);
    const since = this.behindSince;
    return { lag_records: behind, lag_ms: behind === 0 || since === null ? 0 : Date.now() - since, applied_seq: this.applied };
  }

  start(): void {
    this.schedule(0);
  }

  /** Stops polling and waits for the read under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.turn;
  }

  /**
   * After the ownership is this process's: polling stops, then every block PostgreSQL holds is
   * followed. The former owner is fenced by then, so nothing comes after. Throws when a block is
   * refused: the takeover must not go on with a ledger behind the log.
   */
  async catchUp(): Promise<number> {
    await this.stop();
    for (;;) {
      const step = await this.step();
      if (step === 'broken') throw new Error('the last catch-up from spot_log was refused: see the log');
      if (step === 'caught-up') return this.applied;
    }
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.turn = this.poll();
    }, ms);
  }

  private async poll(): Promise<void> {
    let step: Step = 'caught-up';
    try {
      step = await this.step();
    } catch (error) {
      // PostgreSQL away, or UBSCore busy: the next poll tries again; the lag shows it meanwhile.
      this.deps.log.warn('reading spot_log failed; trying again', { reason: errorDetail(error) });
    }
    if (step === 'broken') return;
    this.schedule(step === 'more' ? 0 : this.deps.pollMs);
  }

  /** One read and one follow call: whether more blocks wait, all are applied, or following is broken. */
  private async step(): Promise<Step> {
    this.pgLast = await this.deps.store.lastSeq();
    if (this.pgLast > this.applied) this.behindSince ??= Date.now();
    const blocks = await this.deps.store.read(this.applied + 1, STANDBY_READ_BLOCKS_MAX);
    if (blocks.length === 0 && this.pgLast > this.applied) {
      // PostgreSQL's log was archived past this standby's last seq, or lost its blocks: they are gone.
      const missing = `seqs ${this.applied + 1}..${this.pgLast} are missing`;
      this.deps.log.critical('the standby cannot follow the owner log', {
        kind: 'gap',
        missing_from: this.applied + 1,
        missing_to: this.pgLast,
      });
      this.deps.onBroken(`gap: spot_log holds no block after seq ${this.applied}, yet reaches seq ${this.pgLast}: ${missing}`);
      return 'broken';
    }
    if (blocks.length === 0) return this.settled();
    const outcome = await this.deps.follow(blocks);
    switch (outcome.kind) {
      case 'applied':
        this.applied = outcome.lastSeq;
        return blocks.length === STANDBY_READ_BLOCKS_MAX ? 'more' : this.settled();
      case 'gap':
      case 'corrupt':
      case 'divergent':
        this.deps.log.critical('the standby cannot follow the owner log', { kind: outcome.kind, reason: outcome.reason });
        this.deps.onBroken(`${outcome.kind}: ${outcome.reason}`);
        return 'broken';
      case 'refused':
      case 'failed':
        throw new Error(`UBSCore did not follow: ${outcome.reason}`);
    }
  }

  private settled(): Step {
    if (this.applied >= this.pgLast) {
      this.behindSince = null;
      return 'caught-up';
    }
    return 'more';
  }
}

type Step = 'more' | 'caught-up' | 'broken';
