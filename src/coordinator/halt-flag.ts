// A coordinator shard's view of the halt (MON-003): set from the main thread's control message
// at once, and re-read from PostgreSQL at start and on a timer, so a shard that missed a
// message, or started while halted, still refuses new transfers.

import { readHalt, type HaltState } from '../db/halt-state.js';
import type { Sql } from '../db/sql.js';

export class HaltFlag {
  private state: HaltState = null;

  get current(): HaltState {
    return this.state;
  }

  set(state: HaltState): void {
    this.state = state;
  }

  async refresh(sql: Sql): Promise<HaltState> {
    this.state = await readHalt(sql);
    return this.state;
  }
}
