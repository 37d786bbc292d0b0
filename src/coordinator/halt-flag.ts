// A coordinator shard's view of the halt (MON-003), and the gate every move out of INIT passes.
// The state is set from the main thread's control message at once, and re-read from PostgreSQL
// at start, on a timer, and before each recovery pass and each retry timer's drive (the moves
// out of INIT that no control message gates: shard.ts), so a shard that missed a message, or
// started while halted, still holds its transfers. Each state comes with the version of the write that stored it
// (src/db/halt-state.ts): a state older than the one held is dropped, so a read that straddled a
// halt never lifts it, and a halt and a resume are taken in the order they were written.
//
// A shard that cannot tell whether the service is halted holds its transfers: once the stored
// state has been read, a view not confirmed (by a read or a message) for `unknownAfterMs` counts
// as halted until a read succeeds again.
//
// While halted no transfer leaves INIT: funds not yet moved stay where they are, whoever drives
// the transfer (the HTTP path, a retry timer, the recovery scan, an operator's retry). A move out
// of INIT (a creation that debits its source, a step from INIT) takes a place at the gate first;
// a halt answers once every move that took its place before it has ended, so that once the halt
// is answered nothing more leaves INIT. Transfers already past INIT go on to their end.

import { readHalt, type HaltState, type VersionedHalt } from '../db/halt-state.js';
import type { Sql } from '../db/sql.js';
import { within } from '../within.js';

type HaltFlagOptions = {
  /** How long a view stays trusted without a successful read or message; unbounded when absent. */
  readonly unknownAfterMs?: number;
  readonly now?: () => number;
};

export class HaltFlag {
  private state: HaltState = null;
  /** The version of the write `state` came from; -1 before any is known. */
  private version = -1;
  /** When the view was last confirmed by a read or a message; null until the store is first read. */
  private confirmedAt: number | null = null;
  /** Moves out of INIT that took their place while not halted and have not ended. */
  private departing = 0;
  private readonly whenSettled: (() => void)[] = [];
  /** The read of the stored state under way, and the one queued behind it for the callers that came meanwhile. */
  private reading: Promise<HaltState> | null = null;
  private nextRead: Promise<HaltState> | null = null;

  constructor(private readonly options: HaltFlagOptions = {}) {}

  /** The halt in force: the one held, or, when the view is too old to trust, an unknown state counted as halted. */
  get current(): HaltState {
    if (this.state !== null || !this.unknown()) return this.state;
    return { reason: 'halt state unknown: the stored halt could not be read', since: new Date(this.confirmedAt ?? 0).toISOString() };
  }

  /** The version of the state held. */
  get heldVersion(): number {
    return this.version;
  }

  /** Takes a place for a move out of INIT; false while halted or unknown (the move must not start). */
  enter(): boolean {
    if (this.current !== null) return false;
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
   * Takes a state from the control message, unless a newer one is held. A halt resolves once the
   * moves out of INIT already under way have ended, or after `settleMs` (a move waiting on a store
   * that is away), answering how many were left.
   */
  async set(halt: VersionedHalt, settleMs: number): Promise<number> {
    this.take(halt, false);
    if (this.current === null || this.departing === 0) return 0;
    const settled = new Promise<void>((resolve) => this.whenSettled.push(resolve));
    await within(settled, settleMs, null);
    return this.departing;
  }

  /**
   * Re-reads the stored state; a read older than the state held changes nothing. Answers the state
   * in force. Every caller gets a read that started after its call, and the callers that arrive
   * while one read runs share the next one: under load thousands of retry timers fire each second,
   * and one read per timer would be a PostgreSQL round trip per transfer.
   */
  refresh(sql: Sql): Promise<HaltState> {
    if (this.reading === null) return this.startRead(sql);
    this.nextRead ??= this.reading.then(
      () => this.startRead(sql),
      () => this.startRead(sql),
    );
    return this.nextRead;
  }

  private startRead(sql: Sql): Promise<HaltState> {
    this.nextRead = null;
    const read = readHalt(sql).then((halt) => {
      this.take(halt, true);
      return this.current;
    });
    this.reading = read;
    const done = (): void => {
      if (this.reading === read) this.reading = null;
    };
    read.then(done, done);
    return read;
  }

  /** Holds `halt` unless a newer state is held; a read starts the watch on the view's age, a message renews it. */
  private take(halt: VersionedHalt, read: boolean): void {
    if (read || this.confirmedAt !== null) this.confirmedAt = (this.options.now ?? Date.now)();
    if (halt.version < this.version) return;
    this.state = halt.state;
    this.version = halt.version;
  }

  private unknown(): boolean {
    const { unknownAfterMs, now } = this.options;
    if (unknownAfterMs === undefined || this.confirmedAt === null) return false;
    return (now ?? Date.now)() - this.confirmedAt > unknownAfterMs;
  }
}
