// Proves that what the running service answers is what its OpenAPI document says: for a walk
// through every operation (successes and the usual errors), the status is documented for that
// operation and the body validates against the schema of that status.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { answerProblem, schemaValidator } from './openapi-check.js';
import { startTestService, type TestService } from '../support/service.js';

type Json = Record<string, unknown>;
type Step = {
  readonly method: string;
  readonly path: string;
  readonly url?: string;
  readonly as?: 'user' | 'admin' | 'none';
  readonly body?: unknown;
  readonly status: number;
};

const USER = 4242n;
let svc: TestService;
let doc: Json;
let compile: ReturnType<typeof schemaValidator>;
const seen = new Set<string>();

test.before(async () => {
  svc = await startTestService({ RATE_LIMIT_PER_SECOND: '0', DAILY_TRANSFER_LIMIT: '0' });
  doc = (await svc.call('GET', '/openapi.json')).body;
  compile = schemaValidator(doc);
});

test.after(async () => {
  await svc.stop();
});

/** Runs one request and checks its answer against the document; returns the body. */
async function step(s: Step): Promise<Json> {
  const token = s.as === 'none' ? undefined : s.as === 'admin' ? svc.adminToken() : svc.userToken(USER);
  const reply = await svc.call(s.method, s.url ?? s.path, s.body === undefined ? { token } : { token, body: s.body });
  assert.is(reply.status, s.status, `${s.method} ${s.url ?? s.path}: ${JSON.stringify(reply.body)}`);
  const problem = answerProblem(doc, compile, s.method, s.path, reply.status, reply.body);
  assert.ok(problem === null, problem ?? '');
  seen.add(`${s.method} ${s.path}`);
  return reply.body;
}

test('client routes answer as documented', async () => {
  const admin = 'admin' as const;
  await step({
    method: 'PUT',
    path: '/admin/v1/assets/{symbol}',
    url: '/admin/v1/assets/DOCS',
    as: admin,
    body: { precision: 6, min_transfer_amount: '0.01', max_transfer_amount: '1000000', status: 'ACTIVE', internal_transfer_enabled: true },
    status: 201,
  });
  await step({
    method: 'PUT',
    path: '/admin/v1/assets/{symbol}',
    url: '/admin/v1/assets/DOCS',
    as: admin,
    body: {
      precision: 6,
      min_transfer_amount: '0.01',
      max_transfer_amount: '1000000',
      status: 'ACTIVE',
      internal_transfer_enabled: true,
      daily_amount_limit: null,
    },
    status: 200,
  });
  await step({ method: 'PUT', path: '/admin/v1/assets/{symbol}', url: '/admin/v1/assets/bad', as: admin, body: {}, status: 400 });
  const deposit = { user_id: String(USER), account: 'FUNDING', asset: 'DOCS', amount: '100', ref: 'docs-dep-1' };
  await step({ method: 'POST', path: '/admin/v1/deposit', as: admin, body: deposit, status: 200 });
  await step({ method: 'POST', path: '/admin/v1/deposit', as: admin, body: deposit, status: 200 });
  await step({ method: 'POST', path: '/admin/v1/deposit', as: admin, body: { ...deposit, amount: '7' }, status: 409 });
  await step({ method: 'POST', path: '/admin/v1/deposit', as: 'user', body: deposit, status: 403 });
  await step({
    method: 'POST',
    path: '/admin/v1/withdraw',
    as: admin,
    body: { ...deposit, account: 'SPOT', ref: 'docs-wd-1', amount: '1000' },
    status: 422,
  });
  const to = await step({
    method: 'POST',
    path: '/api/v1/internal_transfer',
    body: { from: 'FUNDING', to: 'SPOT', asset: 'DOCS', amount: '25.5', client_order_id: 'docs-1' },
    status: 200,
  });
  await step({
    method: 'POST',
    path: '/api/v1/internal_transfer',
    body: { from: 'SPOT', to: 'FUNDING', asset: 'DOCS', amount: '5' },
    status: 200,
  });
  await step({
    method: 'POST',
    path: '/api/v1/internal_transfer',
    body: { from: 'SPOT', to: 'FUNDING', asset: 'DOCS', amount: '5000' },
    status: 422,
  });
  await step({
    method: 'POST',
    path: '/api/v1/internal_transfer',
    body: { from: 'SPOT', to: 'SPOT', asset: 'DOCS', amount: '1' },
    status: 400,
  });
  await step({ method: 'POST', path: '/api/v1/internal_transfer', as: 'none', body: {}, status: 401 });
  await step({
    method: 'POST',
    path: '/api/v1/internal_transfer',
    body: { from: 'FUNDING', to: 'SPOT', asset: 'DOCS', amount: '1', pad: 'x'.repeat(200_000) },
    status: 413,
  });
  await step({
    method: 'GET',
    path: '/api/v1/internal_transfer/{req_id}',
    url: `/api/v1/internal_transfer/${String(to.req_id)}`,
    status: 200,
  });
  await step({ method: 'GET', path: '/api/v1/internal_transfer/{req_id}', url: '/api/v1/internal_transfer/nope', status: 404 });
  const first = await step({
    method: 'GET',
    path: '/api/v1/internal_transfer',
    url: '/api/v1/internal_transfer?limit=1&asset=DOCS',
    status: 200,
  });
  await step({
    method: 'GET',
    path: '/api/v1/internal_transfer',
    url: `/api/v1/internal_transfer?limit=1&cursor=${String(first.next_cursor)}&from_time=0&to_time=2100-01-01T00:00:00Z`,
    status: 200,
  });
  await step({ method: 'GET', path: '/api/v1/internal_transfer', url: '/api/v1/internal_transfer?state=PENDING', status: 200 });
  await step({ method: 'GET', path: '/api/v1/internal_transfer', url: '/api/v1/internal_transfer?state=NOPE', status: 400 });
  await step({ method: 'GET', path: '/api/v1/balances', status: 200 });
  await step({
    method: 'POST',
    path: '/admin/v1/account_status',
    as: admin,
    body: { user_id: String(USER), account: 'SPOT', asset: 'DOCS', status: 'ACTIVE' },
    status: 200,
  });
  await step({
    method: 'POST',
    path: '/admin/v1/account_status',
    as: admin,
    body: { user_id: '999999', account: 'FUNDING', asset: 'DOCS', status: 'FROZEN' },
    status: 404,
  });
});

