// What the service's PostgreSQL connections are doing during a load run, sampled from
// pg_stat_activity a few times a second: busy in a statement (and waiting on what), idle inside a
// transaction (waiting for the coordinator's next statement), or idle in the pool. It tells a
// database-bound service (connections busy, WAL sync waits) from a client-bound one (connections
// idle in transaction or idle while transfers queue).

import type { Sql } from '../../src/db/sql.js';

const SAMPLE_INTERVAL_MS = 250;

export type ActivityState = { readonly state: string; readonly wait: string; readonly meanConnections: number };
export type AppActivity = { readonly application: string; readonly meanConnections: number; readonly states: readonly ActivityState[] };
export type PgActivity = { readonly samples: number; readonly applications: readonly AppActivity[] };

type Row = { app: string; state: string; wait: string; n: number };

async function sampleOnce(sql: Sql): Promise<Row[]> {
  // Coordinator pools are named coordinator-0, coordinator-1…: grouped as one application.
  return sql<Row[]>`
    SELECT regexp_replace(coalesce(nullif(application_name, ''), 'unnamed'), '-[0-9]+$', '') AS app,
           coalesce(state, 'unknown') AS state,
           coalesce(wait_event_type || ':' || wait_event, 'on CPU') AS wait,
           count(*)::int AS n
      FROM pg_stat_activity
     WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
       AND application_name NOT LIKE 'bench%'
     GROUP BY 1, 2, 3`;
}

/** Samples until `stop`; answers the mean number of connections per application, state and wait. */
export function sampleActivity(sql: Sql): { stop: () => Promise<PgActivity> } {
  const sums = new Map<string, number>();
  let samples = 0;
  let running = true;
  const loop = (async (): Promise<void> => {
    while (running) {
      const rows = await sampleOnce(sql).catch(() => null);
      if (rows !== null) {
        samples++;
        for (const r of rows)
          sums.set(`${r.app}\u0000${r.state}\u0000${r.wait}`, (sums.get(`${r.app}\u0000${r.state}\u0000${r.wait}`) ?? 0) + r.n);
      }
      await new Promise((r) => setTimeout(r, SAMPLE_INTERVAL_MS));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return summarise(sums, samples);
    },
  };
}

function summarise(sums: Map<string, number>, samples: number): PgActivity {
  const apps = new Map<string, ActivityState[]>();
  for (const [key, total] of sums) {
    const [app = '', state = '', wait = ''] = key.split('\u0000');
    const list = apps.get(app) ?? [];
    list.push({ state, wait, meanConnections: Math.round((total / Math.max(samples, 1)) * 10) / 10 });
    apps.set(app, list);
  }
  const applications = [...apps.entries()].map(([application, states]) => ({
    application,
    meanConnections: Math.round(states.reduce((a, s) => a + s.meanConnections, 0) * 10) / 10,
    states: states.sort((a, b) => b.meanConnections - a.meanConnections),
  }));
  return { samples, applications: applications.sort((a, b) => b.meanConnections - a.meanConnections) };
}
