// Operator routes, behind a token whose role is admin; c.get('operator') names the operator.
// Every action is recorded in the audit trail with its outcome (audit.ts).

import { Hono, type Context } from 'hono';
import * as v from 'valibot';
import { isAssetSymbol, isUserId } from '../../domain/checks.js';
import { parseAmount } from '../../domain/money.js';
import type { AppDeps } from '../deps.js';
import { adminAuth, type AdminEnv } from '../auth/auth.js';
import type { AdminAction } from '../../audit/audit-log.js';
import { audited, auditedJson } from './audit.js';
import { mountAuditRoutes } from './audit-routes.js';
import { mountConsoleRoutes } from '../console/routes.js';
import type { MovementKind } from '../../services/external.js';
import { fail } from '../errors.js';
import { mountOperatorRoutes } from './operator-routes.js';
import { AccountStatusBody, AssetBody, BackupBody, DepositBody, firstCode } from './schemas.js';

export function adminRoutes(deps: AppDeps): Hono<AdminEnv> {
  const routes = new Hono<AdminEnv>();
  routes.use('*', adminAuth({ tokens: deps.tokens }));
  const audit = (action: AdminAction) => audited({ action, audit: deps.audit, log: deps.log, registry: deps.registry });
  routes.post('/deposit', audit('deposit'), movement(deps, 'DEPOSIT'));
  routes.post('/withdraw', audit('withdraw'), movement(deps, 'WITHDRAW'));
  routes.put('/assets/:symbol', audit('asset.put'), putAsset(deps));
  routes.post('/account_status', audit('account.status'), setAccountStatus(deps));
  // A backup of both stores at one cut into an empty directory on the service's host (docs/operations.md).
  routes.post('/backup', audit('ledger.backup'), backup(deps));
  mountOperatorRoutes(routes, deps, audit);
  mountAuditRoutes(routes, deps);
  mountConsoleRoutes(routes, deps);
  return routes;
}

/** POST /deposit and /withdraw: an external movement of FUNDING or SPOT, idempotent by `ref`. */
function movement(deps: AppDeps, kind: MovementKind) {
  return async function movement(c: Context<AdminEnv>): Promise<Response> {
    const raw = await auditedJson(c, deps.bodyBytesMax);
    if (!raw.ok) return fail(c, raw.code);
    const parsed = v.safeParse(DepositBody, raw.value, { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const body = parsed.output;
    const userId = BigInt(body.user_id);
    if (!isUserId(userId)) return fail(c, 'INVALID_USER');
    const asset = await deps.assets.get(body.asset);
    if (asset === null) return fail(c, 'INVALID_ASSET');
    const amount = parseAmount(body.amount, asset.precision);
    if (!amount.ok) return fail(c, amount.code);
    const outcome = await deps.external.apply(
      {
        kind,
        ref: body.ref,
        userId,
        account: body.account,
        asset: body.asset,
        amount: amount.units,
      },
      body.correction_reason ?? null,
    );
    switch (outcome.kind) {
      case 'done':
        return c.json({
          ref: body.ref,
          state: 'DONE',
          duplicate: outcome.duplicate,
          account: body.account,
          asset: body.asset,
          amount: body.amount,
        });
      case 'pending':
        return c.json({ ref: body.ref, state: 'PENDING', message: outcome.reason }, 202);
      case 'refused':
        return fail(c, outcome.code, { ref: body.ref });
    }
  };
}

/** PUT /assets/:symbol: creates or changes an asset; the shards forget their cached assets. */
function putAsset(deps: AppDeps) {
  return async function putAsset(c: Context<AdminEnv, '/assets/:symbol'>): Promise<Response> {
    const symbol = c.req.param('symbol');
    if (!isAssetSymbol(symbol)) return fail(c, 'INVALID_ASSET');
    const raw = await auditedJson(c, deps.bodyBytesMax);
    if (!raw.ok) return fail(c, raw.code);
    const parsed = v.safeParse(AssetBody, raw.value, { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const body = parsed.output;
    const min = parseAmount(body.min_transfer_amount, body.precision);
    const max = parseAmount(body.max_transfer_amount, body.precision);
    const daily = body.daily_amount_limit == null ? null : parseAmount(body.daily_amount_limit, body.precision);
    if (!min.ok) return fail(c, min.code, { field: 'min_transfer_amount' });
    if (!max.ok) return fail(c, max.code, { field: 'max_transfer_amount' });
    if (daily !== null && !daily.ok) return fail(c, daily.code, { field: 'daily_amount_limit' });
    if (max.units < min.units) return fail(c, 'INVALID_REQUEST', { field: 'max_transfer_amount' });
    const outcome = await deps.admin.putAsset({
      symbol,
      precision: body.precision,
      minTransferUnits: min.units,
      maxTransferUnits: max.units,
      status: body.status,
      internalTransferEnabled: body.internal_transfer_enabled,
      dailyAmountLimitUnits: daily === null ? null : daily.units,
    });
    if (outcome.kind === 'refused') return fail(c, outcome.code, outcome.message === undefined ? {} : { detail: outcome.message });
    return c.json({ symbol, ...body, daily_amount_limit: body.daily_amount_limit ?? null }, outcome.created === true ? 201 : 200);
  };
}

/** POST /account_status: freezes or unfreezes one account. */
function setAccountStatus(deps: AppDeps) {
  return async function setAccountStatus(c: Context<AdminEnv>): Promise<Response> {
    const raw = await auditedJson(c, deps.bodyBytesMax);
    if (!raw.ok) return fail(c, raw.code);
    const parsed = v.safeParse(AccountStatusBody, raw.value, { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const body = parsed.output;
    const userId = BigInt(body.user_id);
    if (!isUserId(userId)) return fail(c, 'INVALID_USER');
    if ((await deps.assets.get(body.asset)) === null) return fail(c, 'INVALID_ASSET');
    const outcome = await deps.admin.setAccountStatus(userId, body.account, body.asset, body.status);
    if (outcome.kind === 'refused') return fail(c, outcome.code, outcome.message === undefined ? {} : { detail: outcome.message });
    return c.json(body);
  };
}

/** POST /backup: both halves of the ledger at one cut, and what the backup holds. */
function backup(deps: AppDeps) {
  return async function backup(c: Context<AdminEnv>): Promise<Response> {
    const raw = await auditedJson(c, deps.bodyBytesMax);
    if (!raw.ok) return fail(c, raw.code);
    const parsed = v.safeParse(BackupBody, raw.value, { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const outcome = await deps.backup(parsed.output.dir);
    switch (outcome.kind) {
      case 'done': {
        const m = outcome.manifest;
        const tables = Object.fromEntries(m.tables.map((t) => [t.name, t.rows]));
        return c.json({
          dir: outcome.dir,
          ledger_id: m.ledgerId,
          wal_seq: m.walSeq,
          pg_snapshot: m.pgSnapshot,
          pause_ms: m.pauseMs,
          ubscore_bytes: m.ubscore.bytes,
          tables,
        });
      }
      case 'refused':
        return fail(c, outcome.code, { detail: outcome.message });
      case 'failed':
        return fail(c, 'BACKUP_FAILED', { detail: outcome.message });
    }
  };
}
