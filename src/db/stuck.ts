// The one definition of a stuck transfer (spec 002's escalation to an operator): unfinished
// after `stuckRetriesMax` retries, or `stuckAgeMs` after it was created. The watchdog tests one
// transfer in TypeScript; the operators' list and the alert measure ask PostgreSQL with the
// fragment below; both read the same two fields of the configuration.

import type postgres from 'postgres';
import { STATE_IDS } from '../domain/fsm.js';
import type { TransferView } from '../domain/transfer.js';
import type { Sql, Tx } from './sql.js';
import { ACCOUNT_TYPE } from './transfer-writes.js';

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

/**
 * The states where a transfer waits on an answer of UBSCore or PostgreSQL whose outcome is
 * unknown, and what it waits on: TARGET_PENDING (the target's credit, either direction; the funds
 * are in flight), and SOURCE_PENDING of a SPOT → FUNDING transfer (UBSCore's debit: the funds may
 * have left SPOT). Past TARGET_PENDING_ALERT_MS each raises its alert (MON-001,
 * TARGET_PENDING_TOO_LONG or SOURCE_PENDING_TOO_LONG), is swept even when no retry runs, and is
 * on the operators' stuck list with the advice below.
 */
export function unknownWaitOf(t: Pick<TransferView, 'state' | 'from' | 'to'>): UnknownWait | null {
  if (t.state === 'TARGET_PENDING') return { waitsOn: `the ${t.to} credit`, direction: `${t.from} → ${t.to}` };
  if (t.state === 'SOURCE_PENDING' && t.from === 'SPOT') return { waitsOn: 'the SPOT debit', direction: `${t.from} → ${t.to}` };
  return null;
}

export type UnknownWait = { readonly waitsOn: string; readonly direction: string };

/** What an operator does for a transfer waiting on an unknown outcome (docs/operations.md, the states table). */
export const UNKNOWN_WAIT_ADVICE =
  'retried until it is known, never given up: check UBSCore and PostgreSQL are up, then POST /admin/v1/transfers/:req_id/retry';

/** The same states as unknownWaitOf, as a condition on a transfers_tb row, entered more than `ageMs` ago. */
export function unknownWaitCondition(sql: Sql | Tx, ageMs: number): postgres.PendingQuery<postgres.Row[]> {
  return sql`((state = ${STATE_IDS.TARGET_PENDING} OR (state = ${STATE_IDS.SOURCE_PENDING} AND source_type = ${ACCOUNT_TYPE.SPOT}))
              AND updated_at < now() - make_interval(secs => ${ageMs / 1000}))`;
}
