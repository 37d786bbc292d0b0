// GET /api/v1/internal_transfer: the caller's transfers, newest first, with an opaque cursor.

import type { Context } from 'hono';
import * as v from 'valibot';
import type { ListQuery } from '../../db/transfers.js';
import { ASSET_SYMBOL } from '../../domain/checks.js';
import { STATE_NAMES, type TransferStateName, UNFINISHED_STATES } from '../../domain/fsm.js';
import type { AppDeps } from '../deps.js';
import type { AuthEnv } from '../auth/auth.js';
import { keysetCursor } from './cursor.js';
import { fail } from '../errors.js';
import { cursorText, firstCode, pageLimitText } from './schemas.js';
import { CLIENT_PENDING, transferJson } from './views.js';
import { HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX } from '../../limits.js';

export const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$/;
/** Epoch milliseconds, the other way from_time and to_time may be given. */
export const EPOCH_MS = /^\d{1,15}$/;
const cursors = keysetCursor('t1:');

const timeText = v.pipe(
  v.string('INVALID_REQUEST'),
  v.check((s) => (ISO_TIME.test(s) || EPOCH_MS.test(s)) && Number.isFinite(parseTime(s).getTime()), 'INVALID_REQUEST'),
);

const HistoryQuery = v.strictObject(
  {
    asset: v.optional(v.pipe(v.string('INVALID_ASSET'), v.regex(ASSET_SYMBOL, 'INVALID_ASSET'))),
    state: v.optional(v.picklist([...STATE_NAMES, CLIENT_PENDING], 'INVALID_REQUEST')),
    from_time: v.optional(timeText),
    to_time: v.optional(timeText),
    limit: v.optional(pageLimitText(HISTORY_LIMIT_MAX)),
    cursor: v.optional(cursorText(cursors.decode)),
  },
  'INVALID_REQUEST',
);

/**
 * The states a `state` filter names: PENDING, what a client is shown for an unfinished transfer,
 * is every state that is not final; a state of the machine is itself.
 */
function statesOf(state: TransferStateName | typeof CLIENT_PENDING | undefined): readonly TransferStateName[] | null {
  if (state === undefined) return null;
  return state === CLIENT_PENDING ? UNFINISHED_STATES : [state];
}

function parseTime(s: string): Date {
  return /^\d+$/.test(s) ? new Date(Number(s)) : new Date(s);
}

export async function listHistory(c: Context<AuthEnv>, deps: AppDeps): Promise<Response> {
  const parsed = v.safeParse(HistoryQuery, c.req.query(), { abortEarly: true });
  if (!parsed.success) return fail(c, firstCode(parsed.issues));
  const q = parsed.output;
  const limit = q.limit === undefined ? HISTORY_LIMIT_DEFAULT : Number(q.limit);
  const query: ListQuery = {
    userId: c.get('claims').userId,
    beforeId: q.cursor === undefined ? null : cursors.decode(q.cursor),
    asset: q.asset ?? null,
    state: statesOf(q.state),
    fromTime: q.from_time === undefined ? null : parseTime(q.from_time),
    toTime: q.to_time === undefined ? null : parseTime(q.to_time),
    limit: limit + 1,
  };
  const rows = await deps.transfers.list(query);
  const page = rows.slice(0, limit);
  const items = [];
  for (const view of page) items.push(transferJson(view, (await deps.assets.get(view.asset))?.precision ?? 0));
  const last = page[page.length - 1];
  return c.json({ items, next_cursor: rows.length > limit && last !== undefined ? cursors.encode(last.transferId) : null });
}
