// The paths of the client routes and of the public ones (probes, metrics, this document, its page).

import { ERROR_CODES } from '../../domain/errors.js';
import * as ex from './examples.js';
import { json, operation } from './operation.js';
import { historyParams, reqIdPath } from './params.js';

type Json = Record<string, unknown>;

/** Every code but NOT_FOUND and INVALID_USER: a transfer is checked, then each layer may refuse it. */
const TRANSFER_CODES = ERROR_CODES.filter((c) => c !== 'NOT_FOUND' && c !== 'INVALID_USER');

const page = (type: string, description: string): Json => ({ description, content: { [type]: { schema: { type: 'string' } } } });

export const apiPaths: Record<string, Json> = {
  '/api/v1/internal_transfer': {
    post: operation({
      id: 'createTransfer',
      tag: 'transfers',
      summary: 'Move an asset between FUNDING and SPOT',
      auth: 'user',
      body: { schema: 'TransferRequest', example: ex.transferRequest },
      ok: {
        '200': json('TransferAnswer', 'Terminal: COMMITTED or ROLLED_BACK', ex.transferAnswer),
        '202': json('TransferAnswer', 'Still moving (state PENDING); poll GET /api/v1/internal_transfer/{req_id}', ex.transferPending),
      },
      codes: TRANSFER_CODES,
      errorExamples: { '422': ex.transferFailed, '500': ex.transferError },
    }),
    get: operation({
      id: 'listTransfers',
      tag: 'transfers',
      summary: "The caller's transfers, newest first, paged by an opaque cursor",
      auth: 'user',
      parameters: historyParams,
      ok: { '200': json('HistoryPage', 'A page', ex.historyPage) },
      codes: ['INVALID_REQUEST', 'INVALID_ASSET'],
    }),
  },
  '/api/v1/internal_transfer/{req_id}': {
    get: operation({
      id: 'getTransfer',
      tag: 'transfers',
      summary: "One of the caller's transfers with its state history",
      auth: 'user',
      parameters: [reqIdPath],
      ok: { '200': json('TransferDetail', 'The transfer', ex.transferDetail) },
      codes: ['NOT_FOUND'],
    }),
  },
  '/api/v1/balances': {
    get: operation({
      id: 'getBalances',
      tag: 'balances',
      summary: "The caller's FUNDING and SPOT balances",
      auth: 'user',
      ok: { '200': json('Balances', 'Balances', ex.balances) },
      codes: ['SERVICE_UNAVAILABLE'],
    }),
  },
  '/healthz': {
    get: operation({
      id: 'getHealth',
      tag: 'health',
      summary: 'Liveness: 200 while the process accepts requests',
      auth: 'public',
      ok: { '200': json('Health', 'Alive', ex.health) },
      probe: true,
    }),
  },
  '/readyz': {
    get: operation({
      id: 'getReadiness',
      tag: 'health',
      summary: 'Readiness: PostgreSQL answers, the owner lock is held, UBSCore answers and the service is not halted',
      auth: 'public',
      ok: { '200': json('Ready', 'Ready', ex.ready) },
      errorExamples: { '503': ex.notReady },
      alsoAnswers: { '503': 'NotReady' },
      probe: true,
    }),
  },
  '/metrics': {
    get: operation({
      id: 'getMetrics',
      tag: 'health',
      summary: 'Prometheus text format (on the admin listener with ADMIN_PORT)',
      auth: 'public',
      ok: { '200': page('text/plain', 'Metrics') },
    }),
  },
  '/openapi.json': {
    get: operation({
      id: 'getOpenApiDocument',
      tag: 'docs',
      summary: 'This document',
      auth: 'public',
      ok: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } },
    }),
  },
  '/docs': {
    get: operation({
      id: 'getDocsPage',
      tag: 'docs',
      summary: 'Interactive documentation (Swagger UI) over this document',
      auth: 'public',
      ok: { '200': page('text/html', 'HTML page') },
    }),
  },
  '/console': {
    get: operation({
      id: 'getConsolePage',
      tag: 'operator',
      summary: 'The operator console (a public page; its script calls the admin routes with the pasted admin token)',
      auth: 'public',
      ok: { '200': page('text/html', 'HTML page') },
    }),
  },
};
