// The stored halt (MON-003): one row of service_state, read by every thread that creates money
// movements, so a restart, or a thread that missed a message, still honours it.

import type { Sql } from './sql.js';

export type HaltState = { readonly reason: string; readonly since: string } | null;

export const HALT_KEY = 'halt';

export async function readHalt(sql: Sql): Promise<HaltState> {
  const rows = await sql<{ value: { reason: string; since: string } }[]>`SELECT value FROM service_state WHERE key = ${HALT_KEY}`;
  const value = rows[0]?.value;
  return value === undefined ? null : { reason: value.reason, since: value.since };
}
