// The stored halt (MON-003): one row of service_state, read by every thread that creates money
// movements, so a restart, or a thread that missed a message, still honours it.

import type { Sql } from './sql.js';

export type HaltState = { readonly reason: string; readonly since: string } | null;

export const HALT_KEY = 'halt';

export async function readHalt(sql: Sql): Promise<HaltState> {
  const rows = await sql<{ value: unknown }[]>`SELECT value FROM service_state WHERE key = ${HALT_KEY}`;
  if (rows.length === 0) return null;
  // Halts stored before it was written as JSON text hold a JSON string of the object.
  const raw = rows[0]?.value;
  const value: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
  const { reason, since } = (typeof value === 'object' && value !== null ? value : {}) as { reason?: unknown; since?: unknown };
  return {
    reason: typeof reason === 'string' ? reason : 'halted (no reason stored)',
    since: typeof since === 'string' ? since : new Date(0).toISOString(),
  };
}