test('operator, audit and public routes answer as documented', async () => {
  const admin = 'admin' as const;
  const found = await step({
    method: 'GET',
    path: '/admin/v1/transfers/search',
    url: `/admin/v1/transfers/search?user_id=${USER}&limit=5`,
    as: admin,
    status: 200,
  });
  const reqId = String(((found.transfers as Json[])[0] as Json).req_id);
  await step({
    method: 'GET',
    path: '/admin/v1/transfers/search',
    url: `/admin/v1/transfers/search?req_id=${reqId}`,
    as: admin,
    status: 200,
  });
  await step({ method: 'GET', path: '/admin/v1/transfers/search', url: '/admin/v1/transfers/search?user_id=0', as: admin, status: 400 });
  await step({
    method: 'POST',
    path: '/admin/v1/transfers/{req_id}/retry',
    url: `/admin/v1/transfers/${reqId}/retry`,
    as: admin,
    status: 200,
  });
  await step({ method: 'GET', path: '/admin/v1/alerts', url: '/admin/v1/alerts?limit=5', as: admin, status: 200 });
  await step({ method: 'GET', path: '/admin/v1/transfers', url: '/admin/v1/transfers?stuck=true', as: admin, status: 200 });
  await step({ method: 'GET', path: '/admin/v1/invariant', as: admin, status: 200 });
  await step({ method: 'GET', path: '/admin/v1/overview', as: admin, status: 200 });
  await step({ method: 'GET', path: '/admin/v1/ownership', as: admin, status: 200 });
  const backupDir = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-docs-backup-')), 'b');
  try {
    await step({ method: 'POST', path: '/admin/v1/backup', as: admin, body: { dir: backupDir }, status: 200 });
    await step({ method: 'POST', path: '/admin/v1/backup', as: admin, body: { dir: backupDir }, status: 409 });
    await step({ method: 'POST', path: '/admin/v1/backup', as: admin, body: {}, status: 400 });
  } finally {
    await fs.rm(path.dirname(backupDir), { recursive: true, force: true });
  }
  await step({ method: 'POST', path: '/admin/v1/halt', as: admin, body: { reason: 'docs walk' }, status: 200 });
  await step({
    method: 'POST',
    path: '/api/v1/internal_transfer',
    body: { from: 'FUNDING', to: 'SPOT', asset: 'DOCS', amount: '1' },
    status: 503,
  });
  await step({ method: 'GET', path: '/readyz', as: 'none', status: 503 });
  await step({ method: 'POST', path: '/admin/v1/resume', as: admin, status: 200 });
  await step({ method: 'GET', path: '/readyz', as: 'none', status: 200 });
  await step({ method: 'GET', path: '/healthz', as: 'none', status: 200 });
  const page = await step({ method: 'GET', path: '/admin/v1/audit', url: '/admin/v1/audit?limit=2', as: admin, status: 200 });
  await step({
    method: 'GET',
    path: '/admin/v1/audit',
    url: `/admin/v1/audit?limit=2&cursor=${String(page.next_cursor)}`,
    as: admin,
    status: 200,
  });
  await step({ method: 'GET', path: '/admin/v1/audit', url: '/admin/v1/audit?limit=0', as: admin, status: 400 });
  await step({ method: 'GET', path: '/admin/v1/audit', as: 'user', status: 403 });
});

test('every /api and /admin operation of the document was walked', () => {
  const operations = Object.entries(doc.paths as Record<string, Json>).flatMap(([path, item]) =>
    Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`),
  );
  const missed = operations.filter((o) => / \/(api|admin)\//.test(o) && !seen.has(o));
  assert.equal(missed, []);
});

test.run();
