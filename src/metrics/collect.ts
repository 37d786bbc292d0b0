// GET /metrics: the main thread's own series (HTTP latency), every coordinator shard's (state
// transitions, retries, mailbox depth), UBSCore's (commands, batches, WAL position), and
// aggregates read from PostgreSQL at scrape time (transfers by state, in flight, alerts, pool).

import type { Sql } from '../db/sql.js';
import { STATE_NAMES, stateName } from '../domain/fsm.js';
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
  return render([...src.main.snapshot(), ...shards, ...ubsSeries, ...pg]);
}

function gauge(name: string, help: string, value: number, type: 'gauge' | 'counter' = 'gauge'): MetricSnapshot {
  return { name, help, type, series: [{ labels: {}, value }] };
}

async function fromPostgres(sql: Sql): Promise<MetricSnapshot[]> {
  const [states, flight, alerts, pool] = await Promise.all([
    sql<{ state: number; n: number }[]>`SELECT state, count(*)::int AS n FROM transfers_tb GROUP BY state`,
    sql<{ asset: string; units: string }[]>`SELECT asset, sum(amount)::text AS units FROM transfers_tb WHERE state IN (20, 30, -20) GROUP BY asset`,
    sql<{ kind: string; n: number }[]>`SELECT kind, count(*)::int AS n FROM alerts GROUP BY kind`,
    sql<{ application: string; state: string; n: number }[]>`
      SELECT application_name AS application, coalesce(state, 'unknown') AS state, count(*)::int AS n
        FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1, 2`,
  ]);
  const byState = new Map(states.map((r) => [stateName(r.state) ?? String(r.state), r.n]));
  return [
    { name: 'transfers_by_state', help: 'Transfers in each FSM state', type: 'gauge', series: STATE_NAMES.map((s) => ({ labels: { state: s }, value: byState.get(s) ?? 0 })) },
    { name: 'in_flight_amount_units', help: 'Funds debited at the source and not yet credited or refunded, in smallest units', type: 'gauge', series: flight.map((r) => ({ labels: { asset: r.asset }, value: BigInt(r.units) })) },
    { name: 'alerts_total', help: 'Alerts raised, by kind', type: 'counter', series: alerts.map((r) => ({ labels: { kind: r.kind }, value: r.n })) },
    { name: 'pg_connections', help: 'PostgreSQL connections of this database, by application and state', type: 'gauge', series: pool.map((r) => ({ labels: { application: r.application, state: r.state }, value: r.n })) },
  ];
}
