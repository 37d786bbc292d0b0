// The OpenAPI 3.1 document, generated from the valibot schemas that validate the requests, and
// the interactive page at /docs (Swagger UI, served from the swagger-ui-dist package).

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { toJsonSchema } from '@valibot/to-json-schema';
import type { Hono } from 'hono';
import type * as v from 'valibot';
import { ERROR_CODES, statusOf } from './errors.js';
import { HistoryQuery } from './history.js';
import * as s from './schemas.js';

type Json = Record<string, unknown>;
type AnySchema = v.GenericSchema;

function schema(x: AnySchema): Json {
  const json = toJsonSchema(x, { errorMode: 'ignore' }) as Json;
  delete json.$schema;
  return json;
}

const content = (x: AnySchema): Json => ({ 'application/json': { schema: schema(x) } });

/** The error answers an operation can give, grouped by HTTP status. */
function errors(codes: readonly string[]): Record<string, Json> {
  const byStatus = new Map<number, string[]>();
  for (const code of codes) byStatus.set(statusOf(code), [...(byStatus.get(statusOf(code)) ?? []), code]);
  const out: Record<string, Json> = {};
  for (const [status, list] of byStatus) out[String(status)] = { description: list.join(', '), content: content(s.errorAnswer(list)) };
  return out;
}

const COMMON = ['UNAUTHORIZED', 'RATE_LIMIT_EXCEEDED', 'SYSTEM_ERROR'];
const TRANSFER_CODES = ERROR_CODES.filter((c) => !['NOT_FOUND', 'PAYLOAD_TOO_LARGE'].includes(c)).concat('PAYLOAD_TOO_LARGE');

function operation(summary: string, responses: Record<string, Json>, extra: Json = {}): Json {
  return { summary, security: [{ bearer: [] }], responses, ...extra };
}

