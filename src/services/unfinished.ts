// The unfinished transfers by state and asset, with the age of the oldest, read through
// transfers_active so a scrape reads what is in flight and never the whole of transfers_tb. GET
// /metrics and the operator console both read it.

import type { Sql } from '../db/sql.js';
import { FUNDS_IN_FLIGHT_STATES, stateName, type TransferStateName } from '../domain/fsm.js';

type UnfinishedRow = { state: number; asset: string; n: number; units: string; oldest_age_s: number };

/**
 * transfers_active lists exactly the unfinished transfers, and each is found in transfers_tb by
 * its req_id (its primary key), so the rows read are as many as are in flight. Sequential scans
 * are off for this one transaction: on a small table, or with many transfers unfinished, the
 * planner would otherwise read the whole of transfers_tb to find them.
 */
export async function unfinishedTransfers(sql: Sql): Promise<UnfinishedRow[]> {
  return sql.begin(async (tx) => {
    await tx`SET LOCAL enable_seqscan = off`;
    return tx<UnfinishedRow[]>`
      SELECT state, asset, count(*)::int AS n, sum(amount)::text AS units,
             extract(epoch FROM now() - min(created_at))::float8 AS oldest_age_s
        FROM transfers_tb WHERE req_id = ANY (ARRAY(SELECT req_id FROM transfers_active))
       GROUP BY state, asset`;
  });
}

export type Unfinished = {
  readonly byState: ReadonlyMap<TransferStateName, number>;
  /** Smallest units per asset, in the states where funds are in flight: exact, never a float. */
  readonly inFlight: ReadonlyMap<string, bigint>;
  /** Seconds since the oldest unfinished transfer in each state was created; absent with none. */
  readonly oldestAgeS: ReadonlyMap<TransferStateName, number>;
};

export function summarise(rows: readonly UnfinishedRow[]): Unfinished {
  const byState = new Map<TransferStateName, number>();
  const inFlight = new Map<string, bigint>();
  const oldestAgeS = new Map<TransferStateName, number>();
  for (const r of rows) {
    // The table's CHECK admits only the FSM's state ids.
    const state = stateName(r.state);
    if (state === null) continue;
    byState.set(state, (byState.get(state) ?? 0) + r.n);
    oldestAgeS.set(state, Math.max(oldestAgeS.get(state) ?? 0, r.oldest_age_s));
    if (FUNDS_IN_FLIGHT_STATES.has(state)) inFlight.set(r.asset, (inFlight.get(r.asset) ?? 0n) + BigInt(r.units));
  }
  return { byState, inFlight, oldestAgeS };
}

/** What the operator console shows beside the metrics: the same unfinished read and WAL position. */
export type ServiceSnapshot = Omit<Unfinished, 'oldestAgeS'> & {
  /** null when UBSCore did not answer in time. */
  readonly walSeq: number | null;
};

export async function collectSnapshot(src: {
  readonly sql: Sql;
  readonly ubs: () => Promise<{ readonly walSeq: number } | null>;
}): Promise<ServiceSnapshot> {
  const [rows, ubs] = await Promise.all([unfinishedTransfers(src.sql), src.ubs()]);
  const { byState, inFlight } = summarise(rows);
  return { byState, inFlight, walSeq: ubs?.walSeq ?? null };
}
