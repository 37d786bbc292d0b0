// The PostgreSQL schema: its versioned migrations (src/db/migrations/*.sql) and its functions
// (src/db/migrations/repeatable/*.sql), both applied by src/db/migrations.ts, and the demo assets
// of development mode. Amounts are BIGINT smallest units.

import type { Sql } from './sql.js';

export { checkMigrated, migrate, MigrationError, schemaVersion } from './migrations.js';

/** The demo assets `make run` seeds: 8 decimals, 1 unit minimum, 1,000,000 whole coins maximum. */
const DEMO_ASSETS = ['BTC', 'USDT', 'ETH'] as const;
const DEMO_PRECISION = 8;
const DEMO_MAX_UNITS = 1_000_000n * 10n ** BigInt(DEMO_PRECISION);

/** Seeds the demo assets once; an operator's later change to one is kept. */
export async function seedDemoAssets(sql: Sql): Promise<void> {
  for (const symbol of DEMO_ASSETS) {
    await sql`
      INSERT INTO assets (symbol, precision, min_transfer_units, max_transfer_units)
      VALUES (${symbol}, ${DEMO_PRECISION}, ${1n}, ${DEMO_MAX_UNITS})
      ON CONFLICT (symbol) DO NOTHING`;
  }
}
