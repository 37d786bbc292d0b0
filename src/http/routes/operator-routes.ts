// Operator routes for transfers that need attention: alerts, stuck transfers with their
// history, and a retry that drives one transfer now. No route here sets a state: a retry runs
// the same step() as everything else, so a transfer only ever moves where its funds allow. The
// halt (MON-003) is set by the conservation check or here by an operator, and lifted here.

import { requestLog, tagTransfer } from '../middleware/access-log.js';
import type { Context, Hono, MiddlewareHandler } from 'hono';
import { ALERT_KINDS } from '../../alerts/alerts.js';
import type { AdminAction } from '../../audit/audit-log.js';
import { isReqId } from '../../domain/checks.js';
import { adminTransfersJson } from './admin-views.js';
import type { AppDeps } from '../deps.js';
import type { AdminEnv } from '../auth/auth.js';
import { auditedJson } from './audit.js';
import { fail } from '../errors.js';
import { historyJson } from './views.js';
import { HALT_REASON_CHARS_MAX, LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX } from '../../limits.js';
import { pageLimitOf } from './schemas.js';

export function mountOperatorRoutes(
  routes: Hono<AdminEnv>,
  deps: AppDeps,
  audit: (action: AdminAction) => MiddlewareHandler<AdminEnv>,
): void {
  routes.get('/alerts', listAlerts(deps));
  routes.get('/transfers', async (c) => {
    const stuck = c.req.query('stuck');
    const limit = listLimit(c.req.query('limit'));
    if (limit === null || (stuck !== undefined && stuck !== 'true' && stuck !== 'false')) return fail(c, 'INVALID_REQUEST');
    const views =
      stuck === 'true'
        ? await deps.transfers.stuck({ ...deps, unknownWaitMs: deps.targetPendingAlertMs }, limit)
        : await deps.transfers.unfinished(limit);
    return c.json({ transfers: await adminTransfersJson(deps, views) });
  });

  routes.get('/invariant', checkInvariant(deps));
  routes.post('/halt', audit('service.halt'), halt(deps));
  routes.post('/resume', audit('service.resume'), async (c) => {
    const was = await deps.halt.resume();
    requestLog(c, deps.log).warn('halt lifted by an operator', {
      operator: c.get('operator'),
      was_halted: was !== null,
      reason: was?.reason ?? null,
    });
    return c.json({ halted: false, was_halted: was !== null, previous_reason: was?.reason ?? null, shards_not_holding: unheldJson(deps) });
  });

  routes.post('/transfers/:req_id/retry', audit('transfer.retry'), retry(deps));
}

/** GET /alerts: the latest alerts raised, and each condition of spec 002's table now. */
function listAlerts(deps: AppDeps) {
  return async function listAlerts(c: Context<AdminEnv>): Promise<Response> {
    const limit = listLimit(c.req.query('limit'));
    if (limit === null) return fail(c, 'INVALID_REQUEST');
    const alerts = await deps.alerts.list(limit);
    const conditions = await deps.monitor.conditions();
    return c.json({
      alerts: alerts.map((a) => ({
        id: a.id,
        kind: a.kind,
        severity: a.severity,
        req_id: a.reqId,
        user_id: a.userId?.toString() ?? null,
        message: a.message,
        details: a.details,
        created_at: a.createdAt,
      })),
      conditions: conditions.map((k) => ({
        kind: k.kind,
        severity: ALERT_KINDS[k.kind],
        firing: k.firing,
        value: k.value,
        threshold: k.threshold,
        since: k.since,
      })),
    });
  };
}

/** GET /invariant: the conservation check run now, and the halt it may have set. */
function checkInvariant(deps: AppDeps) {
  return async function checkInvariant(c: Context<AdminEnv>): Promise<Response> {
    const report = await deps.invariant.check();
    const halted = deps.halt.current;
    return c.json({
      ok: report.differences.length === 0,
      checked_at: report.checkedAt,
      wal_seq: report.walSeq,
      accounts_checked: report.accounts,
      transfers_examined: report.transfersExamined,
      in_flight_units: report.inFlight,
      differences: report.differences.map((d) => ({
        account: d.key,
        expected_units: d.expected.toString(),
        actual_units: d.actual.toString(),
        detail: d.detail,
      })),
      halted: halted !== null,
      halt_reason: halted?.reason ?? null,
    });
  };
}

/** POST /halt: refuses new transfers and external movements until an operator resumes. */
function halt(deps: AppDeps) {
  return async function halt(c: Context<AdminEnv>): Promise<Response> {
    const raw = await auditedJson(c, deps.bodyBytesMax);
    if (!raw.ok) return fail(c, raw.code);
    const reason = raw.value.reason;
    if (
      Object.keys(raw.value).some((k) => k !== 'reason') ||
      typeof reason !== 'string' ||
      reason.length < 1 ||
      reason.length > HALT_REASON_CHARS_MAX
    )
      return fail(c, 'INVALID_REQUEST', { field: 'reason' });
    const halted = await deps.halt.halt(`operator: ${reason}`);
    requestLog(c, deps.log).critical('service halted by an operator: new transfers and external movements refused', {
      reason,
      was_halted: !halted,
    });
    const now = deps.halt.current;
    return c.json({
      halted: true,
      was_halted: !halted,
      reason: now?.reason ?? null,
      since: now?.since ?? null,
      shards_not_holding: unheldJson(deps),
    });
  };
}

/**
 * The coordinator shards that have not taken the halt state just answered (none when every one
 * holds it): each is told again until it does, and meanwhile reads the stored state on its own.
 */
function unheldJson(deps: AppDeps): { shard: number | null; reason: string }[] {
  return deps.halt.unheld.map((m) => ({ shard: m.shard, reason: m.reason }));
}

/** POST /transfers/:req_id/retry: drives one transfer now, on its shard; one in INIT is refused while halted. */
function retry(deps: AppDeps) {
  return async function retry(c: Context<AdminEnv, '/transfers/:req_id/retry'>): Promise<Response> {
    const reqId = c.req.param('req_id');
    if (!isReqId(reqId)) return fail(c, 'NOT_FOUND');
    const view = await deps.transfers.get(reqId);
    if (view === null) return fail(c, 'NOT_FOUND');
    tagTransfer(c, reqId);
    // MON-003: while halted nothing leaves INIT, the operator's retry included; resume releases it.
    if (view.state === 'INIT' && deps.halt.current !== null) return fail(c, 'SERVICE_HALTED', { req_id: reqId, state: view.state });
    requestLog(c, deps.log).info('operator retry', { operator: c.get('operator'), req_id: reqId, state: view.state });
    const reply = await deps.drive(view.userId, reqId);
    if (reply.kind === 'busy') return fail(c, 'SERVICE_UNAVAILABLE');
    if (reply.kind !== 'transfer') return fail(c, reply.kind === 'refused' ? reply.code : 'SYSTEM_ERROR');
    const now = reply.view;
    return c.json({
      req_id: now.reqId,
      state: now.state,
      retry_count: now.retryCount,
      error_code: now.errorCode,
      history: historyJson(await deps.transfers.history(reqId)),
    });
  };
}

function listLimit(text: string | undefined): number | null {
  return text === undefined ? LIST_LIMIT_DEFAULT : pageLimitOf(text, LIST_LIMIT_MAX);
}