export function openApiDocument(): Json {
  const queryParams = Object.keys(HistoryQuery.entries).map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } }));
  return {
    openapi: '3.1.0',
    info: { title: 'Internal transfers: FUNDING ⇄ SPOT', version: '1.0.0', description: 'Amounts are decimal strings in the asset\'s units. Every error answer is {"code","message"}.' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT (HS256 with JWT_SECRET, or RS256/ES256/EdDSA from the JWKS by kid; exp required; iss/aud when configured; /api: sub = user id; /admin: role=admin, sub = the operator)' } } },
    paths: {
      '/api/v1/internal_transfer': {
        post: operation('Move an asset between FUNDING and SPOT', { '200': { description: 'Terminal (COMMITTED or ROLLED_BACK)', content: content(s.TransferAnswer) }, '202': { description: 'Still moving; poll GET', content: content(s.TransferAnswer) }, ...errors(TRANSFER_CODES) }, { requestBody: { required: true, content: content(s.TransferBody) } }),
        get: operation('List the caller\'s transfers, newest first', { '200': { description: 'A page', content: content(s.TransferPage) }, ...errors([...COMMON, 'INVALID_REQUEST', 'INVALID_ASSET']) }, { parameters: queryParams }),
      },
      '/api/v1/internal_transfer/{req_id}': {
        get: operation('Read one transfer with its state history', { '200': { description: 'The transfer', content: content(s.TransferDetail) }, ...errors([...COMMON, 'NOT_FOUND']) }, { parameters: [{ name: 'req_id', in: 'path', required: true, schema: { type: 'string' } }] }),
      },
      '/api/v1/balances': { get: operation('The caller\'s FUNDING and SPOT balances', { '200': { description: 'Balances', content: content(s.BalancesAnswer) }, ...errors([...COMMON, 'SERVICE_UNAVAILABLE']) }) },
      '/admin/v1/deposit': { post: operation('Credit an account from outside, idempotent by ref', { '200': { description: 'Done', content: content(s.DepositAnswer) }, '202': { description: 'Pending at UBSCore; repeat with the same ref', content: content(s.DepositAnswer) }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST', 'INVALID_USER', 'INVALID_ACCOUNT_TYPE', 'INVALID_ASSET', 'INVALID_AMOUNT', 'PRECISION_OVERFLOW', 'OVERFLOW', 'DUPLICATE_REQUEST', 'SERVICE_HALTED']) }, { requestBody: { required: true, content: content(s.DepositBody) } }) },
      '/admin/v1/withdraw': { post: operation('Debit an account to outside (the trading side spending funds), idempotent by ref', { '200': { description: 'Done', content: content(s.DepositAnswer) }, '202': { description: 'Pending at UBSCore; repeat with the same ref', content: content(s.DepositAnswer) }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST', 'INVALID_USER', 'INVALID_ACCOUNT_TYPE', 'INVALID_ASSET', 'INVALID_AMOUNT', 'PRECISION_OVERFLOW', 'OVERFLOW', 'DUPLICATE_REQUEST', 'INSUFFICIENT_BALANCE', 'ACCOUNT_FROZEN', 'ACCOUNT_DISABLED', 'SOURCE_ACCOUNT_NOT_FOUND', 'SERVICE_HALTED']) }, { requestBody: { required: true, content: content(s.DepositBody) } }) },
      '/admin/v1/assets/{symbol}': { put: operation('Create or change an asset', { '200': { description: 'Changed' }, '201': { description: 'Created' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST', 'INVALID_ASSET', 'INVALID_AMOUNT', 'PRECISION_OVERFLOW', 'OVERFLOW']) }, { requestBody: { required: true, content: content(s.AssetBody) }, parameters: [{ name: 'symbol', in: 'path', required: true, schema: { type: 'string' } }] }) },
      '/admin/v1/account_status': { post: operation('Set a FUNDING or SPOT account status', { '200': { description: 'Set' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST', 'INVALID_USER', 'INVALID_ACCOUNT_TYPE', 'INVALID_ASSET', 'NOT_FOUND', 'SERVICE_UNAVAILABLE']) }, { requestBody: { required: true, content: content(s.AccountStatusBody) } }) },
      '/admin/v1/alerts': { get: operation('Alerts, newest first', { '200': { description: '{"alerts":[…]}' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST']) }, { parameters: [{ name: 'limit', in: 'query', required: false, schema: { type: 'string' } }] }) },
      '/admin/v1/transfers': { get: operation('Unfinished transfers, or with stuck=true those needing an operator, with their history', { '200': { description: '{"transfers":[…]}' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST']) }, { parameters: ['stuck', 'limit'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })) }) },
      '/admin/v1/transfers/{req_id}/retry': { post: operation('Drive one transfer now through the same step(); never sets a state', { '200': { description: 'Its state and history' }, ...errors([...COMMON, 'FORBIDDEN', 'NOT_FOUND', 'SERVICE_UNAVAILABLE']) }, { parameters: [{ name: 'req_id', in: 'path', required: true, schema: { type: 'string' } }] }) },
      '/admin/v1/overview': { get: operation('The console\'s now: last minute\'s transfers/s and p99, unfinished by state, funds in flight, WAL position, halt, last conservation check', { '200': { description: 'The overview' }, ...errors([...COMMON, 'FORBIDDEN']) }) },
      '/admin/v1/transfers/search': { get: operation('Find transfers by req_id, by user_id and client_order_id, or by user_id (newest first, limit 1–50), with their history', { '200': { description: '{"transfers":[…]}' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST', 'INVALID_USER']) }, { parameters: ['req_id', 'user_id', 'client_order_id', 'limit'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })) }) },
      '/admin/v1/invariant': { get: operation('Run the fund conservation check now; a difference halts new transfers', { '200': { description: 'The report' }, ...errors([...COMMON, 'FORBIDDEN']) }) },
      '/admin/v1/halt': { post: operation('Halt the service: new transfers and external movements refused (SERVICE_HALTED), in-flight transfers go on', { '200': { description: '{"halted":true,"was_halted","reason","since"}' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST']) }) },
      '/admin/v1/resume': { post: operation('Lift the halt (a conservation violation or an operator\'s halt)', { '200': { description: '{"halted":false,…}' }, ...errors([...COMMON, 'FORBIDDEN']) }) },
      '/admin/v1/audit': { get: operation('Admin actions, newest first, with an opaque cursor', { '200': { description: '{"items":[…],"next_cursor"}' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST']) }, { parameters: ['limit', 'cursor'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })) }) },
      '/admin/v1/backup': { post: operation('Write both halves of the ledger at one cut into an empty directory on the service\'s host (UBSCore pauses for the copy)', { '200': { description: '{"dir","ledger_id","wal_seq","pg_snapshot","pause_ms","ubscore_bytes","tables"}' }, ...errors([...COMMON, 'FORBIDDEN', 'INVALID_REQUEST', 'BACKUP_TARGET_NOT_EMPTY', 'BACKUP_IN_PROGRESS', 'BACKUP_FAILED']) }, { requestBody: { required: true, content: content(s.BackupBody) } }) },
      '/healthz': { get: { summary: 'Liveness: 200 while the process accepts requests', responses: { '200': { description: 'ok' }, '503': { description: 'not ready' } } } },
      '/readyz': { get: { summary: 'Readiness: PostgreSQL and UBSCore answer and the service is not halted', responses: { '200': { description: 'ready' }, '503': { description: 'not ready, with the reason' } } } },
      '/metrics': { get: { summary: 'Prometheus text format', responses: { '200': { description: 'metrics', content: { 'text/plain': {} } } } } },
      '/openapi.json': { get: { summary: 'This document', responses: { '200': { description: 'OpenAPI 3.1' } } } },
      '/console': { get: { summary: 'The operator console (public page; its script calls the admin routes with the pasted admin token)', responses: { '200': { description: 'HTML page', content: { 'text/html': {} } } } } },
      '/docs': { get: { summary: 'Interactive documentation (Swagger UI) over this document', responses: { '200': { description: 'HTML page', content: { 'text/html': {} } } } } },
    },
    'x-error-codes': ERROR_CODES.map((code) => ({ code, status: statusOf(code) })),
  };
}

const SWAGGER_DIR = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
const ASSETS: Readonly<Record<string, string>> = { 'swagger-ui.css': 'text/css', 'swagger-ui-bundle.js': 'text/javascript' };

const DOCS_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Internal transfers API</title>
<link rel="stylesheet" href="/docs/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui' });</script>
</body></html>`;

export function mountDocs(app: Hono): void {
  const document = openApiDocument();
  const files = new Map(Object.entries(ASSETS).map(([name, type]) => [name, { type, body: readFileSync(path.join(SWAGGER_DIR, name)) }]));
  app.get('/openapi.json', (c) => c.json(document));
  app.get('/docs', (c) => c.html(DOCS_PAGE));
  app.get('/docs/:file', (c) => {
    const file = files.get(c.req.param('file'));
    if (file === undefined) return c.json({ code: 'NOT_FOUND', message: 'No such resource' }, 404);
    return c.body(new Uint8Array(file.body), 200, { 'content-type': file.type, 'cache-control': 'max-age=3600' });
  });
}
