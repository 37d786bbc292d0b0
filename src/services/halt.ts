// The halt switch (MON-003): after a conservation violation, new transfers are refused with
// SERVICE_HALTED until an operator resumes. It is stored in PostgreSQL, so a restart does not
// silently lift it; reads, admin calls and transfers already in flight carry on.

import type { Sql } from '../db/sql.js';

export type HaltState = { readonly reason: string; readonly since: string } | null;

const HALT_KEY = 'halt';

export class HaltSwitch {
  private state: HaltState = null;

  private constructor(private readonly sql: Sql) {}

  static async load(sql: Sql): Promise<HaltSwitch> {
    const s = new HaltSwitch(sql);
    const rows = await sql<{ value: { reason: string; since: string } }[]>`SELECT value FROM service_state WHERE key = ${HALT_KEY}`;
    s.state = rows[0]?.value ?? null;
    return s;
  }

  get current(): HaltState {
    return this.state;
  }

  /** Halts; answers false when it was already halted. */
  async halt(reason: string): Promise<boolean> {
    if (this.state !== null) return false;
    const state = { reason, since: new Date().toISOString() };
    await this.sql`INSERT INTO service_state (key, value) VALUES (${HALT_KEY}, ${JSON.stringify(state)}::jsonb)
                   ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`;
    this.state = state;
    return true;
  }

  async resume(): Promise<HaltState> {
    const was = this.state;
    await this.sql`DELETE FROM service_state WHERE key = ${HALT_KEY}`;
    this.state = null;
    return was;
  }
}
