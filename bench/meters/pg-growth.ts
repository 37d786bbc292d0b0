// PostgreSQL's growth per million committed transfers, by table and index: the bytes each
// relation of the service's schema gained between a reading before the load levels and one after
// them, over the transfers committed in between. A table's bytes are its heap with TOAST, free
// space and visibility maps (pg_table_size); an index's its own (pg_relation_size). What grows
// with every transfer shows here; what grows with the users or assets (balances) stays near 0.

import type { Sql } from '../../src/db/sql.js';
import { STATE_IDS } from '../../src/domain/fsm.js';

export type PgReading = { readonly committed: number; readonly bytes: ReadonlyMap<string, number> };
export type PgGrowth = {
  readonly committed: number;
  /** Bytes per million committed transfers, largest first; the name says table or index. */
  readonly perMillionTransfers: readonly { readonly relation: string; readonly bytes: number }[];
  readonly totalPerMillionTransfers: number;
};

export async function readPg(sql: Sql): Promise<PgReading> {
  const rows = await sql<{ relation: string; bytes: string }[]>`
    SELECT (CASE c.relkind WHEN 'i' THEN 'index ' ELSE 'table ' END) || c.relname AS relation,
           (CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END)::text AS bytes
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i')`;
  const committed = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state = ${STATE_IDS.COMMITTED}`;
  return { committed: committed[0]?.n ?? 0, bytes: new Map(rows.map((r) => [r.relation, Number(r.bytes)])) };
}

/** The growth between two readings; null when no transfer committed in between. */
export function pgGrowth(before: PgReading, after: PgReading): PgGrowth | null {
  const committed = after.committed - before.committed;
  if (committed <= 0) return null;
  const perMillionTransfers = [...after.bytes]
    .map(([relation, bytes]) => ({ relation, bytes: Math.round(((bytes - (before.bytes.get(relation) ?? 0)) / committed) * 1_000_000) }))
    .sort((a, b) => b.bytes - a.bytes || a.relation.localeCompare(b.relation));
  const totalPerMillionTransfers = perMillionTransfers.reduce((sum, r) => sum + r.bytes, 0);
  return { committed, perMillionTransfers, totalPerMillionTransfers };
}

/**
 * WAL bytes the server has written since its statistics were reset (pg_stat_wal): the difference
 * over a window is what the window's work wrote to the log, replicated and archived, the
 * benchmark's own few reads included.
 */
export async function walBytes(sql: Sql): Promise<number> {
  const [row] = await sql<{ bytes: string }[]>`SELECT wal_bytes::text AS bytes FROM pg_stat_wal`;
  return Number(row?.bytes ?? 0);
}
