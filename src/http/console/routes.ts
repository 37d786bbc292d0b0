// The JSON the operator console reads besides the operator routes: an overview of now (the last
// minute's pace, unfinished transfers, funds in flight, the WAL position, the halt, the last
// conservation check), the ownership (role, epoch, lease, the SPOT log in PostgreSQL) and a
// transfer search that only ever uses an index and a bound.

import type { Hono } from 'hono';
import type { TransferView } from '../../domain/transfer.js';
import { isClientOrderId, isReqId, parseUserId } from '../../domain/checks.js';
import { UNFINISHED_STATES } from '../../domain/fsm.js';
import { formatAmount } from '../../domain/money.js';
import { adminTransfersJson } from '../routes/admin-views.js';
import type { AppDeps } from '../deps.js';
import type { AdminEnv } from '../auth/auth.js';
import { fail } from '../errors.js';
import { SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_MAX } from '../../limits.js';
import { pageLimitOf } from '../routes/schemas.js';

export function mountConsoleRoutes(routes: Hono<AdminEnv>, deps: AppDeps): void {
  routes.get('/overview', async (c) => {
    const snapshot = await deps.snapshot();
    const inFlight = [];
    for (const [asset, units] of [...snapshot.inFlight].sort(([a], [b]) => (a < b ? -1 : 1))) {
      inFlight.push({ asset, amount: formatAmount(units, (await deps.assets.get(asset))?.precision ?? 0), units: units.toString() });
    }
    const halted = deps.halt.current;
    const last = deps.invariant.lastReport;
    return c.json({
      now: deps.pulse.summary(),
      unfinished_by_state: Object.fromEntries(UNFINISHED_STATES.map((s) => [s, snapshot.byState.get(s) ?? 0])),
      in_flight: inFlight,
      wal_seq: snapshot.walSeq,
      halt: { halted: halted !== null, reason: halted?.reason ?? null, since: halted?.since ?? null },
      last_check:
        last === null
          ? null
          : {
              checked_at: last.checkedAt,
              ok: last.differences.length === 0,
              wal_seq: last.walSeq,
              differences: last.differences.map((d) => ({
                account: d.key,
                expected_units: d.expected.toString(),
                actual_units: d.actual.toString(),
                detail: d.detail,
              })),
            },
    });
  });

  routes.get('/ownership', async (c) => c.json(ownershipJson(await deps.ownership())));

  // One of: req_id; user_id with client_order_id; user_id alone (newest first, bounded).
  routes.get('/transfers/search', async (c) => {
    const q = c.req.query();
    const known = new Set(['req_id', 'user_id', 'client_order_id', 'limit']);
    const unknown = Object.keys(q).find((k) => !known.has(k));
    if (unknown !== undefined) return fail(c, 'INVALID_REQUEST', { field: unknown, detail: 'unknown parameter' });
    if (q.req_id !== undefined) {
      if (q.user_id !== undefined || q.client_order_id !== undefined)
        return fail(c, 'INVALID_REQUEST', { field: 'req_id', detail: 'req_id alone, or user_id with an optional client_order_id' });
      if (!isReqId(q.req_id)) return fail(c, 'INVALID_REQUEST', { field: 'req_id', detail: 'a req_id is a 26-character ULID' });
      const view = await deps.transfers.get(q.req_id);
      return c.json({ transfers: await adminTransfersJson(deps, view === null ? [] : [view]) });
    }
    if (q.user_id === undefined)
      return fail(c, 'INVALID_REQUEST', { field: 'user_id', detail: 'give req_id, or user_id with an optional client_order_id' });
    const userId = parseUserId(q.user_id);
    if (userId === null) return fail(c, 'INVALID_USER', { field: 'user_id' });
    const limit = q.limit === undefined ? SEARCH_LIMIT_DEFAULT : pageLimitOf(q.limit, SEARCH_LIMIT_MAX);
    if (limit === null) return fail(c, 'INVALID_REQUEST', { field: 'limit', detail: `1 to ${SEARCH_LIMIT_MAX}` });
    let views: readonly TransferView[];
    if (q.client_order_id !== undefined) {
      if (!isClientOrderId(q.client_order_id))
        return fail(c, 'INVALID_REQUEST', { field: 'client_order_id', detail: '1 to 64 of A-Z a-z 0-9 _ -' });
      const view = await deps.transfers.byClientOrderId(userId, q.client_order_id);
      views = view === null ? [] : [view];
    } else {
      views = await deps.transfers.list({ userId, beforeId: null, asset: null, state: null, fromTime: null, toTime: null, limit });
    }
    return c.json({ transfers: await adminTransfersJson(deps, views) });
  });
}

/** GET /admin/v1/ownership's answer: the process's side, then ledger_owner and the SPOT log as PostgreSQL holds them. */
function ownershipJson(o: Awaited<ReturnType<AppDeps['ownership']>>) {
  const { process: p, ledger } = o;
  return {
    role: p.role,
    promoted: p.promoted,
    epoch: p.epoch,
    lease: { state: p.leaseState, left_ms: Math.floor(p.leaseLeftMs) },
    ledger_owner: {
      epoch: ledger.epoch,
      owner: ledger.owner,
      promoted_at: ledger.promotedAt?.toISOString() ?? null,
      lease_until: ledger.leaseUntil?.toISOString() ?? null,
    },
    spot_log: { last_seq: ledger.logLastSeq, archived_through_seq: ledger.archivedThroughSeq, bytes: ledger.bytes },
  };
}
