// The halt switch (MON-003, "HALT Service"): after a conservation violation, or an operator's
// halt, every NEW movement of money is refused with SERVICE_HALTED (transfers from any entry,
// external deposits and withdrawals) until an operator resumes. Transfers already in flight are
// still driven to a final state. It is stored in PostgreSQL, so a restart does not silently lift
// it; each change is handed to the listeners (the coordinator shards) before it is answered.

import { HALT_KEY, readHalt, type HaltState } from '../db/halt-state.js';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../log.js';

export type { HaltState } from '../db/halt-state.js';

type Listener = (state: HaltState) => Promise<void>;

export class HaltSwitch {
  private state: HaltState = null;
  private readonly listeners: Listener[] = [];

  private constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
  ) {}

  static async load(sql: Sql, log: Logger): Promise<HaltSwitch> {
    const s = new HaltSwitch(sql, log);
    s.state = await readHalt(sql);
    return s;
  }

  get current(): HaltState {
    return this.state;
  }

  /** Every change is passed to `listener` before halt() or resume() return. */
  onChange(listener: Listener): void {
    this.listeners.push(listener);
  }

  /** Halts; answers false when it was already halted. */
  async halt(reason: string): Promise<boolean> {
    if (this.state !== null) return false;
    const state = { reason, since: new Date().toISOString() };
    // Stored first, so a restart keeps it even if a listener never hears of it.
    await this.sql`INSERT INTO service_state (key, value) VALUES (${HALT_KEY}, ${JSON.stringify(state)}::text::jsonb)
                   ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`;
    this.state = state;
    await this.tell(state);
    return true;
  }

  async resume(): Promise<HaltState> {
    const was = this.state;
    await this.sql`DELETE FROM service_state WHERE key = ${HALT_KEY}`;
    this.state = null;
    await this.tell(null);
    return was;
  }

  private async tell(state: HaltState): Promise<void> {
    for (const listener of this.listeners) {
      // A listener that fails (a busy shard) still reads the stored state on its own timer.
      await listener(state).catch((error: unknown) =>
        this.log.error('a halt listener failed; it reads the stored halt on its next refresh', { error: String(error) }),
      );
    }
  }
}
