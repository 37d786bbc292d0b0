// GET /admin/v1/audit: the admin audit trail, newest first, paged by id with an opaque cursor in
// the style of the transfer history: rows written while an operator pages appear only on a
// fresh first page and never shift or repeat the pages after it.

import type { Hono } from 'hono';
import * as v from 'valibot';
import type { AppDeps } from '../deps.js';
import type { AdminEnv } from '../auth/auth.js';
import { fail } from '../errors.js';
import { keysetCursor } from './cursor.js';
import { cursorText, firstCode, pageLimitText } from './schemas.js';
import { AUDIT_LIMIT_DEFAULT, AUDIT_LIMIT_MAX } from '../../limits.js';

const cursors = keysetCursor('a1:');

const AuditQuery = v.strictObject(
  {
    limit: v.optional(pageLimitText(AUDIT_LIMIT_MAX)),
    cursor: v.optional(cursorText(cursors.decode)),
  },
  'INVALID_REQUEST',
);

export function mountAuditRoutes(routes: Hono<AdminEnv>, deps: AppDeps): void {
  routes.get('/audit', async (c) => {
    const parsed = v.safeParse(AuditQuery, c.req.query(), { abortEarly: true });
    if (!parsed.success) return fail(c, firstCode(parsed.issues));
    const limit = parsed.output.limit === undefined ? AUDIT_LIMIT_DEFAULT : Number(parsed.output.limit);
    const before = parsed.output.cursor === undefined ? null : cursors.decode(parsed.output.cursor);
    const rows = await deps.audit.page(before, limit + 1);
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return c.json({
      items: page.map((r) => ({
        id: r.id,
        at: r.at,
        operator: r.operator,
        action: r.action,
        target: r.target,
        parameters: r.parameters,
        status: r.status,
        outcome: r.outcome,
        req_id: r.reqId,
      })),
      next_cursor: rows.length > limit && last !== undefined ? cursors.encode(last.id) : null,
    });
  });
}
