// A coordinator shard's view of the halt (MON-003), and the gate every move out of INIT passes.
// The state is set from the main thread's control message at once, and re-read from PostgreSQL
// at start and on a timer, so a shard that missed a message, or started while halted, still
// holds its transfers.
//
// While halted no transfer leaves INIT: funds not yet moved stay where they are, whoever drives
// the transfer (the HTTP path, a retry timer, the recovery scan, an operator's retry). A move out
// of INIT (a creation that debits its source, a step from INIT) takes a place at the gate first;
// a halt answers once every move that took its place before it has ended, so that once the halt
// is answered nothing more leaves INIT. Transfers already past INIT go on to their end.

import { readHalt, type HaltState } from '../db/halt-state.js';
import type { Sql } from '../db/sql.js';
import { within } from '../within.js';

export class HaltFlag {
  private state: HaltState = null;
  /** Moves out of INIT that took their place while not halted and have not ended. */
  private departing = 0;
  private readonly whenSettled: (() => void)[] = [];

  get current(): HaltState {
    return this.state;
  }

  /** Takes a place for a move out of INIT; false while halted (the move must not start). */
  enter(): boolean {
    if (this.state !== null) return false;
    this.departing += 1;
    return true;
  }

  /** Ends a move that `enter` let start, whatever its outcome. */
  leave(): void {
    if (this.departing <= 0) throw new Error('HaltFlag.leave without a matching enter');
    this.departing -= 1;
    if (this.departing === 0) for (const settled of this.whenSettled.splice(0)) settled();
  }

  /** Runs `move` with a place at the gate, or answers `held` without running it while halted. */
  async through<T, H>(move: () => Promise<T>, held: H): Promise<T | H> {
    if (!this.enter()) return held;
    try {
      return await move();
    } finally {
      this.leave();
    }
  }

  /**
   * Sets the state. A halt resolves once the moves out of INIT already under way have ended, or
   * after `settleMs` (a move waiting on a store that is away), answering how many were left.
   */
  async set(state: HaltState, settleMs: number): Promise<number> {
    this.state = state;
    if (state === null || this.departing === 0) return 0;
    const settled = new Promise<void>((resolve) => this.whenSettled.push(resolve));
    await within(settled, settleMs, null);
    return this.departing;
  }

  async refresh(sql: Sql): Promise<HaltState> {
    this.state = await readHalt(sql);
    return this.state;
  }
}
