// The unfinished-transfer measures of spec 002's alert table, from cheap reads: the backlog is a
// count of transfers_active (the unfinished list, never transfers_tb), and the per-row measures
// read at most `rowsMax` unfinished transfers, oldest first, each found by its req_id.

import type { Sql } from '../db/sql.js';
import { stuckCondition, type StuckRule } from '../db/stuck.js';
import type { Measures } from './rules.js';

export type UnfinishedMeasures = Pick<Measures, 'backlog' | 'sampled' | 'retrying' | 'escalated' | 'retriesSum'>;

type Row = { sampled: number; retrying: number; escalated: number; retries_sum: string };

export async function readUnfinished(sql: Sql, opts: StuckRule & { readonly rowsMax: number }): Promise<UnfinishedMeasures> {
  return sql.begin(async (tx) => {
    // As for the metrics: the planner must not read the whole of transfers_tb to find them.
    await tx`SET LOCAL enable_seqscan = off`;
    const backlog = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_active`;
    const rows = await tx<Row[]>`
      SELECT count(*)::int AS sampled,
             count(*) FILTER (WHERE retry_count > 0)::int AS retrying,
             count(*) FILTER (WHERE ${stuckCondition(tx, opts)})::int AS escalated,
             coalesce(sum(retry_count), 0)::text AS retries_sum
        FROM transfers_tb
       WHERE req_id = ANY (ARRAY(SELECT req_id FROM transfers_active ORDER BY req_id LIMIT ${opts.rowsMax}))`;
    const r = rows[0];
    return {
      backlog: backlog[0]?.n ?? 0,
      sampled: r?.sampled ?? 0,
      retrying: r?.retrying ?? 0,
      escalated: r?.escalated ?? 0,
      retriesSum: Number(r?.retries_sum ?? 0),
    };
  });
}
