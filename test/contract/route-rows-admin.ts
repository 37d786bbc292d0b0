// The rows of the operator routes, /metrics and the console (test/contract/routes-admin.test.ts): every
// operation, and every code an operator's request can be answered with. They use the asset RTA,
// created by `prepareAdminAssets`, and put backups in directories under `BACKUP_ROOT`.
// The rows that move money or change an asset or an account come first, from
// route-rows-admin-money.ts; the operator's views and controls follow here.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as assert from 'uvu/assert';
import { ADMIN_MONEY_ROWS, ASSET, deposit, deposit1 } from './route-rows-admin-money.js';
import type { Row, RowContext } from './route-table.js';

export { prepareAdminAssets } from './route-rows-admin-money.js';

const UNKNOWN_REQ_ID = '01ARZ3NDEKTSV4RRFFQ69G5FAV';

async function transfer(ctx: RowContext): Promise<void> {
  await deposit(ctx);
  const body = { from: 'FUNDING', to: 'SPOT', asset: ASSET, amount: '1' };
  const r = await ctx.send('POST', '/api/v1/internal_transfer', { token: ctx.svc.userToken(ctx.user), body });
  assert.is(r.status, 200, r.text);
  ctx.vars.req_id = String(r.body.req_id);
}

async function resume(ctx: RowContext): Promise<void> {
  const r = await ctx.send('POST', '/admin/v1/resume', { token: ctx.svc.adminToken(), body: {} });
  assert.is(r.status, 200, r.text);
}

/** An empty directory for a backup, in a fresh temporary parent. */
async function backupDir(ctx: RowContext, name = 'dir'): Promise<string> {
  const parent = await fs.mkdtemp(path.join(os.tmpdir(), 'route-backup-'));
  ctx.vars[`${name}_parent`] = parent;
  ctx.vars[name] = path.join(parent, 'backup');
  return ctx.vars[name];
}

async function removeBackups(ctx: RowContext): Promise<void> {
  for (const [key, value] of Object.entries(ctx.vars)) if (key.endsWith('_parent')) await fs.rm(value, { recursive: true, force: true });
}

/** Starts a backup and returns once it is under way (its directory has content), with its answer pending. */
const runningBackups = new Map<bigint, Promise<unknown>>();
async function backupUnderWay(ctx: RowContext): Promise<void> {
  const first = await backupDir(ctx, 'first');
  await backupDir(ctx, 'dir');
  runningBackups.set(ctx.user, ctx.send('POST', '/admin/v1/backup', { token: ctx.svc.adminToken(), body: { dir: first } }));
  const deadline = Date.now() + 5_000;
  while (Date.now() < deadline) {
    const entries = await fs.readdir(first).catch(() => []);
    if (entries.length > 0) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`the first backup never started writing: ${JSON.stringify(await runningBackups.get(ctx.user))}`);
}

