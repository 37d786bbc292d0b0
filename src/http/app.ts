// The Hono front door: body limits, authentication, routes, on one listener or two. It validates, then hands each
// transfer to the coordinator of the user's shard; it never moves funds itself.

import { Hono } from 'hono';
import { HTTP_BUCKETS_S } from '../services/metrics-collect.js';
import { adminRoutes } from './routes/admin-routes.js';
import { bodyLimit } from './body.js';
import { errorBody, fail } from './errors.js';
import { mountConsole } from './console/page.js';
import { mountDocs } from './openapi/document.js';
import { ownerGate, ownerReason, ownsLedger } from './middleware/owner-gate.js';
import { isFenced } from '../db/fence.js';
import { leaseGuard } from './middleware/lease-guard.js';
import { ownerEpoch } from './middleware/owner-epoch.js';
import { accessLog, requestLog, taggedTransfer } from './middleware/access-log.js';
import { onTimed, requestTiming } from './middleware/request-timing.js';
import type { AppDeps } from './deps.js';
import { transferRoutes } from './routes/transfer-routes.js';

/**
 * The routes, on one listener or two. Without a separate admin listener, one app serves
 * everything. With one (ADMIN_PORT), `/admin/v1/*` and `/metrics` are served only by the admin
 * app and the public app answers 404 NOT_FOUND for them, as for any unknown route; both answer
 * /healthz and /readyz. The OpenAPI document and /docs stay public: they describe the admin
 * operations but grant nothing, and the same text is in the repository.
 */
export function createApps(deps: AppDeps, opts: { readonly separateAdmin: boolean }): Apps {
  const publicApp = baseApp(deps);
  mountDocs(publicApp);
  publicApp.route('/api/v1', transferRoutes(deps));
  if (!opts.separateAdmin) {
    mountAdmin(publicApp, deps);
    return { public: publicApp, admin: null };
  }
  const adminApp = baseApp(deps);
  mountAdmin(adminApp, deps);
  return { public: publicApp, admin: adminApp };
}

export type Apps = { readonly public: Hono; readonly admin: Hono | null };

function mountAdmin(app: Hono, deps: AppDeps): void {
  // The console's page calls /admin/v1 on its own origin, so it is served where the admin routes are.
  mountConsole(app);
  app.get('/metrics', async (c) => c.text(await deps.metrics(), 200, { 'content-type': 'text/plain; version=0.0.4' }));
  app.route('/admin/v1', adminRoutes(deps));
}

/** What every listener has: the drain, latency metrics, the body limit, the probes, the error answers. */
function baseApp(deps: AppDeps): Hono {
  const app = new Hono();
  app.use('*', leaseGuard({ state: deps.leaseState, onLapsed: deps.onLeaseLapsed }));
  app.use('*', ownerEpoch({ epoch: deps.ownerEpoch }));
  app.use('*', requestTiming());
  app.use('*', accessLog({ log: deps.log }));
  app.use('*', deps.drain.middleware);
  app.use('*', async function httpMetrics(c, next) {
    onTimed(c, (ms) => {
      const labels = { method: c.req.method, route: c.req.routePath, status: String(c.res.status) };
      deps.registry.observe(
        'transfer_http_request_duration_seconds',
        'HTTP request latency by method, route and status',
        HTTP_BUCKETS_S,
        labels,
        ms / 1000,
      );
    });
    await next();
  });
  const ownership = { held: deps.ownerHeld, leaseState: deps.leaseState };
  app.use('*', ownerGate(ownership));
  app.use('*', bodyLimit({ bytesMax: deps.bodyBytesMax }));
  // Liveness only: a process that answers is alive; what it can do is /readyz's question.
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/readyz', async (c) => {
    const probe = await deps.probe();
    // The halt the shards obey is the stored one, whoever wrote it; this thread's copy counts too.
    const halted = probe.storedHalt ?? deps.halt.current;
    const owner = ownsLedger(ownership);
    const body = {
      postgres: probe.postgres,
      owner,
      lease: deps.leaseState(),
      owner_reason: ownerReason(ownership),
      ubscore: probe.ubscore,
      wal_writable: probe.walWritable,
      wal_reason: probe.walReason,
      halted: halted !== null,
      halt_reason: halted?.reason ?? null,
    };
    const ready = probe.postgres && owner && probe.ubscore && probe.walWritable && halted === null;
    return ready ? c.json({ status: 'ready', ...body }) : c.json({ code: 'SERVICE_UNAVAILABLE', message: 'not ready', ...body }, 503);
  });
  app.notFound((c) => fail(c, 'NOT_FOUND'));
  app.onError((error, c) => {
    // A transfer given its req_id may exist even though its route threw (the mailbox was full and
    // recording it failed): the answer names it, so a client without client_order_id can ask
    // what became of it instead of paying twice.
    const reqId = taggedTransfer(c);
    const named = reqId === undefined ? {} : { req_id: reqId };
    if (isFenced(error)) {
      // The owner fence refused a write (LF001): another process owns the ledger now. Never a
      // refusal of the request: what it asked for was not done here, and the owner may do it.
      requestLog(c, deps.log).critical('a write was refused by the owner fence: this process no longer owns the ledger', {
        path: c.req.path,
        err: error,
      });
      return fail(c, 'OWNER_LEASE_UNPROVEN', { owner: false, ...named });
    }
    requestLog(c, deps.log).error('unhandled error in a route', { path: c.req.path, err: error });
    return c.json(errorBody('SYSTEM_ERROR', named), 500);
  });
  return app;
}
