// What a coordinator shard runs with. The transfer's own types are the domain's
// (src/domain/transfer.ts).

import type { CoordinatorSettings } from '../config/config.js';
import type { PgOwnerIdentity } from '../db/sql.js';

/**
 * What a coordinator shard runs with: the configuration's coordinator section (src/config/config.ts,
 * COORDINATOR_SETTINGS) whole, plus what only a shard has.
 */
export type CoordinatorConfig = CoordinatorSettings & {
  readonly shard: number;
  readonly shards: number;
  /** The PostgreSQL server's URL: the one configured, or the embedded server's. */
  readonly databaseUrl: string;
  /** The owner's tag and epoch: the shard's writes are fenced by it. */
  readonly owner: PgOwnerIdentity;
  /** Transfers one recovery-scan query reads (SCAN_BATCH_MAX; tests make it smaller). */
  readonly scanBatchMax: number;
  /** Retry timers a shard holds at once (RETRY_TIMERS_MAX). */
  readonly retryTimersMax: number;
};
