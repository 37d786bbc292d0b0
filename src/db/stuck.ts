// The one definition of a stuck transfer (spec 002's escalation to an operator): unfinished
// after `stuckRetriesMax` retries, or `stuckAgeMs` after it was created. The watchdog tests one
// transfer in TypeScript; the operators' list and the alert measure ask PostgreSQL with the
// fragment below; both read the same two fields of the configuration.

import type postgres from 'postgres';
import type { Sql, Tx } from './sql.js';

export type StuckRule = { readonly stuckRetriesMax: number; readonly stuckAgeMs: number };

/**
 * Whether a moment PostgreSQL stored in microseconds, read here in milliseconds (cut, not rounded),
 * is surely `ageMs` or more before `nowMs`. The stored moment may be up to a millisecond later
 * than `atIso` shows, so the shown difference must exceed `ageMs`: a threshold is never met early.
 */
export function agedAtLeast(atIso: string, ageMs: number, nowMs: number): boolean {
  return nowMs - Date.parse(atIso) > ageMs;
}

/** Whether a transfer, as it is at `nowMs`, needs an operator; its retries go on either way. */
export function isStuck(t: { readonly retryCount: number; readonly createdAt: string }, rule: StuckRule, nowMs: number): boolean {
  return t.retryCount >= rule.stuckRetriesMax || agedAtLeast(t.createdAt, rule.stuckAgeMs, nowMs);
}

/** The same test as a condition on a transfers_tb row (its retry_count and created_at). */
export function stuckCondition(sql: Sql | Tx, rule: StuckRule): postgres.PendingQuery<postgres.Row[]> {
  return sql`(retry_count >= ${rule.stuckRetriesMax} OR created_at <= now() - make_interval(secs => ${rule.stuckAgeMs / 1000}))`;
}
