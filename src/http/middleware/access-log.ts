// One access-log line per request, and the request's id (X-Request-Id) on it, on the answer and
// on every line the request's routes write. The id is the client's X-Request-Id when it sends a
// sane one (up to REQUEST_ID_CHARS_MAX of letters, digits, `_`, `-`, `=`), otherwise a new UUID;
// it is echoed in the answer's X-Request-Id either way. The line, at info level, names the
// method, the route (its pattern, so ids in paths do not make every line unique), the status,
// the latency (timed once, by request-timing.ts), the user (a user token's id) or operator (an admin token's `sub`), and the
// transfer's req_id when the request has one. With LOG_LEVEL above info no line is built.

import type { Context, MiddlewareHandler } from 'hono';
import { requestId } from 'hono/request-id';
import type { Logger } from '../../log.js';
import { REQUEST_ID_CHARS_MAX } from '../../limits.js';
import { onTimed } from './request-timing.js';

/** What a request's handlers may leave in its context for its access-log line. */
type Tagged = { Variables: { requestId?: string; reqId?: string; operator?: string; claims?: { userId: bigint } } };

export function accessLog(opts: { readonly log: Logger }): MiddlewareHandler {
  const assignId = requestId({ limitLength: REQUEST_ID_CHARS_MAX });
  return async function accessLog(c, next) {
    if (opts.log.enabled('info')) onTimed(c, (ms) => logLine(c, opts.log, ms));
    await assignId(c, next);
  };
}

function logLine(c: Context, log: Logger, ms: number): void {
  const v = (c as unknown as Context<Tagged>).var;
  log.info('request', {
    request_id: v.requestId,
    method: c.req.method,
    route: c.req.routePath,
    status: c.res.status,
    latency_ms: Math.round(ms * 100) / 100,
    user: v.claims?.userId.toString() ?? v.operator ?? null,
    req_id: v.reqId ?? null,
  });
}

/** The logger for lines about this request: `log` with its request_id. */
export function requestLog(c: Context, log: Logger): Logger {
  const id = (c as unknown as Context<Tagged>).var.requestId;
  return id === undefined ? log : log.child({ request_id: id });
}

/** Names the transfer a request is about, for its access-log line and for any answer after it (a 500 included). */
export function tagTransfer(c: Context, reqId: string): void {
  (c as unknown as Context<Tagged>).set('reqId', reqId);
}

/** The req_id tagTransfer gave this request, if any. */
export function taggedTransfer(c: Context): string | undefined {
  return (c as unknown as Context<Tagged>).var.reqId;
}
