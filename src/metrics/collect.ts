// GET /metrics: the main thread's own series (HTTP latency), every coordinator shard's (state
// transitions, retries, mailbox depth), UBSCore's (commands, batches, WAL position), totals of
// finished transfers summed from the shards' transition counters, and aggregates read from
// PostgreSQL at scrape time: the unfinished transfers (through transfers_active, so a scrape
// reads what is in flight and never the whole of transfers_tb), alerts and pool use.

import type { Sql } from '../db/sql.js';
import { isTerminal, STATE_NAMES, stateName, type TransferStateName } from '../domain/fsm.js';
import { render, type MetricSnapshot, type Registry } from './registry.js';

export type UbsCounters = {
  readonly commands: number;
  readonly batches: number;
  readonly accounts: number;
  readonly walSeq: number;
  readonly metrics?: readonly MetricSnapshot[];
};

export type MetricSources = {
  readonly main: Registry;
  readonly sql: Sql;
  readonly shards: () => Promise<MetricSnapshot[]>;
  readonly ubs: () => Promise<UbsCounters | null>;
};

export const HTTP_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

const UNFINISHED_STATES: readonly TransferStateName[] = STATE_NAMES.filter((s) => !isTerminal(s));
const FINISHED_STATES: readonly TransferStateName[] = STATE_NAMES.filter((s) => isTerminal(s));
/** Debited at the source and not yet credited at the target or refunded. */
const FUNDS_IN_FLIGHT_STATES: ReadonlySet<TransferStateName> = new Set(['SOURCE_DONE', 'TARGET_PENDING', 'COMPENSATING']);

export async function collectMetrics(src: MetricSources): Promise<string> {
  const [shards, ubs, pg] = await Promise.all([src.shards(), src.ubs(), fromPostgres(src.sql)]);
  const ubsSeries: MetricSnapshot[] =
    ubs === null
      ? []
      : [
          gauge('ubscore_commands_total', 'Commands UBSCore processed since it started', ubs.commands, 'counter'),
          gauge('ubscore_batches_total', 'WAL batches UBSCore committed since it started (one sync each)', ubs.batches, 'counter'),
          gauge('ubscore_accounts', 'Spot accounts held by UBSCore', ubs.accounts),
          gauge('ubscore_wal_seq', 'Sequence number of UBSCore\'s last applied WAL record', ubs.walSeq),
          ...(ubs.metrics ?? []),
        ];
  return render([...src.main.snapshot(), ...shards, finishedTotals(shards), ...ubsSeries, ...pg]);
}

function gauge(name: string, help: string, value: number, type: 'gauge' | 'counter' = 'gauge'): MetricSnapshot {
  return { name, help, type, series: [{ labels: {}, value }] };
}

/**
 * transfers_finished_total{state}: the moves into each terminal state that the coordinators
 * counted in fsm_state_count, summed over the state they came from. A counter since the
 * coordinators started, like the transition counts it is made of, not an all-time table count.
 */
export function finishedTotals(shards: readonly MetricSnapshot[]): MetricSnapshot {
  const totals = new Map<string, number>(FINISHED_STATES.map((s) => [s, 0]));
  for (const m of shards) {
    if (m.name !== 'fsm_state_count' || m.type === 'histogram') continue;
    for (const s of m.series) {
      const to = s.labels.to;
      const sum = to === undefined ? undefined : totals.get(to);
      if (to !== undefined && sum !== undefined) totals.set(to, sum + Number(s.value));
    }
  }
  return {
    name: 'transfers_finished_total',
    help: 'Transfers the coordinators moved into each terminal state since they started (the sum of fsm_state_count by its to label)',
    type: 'counter',
    series: [...totals].map(([state, value]) => ({ labels: { state }, value })),
  };
}

type UnfinishedRow = { state: number; asset: string; n: number; units: string };

/**
 * The unfinished transfers by state and asset. transfers_active lists exactly them, and each is
 * found in transfers_tb by its req_id, so the rows read are as many as are in flight. Sequential
 * scans are off for this one transaction: on a small table, or with many transfers unfinished,
 * the planner would otherwise read the whole of transfers_tb to find them.
 */
async function unfinishedTransfers(sql: Sql): Promise<UnfinishedRow[]> {
  return sql.begin(async (tx) => {
    await tx`SET LOCAL enable_seqscan = off`;
    return tx<UnfinishedRow[]>`
      SELECT state, asset, count(*)::int AS n, sum(amount)::text AS units
        FROM transfers_tb WHERE req_id = ANY (ARRAY(SELECT req_id FROM transfers_active))
       GROUP BY state, asset`;
  });
}

/** What the operator console shows beside the metrics: the same unfinished read and WAL position. */
export type ServiceSnapshot = {
  readonly byState: ReadonlyMap<TransferStateName, number>;
  /** Smallest units per asset, in the states where funds are in flight. */
  readonly inFlight: ReadonlyMap<string, bigint>;
  /** null when UBSCore did not answer in time. */
  readonly walSeq: number | null;
};

export async function collectSnapshot(src: Pick<MetricSources, 'sql' | 'ubs'>): Promise<ServiceSnapshot> {
  const [rows, ubs] = await Promise.all([unfinishedTransfers(src.sql), src.ubs()]);
  return { ...summarise(rows), walSeq: ubs?.walSeq ?? null };
}

function summarise(unfinished: readonly UnfinishedRow[]): { byState: Map<TransferStateName, number>; inFlight: Map<string, bigint> } {
  const byState = new Map<TransferStateName, number>();
  const inFlight = new Map<string, bigint>();
  for (const r of unfinished) {
    // The table's CHECK admits only the FSM's state ids.
    const state = stateName(r.state);
    if (state === null) continue;
    byState.set(state, (byState.get(state) ?? 0) + r.n);
    if (FUNDS_IN_FLIGHT_STATES.has(state)) inFlight.set(r.asset, (inFlight.get(r.asset) ?? 0n) + BigInt(r.units));
  }
  return { byState, inFlight };
}

async function fromPostgres(sql: Sql): Promise<MetricSnapshot[]> {
  const [unfinished, alerts, pool] = await Promise.all([
    unfinishedTransfers(sql),
    sql<{ kind: string; n: number }[]>`SELECT kind, count(*)::int AS n FROM alerts GROUP BY kind`,
    sql<{ application: string; state: string; n: number }[]>`
      SELECT application_name AS application, coalesce(state, 'unknown') AS state, count(*)::int AS n
        FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1, 2`,
  ]);
  const { byState, inFlight } = summarise(unfinished);
  return [
    { name: 'transfers_by_state', help: 'Unfinished transfers in each non-terminal FSM state now', type: 'gauge', series: UNFINISHED_STATES.map((s) => ({ labels: { state: s }, value: byState.get(s) ?? 0 })) },
    { name: 'in_flight_amount_units', help: 'Funds debited at the source and not yet credited or refunded, in smallest units', type: 'gauge', series: [...inFlight].map(([asset, units]) => ({ labels: { asset }, value: units })) },
    { name: 'alerts_total', help: 'Alerts raised, by kind', type: 'counter', series: alerts.map((r) => ({ labels: { kind: r.kind }, value: r.n })) },
    { name: 'pg_connections', help: 'PostgreSQL connections of this database, by application and state', type: 'gauge', series: pool.map((r) => ({ labels: { application: r.application, state: r.state }, value: r.n })) },
  ];
}
