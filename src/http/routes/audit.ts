// Records every admin action in the audit trail (admin_audit) after it ran, with the answer the
// operator got: a route-level middleware taking the action's name.
//
// Why after, and in its own statement, rather than in the action's transaction: the outcome to
// record is the answer itself (status and code), known only once the action returned; a failed
// action rolls its transaction back, so a row inside it could never record a failure; and SPOT
// actions are UBSCore WAL writes with no PostgreSQL transaction to share. The cost is a window:
// an action can take effect and its row fail to be written (the database gone, a crash between
// the two). That is never silent: the whole entry goes to the log as a CRITICAL line (the log is
// then the record), the answer carries `X-Audit: failed`, and admin_audit_failures_total counts
// it. The action's own answer is left as it is: it says truly what happened to the funds, and an
// operator told "failed" for a deposit that was made would make it again.

import { requestLog } from '../middleware/access-log.js';
import type { Context, MiddlewareHandler } from 'hono';
import type { AdminAction, AuditEntry, AuditLog } from '../../audit/audit-log.js';
import type { Logger } from '../../log.js';
import type { Registry } from '../../metrics/registry.js';
import type { AdminEnv } from '../auth/auth.js';
import { jsonObject, type JsonBody } from '../body.js';
import { operatorOf } from '../auth/operator-of.js';
import { isFenced } from '../../db/fence.js';
import type { ErrorCode } from '../../domain/errors.js';
import { statusOf } from '../errors.js';

/** The raw JSON body each admin request sent, kept for its audit row (a body is read once). */
const bodies = new WeakMap<Request, Record<string, unknown>>();

/** jsonObject for an audited route: the body read is also the audit row's parameters. */
export async function auditedJson(c: Context, bytesMax: number): Promise<JsonBody> {
  const body = await jsonObject(c, bytesMax);
  if (body.ok) bodies.set(c.req.raw, body.value);
  return body;
}

const AUDIT_FAILURES = 'transfer_admin_audit_failures_total';
const AUDIT_FAILURES_HELP = 'Admin actions whose audit row could not be written (each logged CRITICAL in full)';

export function audited(opts: {
  readonly action: AdminAction;
  readonly audit: AuditLog;
  readonly log: Logger;
  readonly registry: Registry;
}): MiddlewareHandler<AdminEnv> {
  // From zero, so the series exists before the first failure.
  opts.registry.inc(AUDIT_FAILURES, AUDIT_FAILURES_HELP, {}, 0);
  return async function auditedAction(c, next) {
    let thrown: unknown = null;
    try {
      await next();
    } catch (error) {
      thrown = error;
    }
    const status = thrown === null ? c.res.status : statusOf(thrownCode(thrown));
    const parameters = bodies.get(c.req.raw) ?? {};
    const entry: AuditEntry = {
      operator: operatorOf(c),
      action: opts.action,
      ...targetOf(opts.action, c, parameters),
      parameters,
      status,
      outcome: status < 400 ? 'ok' : await codeOf(c.res, thrown),
    };
    try {
      const id = await opts.audit.record(entry);
      if (thrown === null) c.res.headers.set('x-audit-id', id);
    } catch (error) {
      opts.registry.inc(AUDIT_FAILURES, AUDIT_FAILURES_HELP);
      requestLog(c, opts.log).critical('admin action NOT recorded in the audit trail; this line is its record', { ...entry, err: error });
      if (thrown === null) c.res.headers.set('x-audit', 'failed');
    }
    if (thrown !== null) throw thrown;
  };
}

function targetOf(action: AdminAction, c: Context, p: Readonly<Record<string, unknown>>): Pick<AuditEntry, 'target' | 'reqId'> {
  switch (action) {
    case 'deposit':
    case 'withdraw':
      return {
        target: { user_id: p.user_id ?? null, account: p.account ?? null, asset: p.asset ?? null, ref: p.ref ?? null },
        reqId: null,
      };
    case 'asset.put':
      return { target: { symbol: c.req.param('symbol') ?? null }, reqId: null };
    case 'account.status':
      return { target: { user_id: p.user_id ?? null, account: p.account ?? null, asset: p.asset ?? null }, reqId: null };
    case 'transfer.retry': {
      const reqId = c.req.param('req_id') ?? null;
      return { target: { req_id: reqId }, reqId };
    }
    case 'service.halt':
    case 'service.resume':
      return { target: { service: 'transfers' }, reqId: null };
    case 'ledger.backup':
      return { target: { dir: p.dir ?? null }, reqId: null };
    default: {
      const unknown: never = action;
      throw new Error(`no audit target for ${String(unknown)}`);
    }
  }
}

/** The code the app's error handler answers a thrown error with (app.ts): the owner fence's refusal, or SYSTEM_ERROR. */
function thrownCode(thrown: unknown): ErrorCode {
  return isFenced(thrown) ? 'OWNER_LEASE_UNPROVEN' : 'SYSTEM_ERROR';
}

async function codeOf(res: Response, thrown: unknown): Promise<string> {
  if (thrown !== null) return thrownCode(thrown);
  try {
    const body: unknown = await res.clone().json();
    const code = typeof body === 'object' && body !== null ? (body as { code?: unknown }).code : undefined;
    return typeof code === 'string' ? code : `HTTP_${res.status}`;
  } catch {
    return `HTTP_${res.status}`;
  }
}