export const ADMIN_ROWS: readonly Row[] = [
  ...ADMIN_MONEY_ROWS,
  {
    name: 'GET /admin/v1/alerts answers the alerts and the conditions',
    method: 'GET',
    path: '/admin/v1/alerts?limit=5',
    as: 'admin',
    status: 200,
    check: (r) => assert.ok(Array.isArray(r.body.alerts) && Array.isArray(r.body.conditions)),
  },
  {
    name: 'an alerts limit of abc is INVALID_REQUEST',
    method: 'GET',
    path: '/admin/v1/alerts?limit=abc',
    as: 'admin',
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    name: 'GET /admin/v1/transfers?stuck=true answers the stuck transfers',
    method: 'GET',
    path: '/admin/v1/transfers?stuck=true',
    as: 'admin',
    status: 200,
    fields: { transfers: [] },
  },
  {
    name: 'stuck=maybe is INVALID_REQUEST',
    method: 'GET',
    path: '/admin/v1/transfers?stuck=maybe',
    as: 'admin',
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    name: 'POST /admin/v1/transfers/{req_id}/retry drives a transfer and answers its state',
    method: 'POST',
    path: '/admin/v1/transfers/{req_id}/retry',
    as: 'admin',
    body: {},
    setup: transfer,
    status: 200,
    fields: (ctx) => ({ req_id: ctx.vars.req_id, state: 'COMMITTED' }),
  },
  {
    name: 'a retry of an unknown transfer is NOT_FOUND',
    method: 'POST',
    path: `/admin/v1/transfers/${UNKNOWN_REQ_ID}/retry`,
    as: 'admin',
    body: {},
    status: 404,
    code: 'NOT_FOUND',
  },
  {
    name: 'GET /admin/v1/transfers/search finds a transfer by req_id',
    method: 'GET',
    path: '/admin/v1/transfers/search?req_id={req_id}',
    as: 'admin',
    setup: transfer,
    status: 200,
    check: (r, ctx) =>
      assert.equal(
        (r.body.transfers as { req_id: string }[]).map((t) => t.req_id),
        [ctx.vars.req_id],
      ),
  },
  {
    name: 'a search with an unknown parameter is INVALID_REQUEST',
    method: 'GET',
    path: '/admin/v1/transfers/search?colour=red',
    as: 'admin',
    status: 400,
    code: 'INVALID_REQUEST',
    fields: { field: 'colour' },
  },
  {
    name: 'a search for user abc is INVALID_USER',
    method: 'GET',
    path: '/admin/v1/transfers/search?user_id=abc',
    as: 'admin',
    status: 400,
    code: 'INVALID_USER',
  },
  {
    name: 'GET /admin/v1/overview answers the console overview',
    method: 'GET',
    path: '/admin/v1/overview',
    as: 'admin',
    status: 200,
    check: (r) => assert.equal(r.body.halt, { halted: false, reason: null, since: null }),
  },
  {
    name: 'GET /admin/v1/ownership answers the primary, its epoch as ledger_owner holds it, its lease proven',
    method: 'GET',
    path: '/admin/v1/ownership',
    as: 'admin',
    status: 200,
    check: (r) => {
      assert.equal([r.body.role, r.body.promoted], ['primary', false]);
      const owner = r.body.ledger_owner as { epoch: number; owner: string; promoted_at: string | null };
      assert.ok(typeof r.body.epoch === 'number' && r.body.epoch >= 1, `epoch ${String(r.body.epoch)}`);
      assert.is(owner.epoch, r.body.epoch, "the epoch this process holds is ledger_owner's");
      assert.ok(owner.owner.startsWith('transfer-') && owner.promoted_at !== null, JSON.stringify(owner));
      const lease = r.body.lease as { state: string; left_ms: number };
      assert.ok(lease.state === 'proven' && lease.left_ms > 0, JSON.stringify(lease));
      const log = r.body.spot_log as { bytes: { spot_log: number; spot_snapshots: number; spot_processed: number } };
      assert.ok(log.bytes.spot_log > 0 && log.bytes.spot_snapshots > 0 && log.bytes.spot_processed > 0, JSON.stringify(log));
    },
  },
  {
    name: 'INV-001: GET /admin/v1/invariant runs the check and finds no difference',
    method: 'GET',
    path: '/admin/v1/invariant',
    as: 'admin',
    setup: transfer,
    status: 200,
    fields: { ok: true, differences: [], halted: false },
  },
  {
    name: 'MON-003: POST /admin/v1/halt halts the service',
    method: 'POST',
    path: '/admin/v1/halt',
    as: 'admin',
    body: { reason: 'route table' },
    after: resume,
    status: 200,
    fields: { halted: true, was_halted: false, reason: 'operator: route table' },
  },
  {
    name: 'MON-003: a deposit while halted is SERVICE_HALTED',
    method: 'POST',
    path: '/admin/v1/deposit',
    as: 'admin',
    body: deposit1,
    setup: async (ctx) => {
      assert.is((await ctx.send('POST', '/admin/v1/halt', { token: ctx.svc.adminToken(), body: { reason: 'x' } })).status, 200);
    },
    after: resume,
    status: 503,
    code: 'SERVICE_HALTED',
  },
  {
    name: 'a halt without a reason is INVALID_REQUEST',
    method: 'POST',
    path: '/admin/v1/halt',
    as: 'admin',
    body: {},
    status: 400,
    code: 'INVALID_REQUEST',
    fields: { field: 'reason' },
  },
  {
    name: 'POST /admin/v1/resume lifts a halt',
    method: 'POST',
    path: '/admin/v1/resume',
    as: 'admin',
    body: {},
    setup: async (ctx) => {
      assert.is((await ctx.send('POST', '/admin/v1/halt', { token: ctx.svc.adminToken(), body: { reason: 'x' } })).status, 200);
    },
    status: 200,
    fields: { halted: false, was_halted: true, previous_reason: 'operator: x' },
  },
  {
    name: 'POST /admin/v1/backup writes both ledgers into an empty directory',
    method: 'POST',
    path: '/admin/v1/backup',
    as: 'admin',
    body: (ctx) => ({ dir: ctx.vars.dir }),
    setup: async (ctx) => void (await backupDir(ctx)),
    after: removeBackups,
    status: 200,
    fields: (ctx) => ({ dir: ctx.vars.dir }),
  },
  {
    name: 'a backup into a directory that is not empty is BACKUP_TARGET_NOT_EMPTY',
    method: 'POST',
    path: '/admin/v1/backup',
    as: 'admin',
    body: (ctx) => ({ dir: ctx.vars.dir_parent }),
    setup: async (ctx) => {
      await fs.mkdir(await backupDir(ctx));
    },
    after: removeBackups,
    status: 409,
    code: 'BACKUP_TARGET_NOT_EMPTY',
  },
  {
    name: 'a backup while another runs is BACKUP_IN_PROGRESS',
    method: 'POST',
    path: '/admin/v1/backup',
    as: 'admin',
    body: (ctx) => ({ dir: ctx.vars.dir }),
    setup: backupUnderWay,
    after: async (ctx) => {
      const first = (await runningBackups.get(ctx.user)) as { status: number };
      assert.is(first.status, 200);
      await removeBackups(ctx);
    },
    status: 409,
    code: 'BACKUP_IN_PROGRESS',
  },
  {
    name: 'a backup into a relative directory is INVALID_REQUEST',
    method: 'POST',
    path: '/admin/v1/backup',
    as: 'admin',
    body: { dir: 'relative/dir' },
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    // /sys takes no new directory, whoever asks (EPERM): the backup starts and cannot write. Not /proc: Node's
    // recursive mkdir never settles there (it retries ENOENT), and the backup would hang.
    name: 'a backup into a directory that cannot be created is BACKUP_FAILED',
    method: 'POST',
    path: '/admin/v1/backup',
    as: 'admin',
    body: { dir: '/sys/route-table-backup' },
    status: 500,
    code: 'BACKUP_FAILED',
  },
  {
    name: 'GET /admin/v1/audit answers the audit trail, newest first',
    method: 'GET',
    path: '/admin/v1/audit?limit=1',
    as: 'admin',
    setup: async (ctx) => {
      assert.is((await ctx.send('POST', '/admin/v1/resume', { token: ctx.svc.adminToken(), body: {} })).status, 200);
    },
    status: 200,
    check: (r) => assert.is((r.body.items as { action: string }[])[0]?.action, 'service.resume'),
  },
  {
    name: 'an audit limit of 0 is INVALID_REQUEST',
    method: 'GET',
    path: '/admin/v1/audit?limit=0',
    as: 'admin',
    status: 400,
    code: 'INVALID_REQUEST',
  },
  {
    name: 'GET /metrics answers the Prometheus text',
    method: 'GET',
    path: '/metrics',
    as: 'none',
    status: 200,
    check: (r) => assert.ok(r.text.includes('transfer_http_request_duration_seconds'), r.text.slice(0, 200)),
  },
  {
    name: 'GET /console answers the operator console page',
    method: 'GET',
    path: '/console',
    as: 'none',
    status: 200,
    check: (r) => assert.ok(r.text.includes('<html'), r.text.slice(0, 200)),
  },
  {
    name: 'an unknown admin route is NOT_FOUND',
    method: 'GET',
    path: '/admin/v1/nothing-here',
    as: 'admin',
    status: 404,
    code: 'NOT_FOUND',
  },
];
