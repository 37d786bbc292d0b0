// The Hono front door: body limits, authentication, routes. It validates, then hands each
// transfer to the coordinator of the user's shard; it never moves funds itself.

import { Hono } from 'hono';
import type { NewTransfer, TransferView } from '../coordinator/types.js';
import type { AssetCache } from '../db/assets.js';
import type { TransferStore } from '../db/transfers.js';
import type { Logger } from '../log.js';
import type { AlertSink } from '../alerts/alerts.js';
import { HTTP_BUCKETS_S } from '../metrics/collect.js';
import type { Registry } from '../metrics/registry.js';
import type { AdminService } from '../services/admin.js';
import type { HaltSwitch } from '../services/halt.js';
import type { InvariantService } from '../services/invariant.js';
import type { BalanceReader } from '../services/balances.js';
import type { ExternalMovements } from '../services/external.js';
import { adminRoutes } from './admin-routes.js';
import { bodyLimit } from './body.js';
import type { Drain } from './drain.js';
import { errorBody, fail } from './errors.js';
import { mountDocs } from './openapi.js';
import { transferRoutes } from './transfer-routes.js';

/** What the HTTP edge gets back from a coordinator for one submitted transfer. */
export type SubmitReply =
  | { readonly kind: 'transfer'; readonly view: TransferView }
  | { readonly kind: 'refused'; readonly code: string }
  | { readonly kind: 'busy' }
  | { readonly kind: 'error'; readonly message: string };

export type AppDeps = {
  readonly jwtSecret: string;
  readonly bodyBytesMax: number;
  readonly rateLimitPerSecond: number;
  /** MON-004: transfers per user per minute that raise a WARNING; 0 switches it off. */
  readonly abnormalTransfersPerMinute: number;
  readonly assets: AssetCache;
  readonly transfers: TransferStore;
  readonly submit: (t: NewTransfer) => Promise<SubmitReply>;
  readonly external: ExternalMovements;
  readonly balances: BalanceReader;
  readonly admin: AdminService;
  readonly alerts: AlertSink;
  /** Drives one transfer now, on its shard (an operator's retry). */
  readonly drive: (userId: bigint, reqId: string) => Promise<SubmitReply>;
  readonly stuckRetriesMax: number;
  readonly stuckAgeMs: number;
  readonly halt: HaltSwitch;
  readonly invariant: InvariantService;
  /** Readiness: PostgreSQL answers and UBSCore has replayed its WAL. */
  /** Renders GET /metrics. */
  readonly metrics: () => Promise<string>;
  /** The main thread's registry: HTTP latency by route and status. */
  readonly registry: Registry;
  /** `ubscore`: it answers commands; `walWritable`: its WAL takes writes (`walReason` says why not). */
  readonly probe: () => Promise<{ readonly postgres: boolean; readonly ubscore: boolean; readonly walWritable: boolean; readonly walReason: string | null }>;
  readonly log: Logger;
  readonly isReady: () => boolean;
  /** Turns new requests away once a stop begins, and counts the ones in flight. */
  readonly drain: Drain;
};

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.use('*', deps.drain.middleware);
  app.use('*', async function httpMetrics(c, next) {
    const started = performance.now();
    await next();
    const labels = { method: c.req.method, route: c.req.routePath, status: String(c.res.status) };
    deps.registry.observe('http_request_duration_seconds', 'HTTP request latency by route and status', HTTP_BUCKETS_S, labels, (performance.now() - started) / 1000);
  });
  app.use('*', bodyLimit({ bytesMax: deps.bodyBytesMax }));
  app.get('/healthz', (c) => (deps.isReady() ? c.json({ status: 'ok' }) : fail(c, 'SERVICE_UNAVAILABLE')));
  app.get('/metrics', async (c) => c.text(await deps.metrics(), 200, { 'content-type': 'text/plain; version=0.0.4' }));
  app.get('/readyz', async (c) => {
    const probe = await deps.probe();
    const halted = deps.halt.current;
    const body = {
      postgres: probe.postgres,
      ubscore: probe.ubscore,
      wal_writable: probe.walWritable,
      wal_reason: probe.walReason,
      halted: halted !== null,
      halt_reason: halted?.reason ?? null,
    };
    const ready = probe.postgres && probe.ubscore && probe.walWritable && halted === null;
    return ready ? c.json({ status: 'ready', ...body }) : c.json({ code: 'SERVICE_UNAVAILABLE', message: 'not ready', ...body }, 503);
  });
  mountDocs(app);
  app.route('/api/v1', transferRoutes(deps));
  app.route('/admin/v1', adminRoutes(deps));
  app.notFound((c) => fail(c, 'NOT_FOUND'));
  app.onError((error, c) => {
    deps.log.error('unhandled error in a route', { path: c.req.path, error: error instanceof Error ? error.stack : String(error) });
    return c.json(errorBody('SYSTEM_ERROR'), 500);
  });
  return app;
}
