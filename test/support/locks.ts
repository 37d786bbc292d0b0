// Holds one FUNDING balance row locked from a session of the test's own, as another writer
// would, until the test releases it: requests that need the row wait inside the service.

import type { Sql } from '../../src/db/sql.js';

export type HeldRow = {
  /** Ends the holding transaction; safe to call more than once. */
  readonly release: () => void;
  /** Settles once the holding transaction has ended. */
  readonly done: Promise<unknown>;
};

export async function holdFundingRow(sql: Sql, userId: bigint | number, asset: string): Promise<HeldRow> {
  let locked!: () => void;
  let release!: () => void;
  const isLocked = new Promise<void>((resolve) => (locked = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const done = sql.begin(async (tx) => {
    await tx`SELECT 1 FROM funding_balances WHERE user_id = ${userId} AND asset = ${asset} FOR UPDATE`;
    locked();
    await released;
  });
  await isLocked;
  return { release, done };
}
