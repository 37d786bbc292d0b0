// Query and path parameters of the OpenAPI document, typed with the bounds and patterns the
// routes enforce (each constant is imported from the route that checks it).

import { ASSET_SYMBOL, KEY, ULID, USER_ID_TEXT } from '../../domain/checks.js';
import { STATE_NAMES, UNFINISHED_STATES } from '../../domain/fsm.js';
import { CURSOR } from '../routes/cursor.js';
import { EPOCH_MS, ISO_TIME } from '../routes/history.js';
import { CLIENT_PENDING } from '../routes/views.js';
import {
  AUDIT_LIMIT_DEFAULT,
  AUDIT_LIMIT_MAX,
  HISTORY_LIMIT_DEFAULT,
  HISTORY_LIMIT_MAX,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  SEARCH_LIMIT_DEFAULT,
  SEARCH_LIMIT_MAX,
} from '../../limits.js';

type Json = Record<string, unknown>;

const query = (name: string, schema: Json, description: string, example?: unknown): Json => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
  ...(example === undefined ? {} : { example }),
});
const path = (name: string, schema: Json, description: string, example: unknown): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema,
  example,
});

const limit = (max: number, byDefault: number): Json =>
  query(
    'limit',
    { type: 'integer', minimum: 1, maximum: max, default: byDefault },
    `At most this many items, 1 to ${max}`,
    Math.min(10, max),
  );
const cursor = query('cursor', { type: 'string', pattern: CURSOR.source }, 'The opaque next_cursor of the previous page');

/** ISO 8601 with a zone (at most 6 fractional digits), or epoch milliseconds: both are taken. */
const time = (name: string, description: string): Json =>
  query(
    name,
    {
      oneOf: [
        { type: 'string', format: 'date-time', pattern: ISO_TIME.source },
        { type: 'string', pattern: EPOCH_MS.source, description: 'Epoch milliseconds' },
      ],
    },
    description,
    '2026-01-31T00:00:00Z',
  );

export const reqIdPath = path(
  'req_id',
  { type: 'string', pattern: ULID.source },
  "The transfer's req_id (a ULID); anything else is 404",
  '01JH0R7Y4K9V3T8N2M5QWXZ6AB',
);
export const symbolPath = path(
  'symbol',
  { type: 'string', pattern: ASSET_SYMBOL.source },
  'The asset symbol; anything else is 400 INVALID_ASSET',
  'USDT',
);

export const historyParams: Json[] = [
  query('asset', { type: 'string', pattern: ASSET_SYMBOL.source }, 'Only transfers of this asset', 'USDT'),
  query(
    'state',
    { type: 'string', enum: [...STATE_NAMES, CLIENT_PENDING] },
    `Only transfers in this state: ${CLIENT_PENDING}, the state an answer shows for an unfinished transfer, is every state that is not final (${UNFINISHED_STATES.join(', ')}); a state of the machine (internal_state) is that state alone`,
    CLIENT_PENDING,
  ),
  time('from_time', 'Created at or after (inclusive): ISO 8601 with a zone, or epoch milliseconds'),
  time('to_time', 'Created before (exclusive): ISO 8601 with a zone, or epoch milliseconds'),
  limit(HISTORY_LIMIT_MAX, HISTORY_LIMIT_DEFAULT),
  cursor,
];

export const alertsParams: Json[] = [limit(LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT)];

export const unfinishedParams: Json[] = [
  query('stuck', { type: 'boolean', default: false }, 'true: only those needing an operator', true),
  limit(LIST_LIMIT_MAX, LIST_LIMIT_DEFAULT),
];

export const searchParams: Json[] = [
  query('req_id', { type: 'string', pattern: ULID.source }, 'Alone: the transfer with this req_id'),
  query('user_id', { type: 'string', pattern: USER_ID_TEXT.source }, 'The user (1 to 2^63−1); alone, their newest transfers', '42'),
  query('client_order_id', { type: 'string', pattern: KEY.source }, 'With user_id: the transfer with this client_order_id'),
  limit(SEARCH_LIMIT_MAX, SEARCH_LIMIT_DEFAULT),
];

export const auditParams: Json[] = [limit(AUDIT_LIMIT_MAX, AUDIT_LIMIT_DEFAULT), cursor];
