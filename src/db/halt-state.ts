// The stored halt (MON-003): one row of service_state, read by every thread that creates money
// movements, so a restart, or a thread that missed a message, still honours it.
//
// Every write of the row, a halt or a resume, carries a version one above the stored one,
// numbered in the same statement under the row's lock. A shard's view of the halt is set both by
// the main thread's control message and by its own periodic read; the version orders the two, so
// a read that began before a halt committed and ends after the message came never undoes it.

import type { Sql } from './sql.js';

export type HaltState = { readonly reason: string; readonly since: string } | null;

/** A halt state and the version of the write that stored it; 0 for a row written without one, or none. */
export type VersionedHalt = { readonly state: HaltState; readonly version: number };

export const HALT_KEY = 'halt';

export async function readHalt(sql: Sql): Promise<VersionedHalt> {
  const rows = await sql<{ value: unknown }[]>`SELECT value FROM service_state WHERE key = ${HALT_KEY}`;
  if (rows.length === 0) return { state: null, version: 0 };
  // Halts stored before it was written as JSON text hold a JSON string of the object.
  const raw = rows[0]?.value;
  const value: unknown = typeof raw === 'string' ? JSON.parse(raw) : raw;
  const fields = (typeof value === 'object' && value !== null ? value : {}) as {
    halted?: unknown;
    reason?: unknown;
    since?: unknown;
    version?: unknown;
  };
  const version = typeof fields.version === 'number' && Number.isSafeInteger(fields.version) ? fields.version : 0;
  // A resume is stored as a row with halted false (its version orders it); a row without the field is a halt.
  if (fields.halted === false) return { state: null, version };
  return {
    state: {
      reason: typeof fields.reason === 'string' ? fields.reason : 'halted (no reason stored)',
      since: typeof fields.since === 'string' ? fields.since : new Date(0).toISOString(),
    },
    version,
  };
}

/**
 * Stores `state` (null: resumed) with the next version, and answers that version. The number is
 * taken from the row this statement locks, so two writes never share one.
 */
export async function writeHalt(sql: Sql, state: HaltState): Promise<number> {
  const value = JSON.stringify(state === null ? { halted: false } : { halted: true, ...state });
  const rows = await sql<{ version: number }[]>`
    INSERT INTO service_state (key, value) VALUES (${HALT_KEY}, ${value}::text::jsonb || '{"version": 1}'::jsonb)
    ON CONFLICT (key) DO UPDATE
      SET value = EXCLUDED.value || jsonb_build_object('version', COALESCE((service_state.value->>'version')::int, 0) + 1),
          updated_at = now()
    RETURNING (value->>'version')::int AS version`;
  const version = rows[0]?.version;
  if (typeof version !== 'number') throw new Error('the halt write answered no version');
  return version;
}

/** A shard that did not take a halt or resume, and why; shard null when none could be told. */
export type HaltMiss = { readonly shard: number | null; readonly reason: string };
