// Statements PostgreSQL ran for one role on one database during a window, counted by the server
// itself: pg_stat_statements, loaded (shared_preload_libraries) on the benchmark's server only.
// The benchmark's own queries run as another role, so they are not counted. Transaction control
// (BEGIN, COMMIT, ROLLBACK) is counted apart: those are round trips, not work, and
// pg_stat_statements records COMMIT unreliably (seen here: a postgres.js transaction's COMMIT
// is sometimes absent while its BEGIN is present).

import type { Sql } from '../../src/db/sql.js';

const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|abort|end|start\s+transaction|savepoint|release|prepare\s+transaction)\b/i;
const QUERY_TEXT_CHARS_MAX = 160;

type Entry = { readonly calls: number; readonly execMs: number; readonly query: string };

/** pg_stat_statements' counters for one role and database at one moment, by queryid. */
export type StatementSnapshot = { readonly entries: ReadonlyMap<string, Entry>; readonly dealloc: number };

export type StatementCount = { readonly query: string; readonly calls: number; readonly execMs: number };

export type StatementCounts = {
  /** Statements that finished without error, transaction control left out. */
  readonly statements: number;
  /** BEGIN, COMMIT, ROLLBACK and the like, as pg_stat_statements recorded them. */
  readonly transactionControl: number;
  /** Server time spent executing those statements, in ms. */
  readonly execMs: number;
  /** Entries evicted meanwhile (pg_stat_statements.max reached): the counts would be low, so they are not trusted. */
  readonly evicted: boolean;
  /** Every statement counted, as normalised text, most frequent first. */
  readonly byStatement: readonly StatementCount[];
};

/** Who is counted: the service connects as `role` to `database`. */
export type StatementScope = { readonly role: string; readonly database: string };

export async function statementSnapshot(stats: Sql, scope: StatementScope): Promise<StatementSnapshot> {
  const rows = await stats<{ queryid: string; calls: string; exec_ms: number; query: string }[]>`
    SELECT s.queryid::text AS queryid, s.calls::text AS calls, s.total_exec_time AS exec_ms, s.query
      FROM pg_stat_statements AS s
     WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = ${scope.database})
       AND s.userid = (SELECT oid FROM pg_roles WHERE rolname = ${scope.role})`;
  const info = await stats<{ dealloc: string }[]>`SELECT dealloc::text AS dealloc FROM pg_stat_statements_info`;
  const entries = new Map<string, Entry>();
  for (const r of rows) entries.set(r.queryid, { calls: Number(r.calls), execMs: r.exec_ms, query: r.query });
  return { entries, dealloc: Number(info[0]?.dealloc ?? 0) };
}

/** What ran between two snapshots. */
export function statementsBetween(before: StatementSnapshot, after: StatementSnapshot): StatementCounts {
  let statements = 0;
  let transactionControl = 0;
  let execMs = 0;
  const counted: StatementCount[] = [];
  for (const [id, a] of after.entries) {
    const calls = a.calls - (before.entries.get(id)?.calls ?? 0);
    if (calls <= 0) continue;
    if (TRANSACTION_CONTROL.test(a.query)) {
      transactionControl += calls;
      continue;
    }
    const ms = a.execMs - (before.entries.get(id)?.execMs ?? 0);
    statements += calls;
    execMs += ms;
    counted.push({ query: a.query.replace(/\s+/g, ' ').trim().slice(0, QUERY_TEXT_CHARS_MAX), calls, execMs: Math.round(ms * 10) / 10 });
  }
  const byStatement = counted.sort((x, y) => y.calls - x.calls);
  return { statements, transactionControl, execMs: Math.round(execMs), evicted: after.dealloc !== before.dealloc, byStatement };
}

/** Starts counting now; `stop` answers what ran since, or null when there is nothing to count with. */
export async function countStatements(stats: Sql | null, scope: StatementScope): Promise<{ stop: () => Promise<StatementCounts | null> }> {
  if (stats === null) return { stop: async () => null };
  const before = await statementSnapshot(stats, scope);
  return { stop: async () => statementsBetween(before, await statementSnapshot(stats, scope)) };
}
