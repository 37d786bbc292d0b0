// The seq clock (migration 0011): which SPOT seq UBSCore had durable when. The owner's main thread
// ticks it once per retention pass; the retention reads its horizon from it (./retention-plan.ts), and the
// metrics the age of the oldest live processed-set entry.

import type { Sql } from '../../db/sql.js';

/**
 * Records that `durableSeq`, read from UBSCore before this call, was durable at PostgreSQL's now():
 * the insert's transaction begins after the read, so the row never dates a seq later than it was.
 * On the owner's fenced pool: a former owner's tick is refused (LF001).
 */
export async function tickSeqClock(sql: Sql, durableSeq: number): Promise<void> {
  if (!(Number.isSafeInteger(durableSeq) && durableSeq >= 0))
    throw new Error(`a durable seq must be a whole number >= 0, got ${durableSeq}`);
  await sql`INSERT INTO spot_seq_clock (at, seq) VALUES (now(), ${durableSeq}::bigint) ON CONFLICT (at) DO NOTHING`;
}

/** Deletes the rows older than twice the retention but the one that defines the horizon; answers how many went. */
export async function trimSeqClock(sql: Sql, retentionS: number): Promise<number> {
  // The newest row at or before the retention's cut defines H: it stays, however old, so a start
  // after a long stop prunes at once instead of a retention later.
  const gone = await sql`
    DELETE FROM spot_seq_clock
     WHERE at < now() - make_interval(secs => ${2 * retentionS})
       AND at < (SELECT max(at) FROM spot_seq_clock WHERE at <= now() - make_interval(secs => ${retentionS}))`;
  return gone.count;
}

/**
 * How long ago the entry at `seq` was applied, in seconds, to within one tick of the clock: from
 * the newest row at or below it; with none, from the oldest row (the entry was durable by then,
 * so this is a lower bound). 0 with no row at all.
 */
export async function seqAgeS(sql: Sql, seq: number): Promise<number> {
  const [row] = await sql<{ age_s: number | null }[]>`
    SELECT extract(epoch FROM now() - coalesce(
      (SELECT at FROM spot_seq_clock WHERE seq <= ${seq}::bigint ORDER BY at DESC LIMIT 1),
      (SELECT min(at) FROM spot_seq_clock)))::float8 AS age_s`;
  return Math.max(0, row?.age_s ?? 0);
}
