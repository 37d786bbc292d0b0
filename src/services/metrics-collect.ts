// GET /metrics: the main thread's registry (runtime, HTTP latency, halt, alerts, conservation),
// each coordinator shard's (transitions, finished transfers and their duration, retries,
// runtime), UBSCore's (commands, WAL batches and sync time, LMDB, runtime), and what this scrape
// reads itself: mailbox depths and, from PostgreSQL, the unfinished transfers (through
// transfers_active: never the whole of transfers_tb), the alerts raised, the connections, and
// the owner and the SPOT log (src/services/ownership-metrics.ts).
// Every series is labelled with the thread it came from (src/metrics/aggregate.ts).

import type { Sql } from '../db/sql.js';
import { UNFINISHED_STATES } from '../domain/fsm.js';
import { aggregate, MAIN_THREAD, type ShardScrape, type ThreadScrape } from '../metrics/aggregate.js';
import { renderExactGauge } from '../metrics/exact.js';
import { readLedgerStatus, type LedgerStatus, type ProcessOwnership } from '../ownership/status.js';
import { setOwnershipMetrics } from './ownership-metrics.js';
import { Registry, type MetricFamily } from '../metrics/registry.js';
import { summarise, unfinishedTransfers, type Unfinished } from './unfinished.js';

type MetricSources = {
  readonly main: Registry;
  readonly sql: Sql;
  readonly shards: () => Promise<readonly ShardScrape[]>;
  /** UBSCore's families; null when it has never answered. */
  readonly ubs: () => Promise<ThreadScrape | null>;
  /** Every alert kind (src/alerts/alerts.ts), each counted from zero; given, so metrics/ knows nothing of alerts/. */
  readonly alertKinds: readonly string[];
  /** This process's role, epoch, lease and lag, read at the scrape. */
  readonly ownership: () => ProcessOwnership;
};

export const HTTP_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const IN_FLIGHT_AMOUNT = 'transfer_in_flight_amount_units';
/**
 * The owner's tag in front of every application_name of the service's connections (src/db/sql.ts) names one process: left out of the label, so a restart does not start new series.
 */
const OWNER_TAG_PATTERN = '^(transfer-[0-9]+-[0-9a-f]+@[^ ]* |standby-[0-9]+ )';

export async function collectMetrics(src: MetricSources): Promise<string> {
  const [shards, ubs, pg] = await Promise.all([src.shards(), src.ubs(), fromPostgres(src.sql)]);
  const scrape = new Registry();
  for (const s of shards)
    scrape.set(
      'transfer_coordinator_mailbox_depth',
      "Transfers and tasks waiting in a coordinator shard's mailbox",
      { shard: String(s.shard) },
      s.depth,
    );
  setFromPostgres(scrape, pg, src.alertKinds);
  setOwnershipMetrics(scrape, src.ownership(), pg.ledger);
  const workers = [...shards, ...(ubs === null ? [] : [ubs])].map((w) => ({
    thread: w.thread,
    families: [...w.families, freshness(w.fresh)],
  }));
  const text = await aggregate([{ thread: MAIN_THREAD, families: [...(await src.main.json()), ...(await scrape.json())] }, ...workers]);
  // Every asset, 0 when nothing of it is in flight, so the series never vanish.
  const assets = new Set([...pg.assets, ...pg.unfinished.inFlight.keys()]);
  const inFlight = [...assets]
    .sort()
    .map((asset) => ({ labels: { asset, thread: MAIN_THREAD }, value: pg.unfinished.inFlight.get(asset) ?? 0n }));
  return `${text}${renderExactGauge(IN_FLIGHT_AMOUNT, "Funds debited at the source and not yet credited or refunded, in the asset's smallest units (printed exactly)", inFlight)}`;
}

/** Whether a worker thread answered this scrape (1) or its last answer is shown again (0). */
function freshness(fresh: boolean): MetricFamily {
  return {
    name: 'transfer_thread_metrics_fresh',
    help: 'Whether this thread answered this scrape (1) or its series are its last answer, shown again (0)',
    type: 'gauge',
    aggregator: 'sum',
    values: [{ value: fresh ? 1 : 0, labels: {} }],
  };
}

type FromPostgres = {
  readonly unfinished: Unfinished;
  readonly assets: readonly string[];
  readonly alerts: readonly { kind: string; n: number }[];
  readonly connections: readonly { application: string; state: string; n: number }[];
  readonly ledger: LedgerStatus;
};

async function fromPostgres(sql: Sql): Promise<FromPostgres> {
  const [rows, assets, alerts, connections, ledger] = await Promise.all([
    unfinishedTransfers(sql),
    sql<{ symbol: string }[]>`SELECT symbol FROM assets`,
    sql<{ kind: string; n: number }[]>`SELECT kind, count(*)::int AS n FROM alerts GROUP BY kind`,
    sql<{ application: string; state: string; n: number }[]>`
      SELECT regexp_replace(application_name, ${OWNER_TAG_PATTERN}, '') AS application, coalesce(state, 'unknown') AS state, count(*)::int AS n
        FROM pg_stat_activity WHERE datname = current_database() GROUP BY 1, 2`,
    readLedgerStatus(sql),
  ]);
  return { unfinished: summarise(rows), assets: assets.map((a) => a.symbol), alerts, connections, ledger };
}

function setFromPostgres(scrape: Registry, pg: FromPostgres, alertKinds: readonly string[]): void {
  for (const state of UNFINISHED_STATES) {
    scrape.set(
      'transfer_unfinished',
      'Unfinished transfers in each non-terminal FSM state now',
      { state },
      pg.unfinished.byState.get(state) ?? 0,
    );
    scrape.set(
      'transfer_oldest_unfinished_age_seconds',
      'Seconds since the oldest unfinished transfer in each state was created (0 with none)',
      { state },
      pg.unfinished.oldestAgeS.get(state) ?? 0,
    );
  }
  // Every kind from zero, so a rule on one kind has a series before its first alert.
  const raised = new Map<string, number>(alertKinds.map((kind) => [kind, 0]));
  for (const a of pg.alerts) raised.set(a.kind, a.n);
  for (const [kind, n] of raised) scrape.inc('transfer_alerts_raised_total', 'Alerts raised and stored, by kind', { kind }, n);
  for (const c of pg.connections)
    scrape.set(
      'transfer_db_connections',
      "PostgreSQL backends on this service's database, by application_name and state",
      { application: c.application, state: c.state },
      c.n,
    );
}
