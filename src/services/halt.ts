// The halt switch (MON-003, "HALT Service"): after a conservation violation, or an operator's
// halt, every NEW movement of money is refused with SERVICE_HALTED (transfers from any entry,
// external deposits and withdrawals) until an operator resumes. Transfers already in flight are
// still driven to a final state. It is stored in PostgreSQL, with a version that orders every
// halt and resume, so a restart does not silently lift it; each change is handed to the
// listeners (the coordinator shards) before it is answered. A shard that did not take it is
// named in `unheld` and told again, with a capped backoff, until it does or a newer change
// replaces it; meanwhile that shard reads the stored halt on its own timer.

import { type HaltMiss, type HaltState, type VersionedHalt, readHalt, writeHalt } from '../db/halt-state.js';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../log.js';
import { backoffMs } from '../backoff.js';
import { HALT_RETELL_BASE_MS, HALT_RETELL_CAP_MS } from '../limits.js';

export type { HaltMiss, HaltState } from '../db/halt-state.js';

/** Tells a change to `only` these shards (null: every one); answers the shards that did not take it. */
type Listener = (halt: VersionedHalt, only: readonly number[] | null) => Promise<readonly HaltMiss[]>;

export class HaltSwitch {
  /** The state in force, with the version of the write that stored it. */
  private stored: VersionedHalt = { state: null, version: 0 };
  private readonly listeners: Listener[] = [];
  /** The shards that have not yet taken the current state, told again by `retell`. */
  private missing: readonly HaltMiss[] = [];
  private retellTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  private constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  static async load(sql: Sql, log: Logger): Promise<HaltSwitch> {
    const s = new HaltSwitch(sql, log);
    s.stored = await readHalt(sql);
    return s;
  }

  get current(): HaltState {
    return this.stored.state;
  }

  /** The shards that have not taken the current state yet (it is told to them again until they do). */
  get unheld(): readonly HaltMiss[] {
    return this.missing;
  }

  /** Every change is passed to `listener` before halt() or resume() return. */
  onChange(listener: Listener): void {
    this.listeners.push(listener);
  }

  /** Halts; answers false when it was already halted. */
  async halt(reason: string): Promise<boolean> {
    if (this.stored.state !== null) return false;
    const state = { reason, since: new Date().toISOString() };
    // Stored first, so a restart keeps it even if a listener never hears of it.
    await this.change(state);
    return true;
  }

  /** Resumes; answers the halt it lifted (null when it was not halted). */
  async resume(): Promise<HaltState> {
    const was = this.stored.state;
    await this.change(null);
    return was;
  }

  /** Stops telling shards again (the service stops). */
  stop(): void {
    this.stopped = true;
    if (this.retellTimer !== null) clearTimeout(this.retellTimer);
    this.retellTimer = null;
  }

  private async change(state: HaltState): Promise<void> {
    const version = await writeHalt(this.sql, state);
    this.stored = { state, version };
    // A retry of the change this one replaces stops here: the shards are told this one instead.
    if (this.retellTimer !== null) clearTimeout(this.retellTimer);
    this.retellTimer = null;
    this.missing = await this.tell(this.stored, null);
    if (this.missing.length > 0) this.retell(this.stored, 0);
  }

  private async tell(halt: VersionedHalt, only: readonly number[] | null): Promise<readonly HaltMiss[]> {
    const missed: HaltMiss[] = [];
    for (const listener of this.listeners) {
      const misses = await listener(halt, only).catch((error: unknown): HaltMiss[] => [{ shard: null, reason: String(error) }]);
      missed.push(...misses);
    }
    if (missed.length > 0)
      this.log.error(halt.state === null ? 'a shard did not take the resume; told again' : 'a shard did not take the halt; told again', {
        version: halt.version,
        shards: missed.map((m) => `${m.shard ?? 'all'}: ${m.reason}`),
      });
    return missed;
  }

  /** Tells `halt` again to the shards that missed it, until none does or a newer change replaced it. */
  private retell(halt: VersionedHalt, attempt: number): void {
    if (this.stopped || this.retellTimer !== null) return;
    const delay = backoffMs({ baseMs: HALT_RETELL_BASE_MS, capMs: HALT_RETELL_CAP_MS }, attempt);
    this.retellTimer = setTimeout(() => {
      this.retellTimer = null;
      void this.retold(halt, attempt);
    }, delay);
    this.retellTimer.unref();
  }

  private async retold(halt: VersionedHalt, attempt: number): Promise<void> {
    if (this.stopped || halt.version !== this.stored.version) return;
    const only = this.missing.some((m) => m.shard === null) ? null : this.missing.map((m) => m.shard ?? 0);
    const misses = await this.tell(halt, only);
    // A newer change was told meanwhile: it has its own count of the shards that missed it.
    if (halt.version !== this.stored.version) return;
    this.missing = misses;
    if (misses.length > 0) this.retell(halt, attempt + 1);
    else this.log.warn('every shard now holds the halt state', { version: halt.version, halted: halt.state !== null });
  }
}
