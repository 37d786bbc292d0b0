// The plan of one pass of the processed set's retention: the horizon H and the keys
// that must stay (KEEP), read from PostgreSQL, which knows what is final; UBSCore, which knows
// keys and seqs, prunes by it (UbsControlApi.prune), and the owner deletes the same entries from
// spot_processed (./processed-rows.ts).
//
// An entry (op, key) may go iff its seq <= H and its key is not in KEEP:
// - H is the last SPOT seq UBSCore had durable at least the retention ago (./seq-clock.ts), so
//   the entry was applied at least that long ago; and H is at most the durable seq now, so an
//   operation applied after this plan is above it.
// - KEEP holds the req_id of every unfinished transfer (transfers_active) and the ref of every
//   PENDING external movement: the only things anything still drives to UBSCore. A final
//   transfer is never driven again (each step is a compare-and-swap on its state, the scan and an
//   operator's retry take unfinished ones only, a repeated client_order_id is answered from
//   transfers_tb); a DONE or REJECTED movement's repeat is answered from its own row (its ref is
//   unique) without UBSCore. A transfer or movement created after the plan's snapshot meets
//   UBSCore after it, above H.
// Both are read in one REPEATABLE READ snapshot, so KEEP is the unfinished set of one instant.

import type { Sql } from '../../db/sql.js';

export type RetentionPlan = {
  /** H: entries at or below it may go, unless kept. 0: nothing is old enough yet. */
  readonly throughSeq: number;
  /** Every req_id and ref that must stay, whatever its seq. */
  readonly keep: readonly string[];
  /** PostgreSQL's clock when the snapshot was taken. */
  readonly plannedAt: Date;
};

/** Reads H and KEEP in one snapshot; read-only, so a standby's connection (which may write nothing) plans too. */
export async function planRetention(sql: Sql, retentionS: number): Promise<RetentionPlan> {
  if (!(Number.isSafeInteger(retentionS) && retentionS > 0))
    throw new Error(`retention must be a positive whole number of seconds, got ${retentionS}`);
  return sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
    const [horizon] = await tx<{ h: bigint; planned_at: Date }[]>`
      SELECT coalesce(max(seq), 0) AS h, now() AS planned_at
        FROM spot_seq_clock WHERE at <= now() - make_interval(secs => ${retentionS})`;
    if (horizon === undefined) throw new Error('PostgreSQL answered no horizon');
    const transfers = await tx<{ req_id: string }[]>`SELECT req_id FROM transfers_active`;
    const movements = await tx<{ ref: string }[]>`SELECT ref FROM external_movements WHERE state = 'PENDING'`;
    const throughSeq = Number(horizon.h);
    if (!Number.isSafeInteger(throughSeq)) throw new Error(`the seq clock's horizon ${horizon.h} is not a safe integer`);
    return {
      throughSeq,
      keep: [...transfers.map((t) => t.req_id), ...movements.map((m) => m.ref)],
      plannedAt: horizon.planned_at,
    };
  });
}
