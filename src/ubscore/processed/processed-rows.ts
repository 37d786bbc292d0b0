// The owner's half of a retention pass in PostgreSQL: spot_processed (the processed-set entries
// archived out of spot_log, which a rebuild from PostgreSQL loads) loses the same entries UBSCore
// prunes, so a rebuilt DATA_DIR holds no more than the live one. Read in pages in seq order
// (spot_processed_seq_idx, migration 0011) below the horizon only, deleted by key, one bounded
// statement each, on the owner's fenced pool.

import type { Sql } from '../../db/sql.js';
import type { RetentionPlan } from './retention-plan.js';

/** The key a spot_processed row is stored under: the op code's byte, then the req_id or ref in ASCII (wal/processed-key.ts). */
export function keyOfProcessedRow(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset + 1, key.length - 1).toString('latin1');
}

/**
 * Deletes every spot_processed row whose seq is at most the plan's horizon and whose key is not
 * kept, `pageRows` rows read per page; answers how many went. Kept rows below the horizon are
 * read again at the next pass: they are the unfinished ones, few.
 */
export async function deleteProcessedRows(sql: Sql, plan: Pick<RetentionPlan, 'throughSeq' | 'keep'>, pageRows: number): Promise<number> {
  if (!(Number.isSafeInteger(pageRows) && pageRows > 0)) throw new Error(`pageRows must be a positive whole number, got ${pageRows}`);
  const keep = new Set(plan.keep);
  let after: { seq: bigint; key: Buffer } = { seq: -1n, key: Buffer.alloc(0) };
  let deleted = 0;
  for (;;) {
    const page = await sql<{ key: Buffer; seq: bigint }[]>`
      SELECT key, seq FROM spot_processed
       WHERE seq <= ${plan.throughSeq}::bigint AND (seq, key) > (${after.seq}::bigint, ${after.key})
       ORDER BY seq, key LIMIT ${pageRows}`;
    const last = page[page.length - 1];
    if (last === undefined) return deleted;
    const doomed = page.filter((row) => !keep.has(keyOfProcessedRow(row.key))).map((row) => row.key.toString('hex'));
    if (doomed.length > 0) {
      // The horizon again in the statement itself: a row is never deleted above it, whatever the page said.
      const gone = await sql`
        DELETE FROM spot_processed
         WHERE key IN (SELECT decode(k, 'hex') FROM unnest(${doomed}::text[]) AS u(k)) AND seq <= ${plan.throughSeq}::bigint`;
      deleted += gone.count;
    }
    after = { seq: last.seq, key: last.key };
  }
}
