// Proves the operator console in a real browser (Debian's Chromium through playwright-core)
// against the real service with real transfers: it loads with no console error and no request
// leaving 127.0.0.1, shows the counts the API answers, lists the stuck transfer and retries it
// until it commits once the fault is lifted, asks for a typed confirmation before lifting a
// halt, finds transfers, shows the admin audit trail, and refuses a user's token.

import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { HeldRow } from '../support/locks.js';
import { cleanupAll, createHarness, PROJECT_ROOT, useOneServerForThisFile, type ChildService, type Harness } from '../support/process.js';
import { call, makeStuck, nudgeBalance, seed, SERVICE_ENV, STUCK_USER } from './console-fixture.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(PROJECT_ROOT, 'test', 'artifacts');
const LAPTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };
const WAIT_MS = 15_000;

let h: Harness;
let svc: ChildService;
let browser: Browser;
let page: Page;
let stuck: { reqId: string; state: string; row: HeldRow };
const requests: string[] = [];
/** Console errors, except a failed load of a JSON route whose status the page shows itself. */
const consoleErrors: string[] = [];
const EXPECTED_STATUS_URLS = [/\/admin\/v1\/audit\?/, /\/readyz$/, /\/admin\/v1\/transfers\/search\?/];

async function openConsole(token: string | null, viewport = LAPTOP, refusalExpected = false): Promise<Page> {
  const context = await browser.newContext({ viewport });
  const p = await context.newPage();
  p.on('request', (r) => requests.push(r.url()));
  p.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message}`));
  p.on('console', (m) => {
    if (m.type() !== 'error') return;
    const url = m.location().url;
    if (m.text().startsWith('Failed to load resource') && EXPECTED_STATUS_URLS.some((re) => re.test(url))) return;
    if (m.text().startsWith('Failed to load resource') && refusalExpected && /\/admin\/v1\//.test(url)) return;
    consoleErrors.push(`${m.text()} (${url})`);
  });
  await p.goto(`${svc.base}/console`);
  if (token !== null) {
    await p.getByLabel('Admin token').fill(token);
    await p.getByRole('button', { name: 'Use token' }).click();
  }
  return p;
}

const shot = (p: Page, name: string) => p.screenshot({ path: path.join(ARTIFACTS, name), fullPage: true });
const text = async (selector: string) => (await page.locator(selector).textContent())?.trim() ?? '';

test.before(async () => {
  await setUp().catch((error: unknown) => {
    // uvu says nothing of a failing hook: say it here, then fail every test.
    process.stderr.write(
      `console.browser: set-up failed: ${error instanceof Error ? error.stack : String(error)} ${JSON.stringify(error)}\n`,
    );
    throw error;
  });
});

async function setUp(): Promise<void> {
  await fs.mkdir(ARTIFACTS, { recursive: true });
  await useOneServerForThisFile();
  h = await createHarness();
  svc = await h.start(SERVICE_ENV);
  await seed(h, svc);
  stuck = await makeStuck(h, svc);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  page = await openConsole(h.adminToken());
}

test.after(async () => {
  stuck?.row.release();
  await browser?.close();
  await h?.cleanup();
  await cleanupAll();
});

test('the page loads with a strict CSP, shows the stuck transfer, and its counts match the API', async () => {
  const raw = await fetch(`${svc.base}/console`);
  assert.match(raw.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
  await page.locator(`#unfinished li.stuck[data-req-id="${stuck.reqId}"]`).waitFor({ timeout: WAIT_MS });
  const overview = await call(h, svc, 'GET', '/admin/v1/overview');
  const unfinished = (await call(h, svc, 'GET', '/admin/v1/transfers')).body.transfers as { state: string }[];
  for (const [state, n] of Object.entries(overview.body.unfinished_by_state as Record<string, number>)) {
    assert.is(await text(`#by-state tr[data-state="${state}"] td.num`), String(n), state);
    assert.is(unfinished.filter((t) => t.state === state).length, n, `${state} in /admin/v1/transfers`);
  }
  assert.is((overview.body.unfinished_by_state as Record<string, number>)[stuck.state], 1);
  const inFlight = overview.body.in_flight as { asset: string; amount: string }[];
  assert.is(await page.locator('#in-flight tr[data-asset]').count(), inFlight.length);
  for (const f of inFlight) assert.is(await text(`#in-flight tr[data-asset="${f.asset}"] td.num`), f.amount);
  assert.is(await text('#wal'), String(overview.body.wal_seq));
  // The ownership panel shows what GET /admin/v1/ownership answers.
  const own = (await call(h, svc, 'GET', '/admin/v1/ownership')).body as { epoch: number; spot_log: { archived_through_seq: number } };
  await page.locator('#own-role', { hasText: 'primary' }).waitFor({ timeout: WAIT_MS });
  assert.is(await text('#own-epoch'), String(own.epoch));
  assert.match(await text('#own-lease'), /^proven, [0-9.]+ s left$/);
  assert.is(await text('#own-archived'), String(own.spot_log.archived_through_seq));
  const now = overview.body.now as { accepted: number; transfers_per_s: string };
  assert.ok(now.accepted >= 19, JSON.stringify(now));
  assert.not.equal(await text('#p99'), '–');
  const item = page.locator(`#unfinished li[data-req-id="${stuck.reqId}"]`);
  assert.match(
    (await item.textContent()) ?? '',
    new RegExp(
      `${stuck.state}[\\s\\S]*user 7100[\\s\\S]*250\\.50000000 USDT[\\s\\S]*retries 1[\\s\\S]*last error: TIMEOUT: funding DEPOSIT: canceling statement due to lock timeout`,
    ),
  );
  await page.locator('#alerts li', { hasText: 'ABNORMAL_FREQUENCY' }).waitFor({ timeout: WAIT_MS });
  // The audit panel shows what GET /admin/v1/audit answers: the newest admin action first, with its operator.
  const audit = (await call(h, svc, 'GET', '/admin/v1/audit?limit=1')).body.items as { id: string; action: string; operator: string }[];
  const newest = audit[0];
  assert.ok(newest !== undefined, 'the setup made admin actions');
  const row = page.locator(`#audit li[data-audit-id="${newest.id}"]`);
  await row.waitFor({ timeout: WAIT_MS });
  assert.match((await row.textContent()) ?? '', new RegExp(`${newest.action.replace('.', '\\.')}[\\s\\S]*by ${newest.operator}`));
});

test('a conservation difference halts: the banner says why, and Resume needs RESUME typed', async () => {
  await nudgeBalance(h.sql, 7002, 1);
  await page.getByRole('button', { name: 'Run check now' }).click();
  await page.locator('#check-result', { hasText: '1 difference(s)' }).waitFor({ timeout: WAIT_MS });
  await page.locator('#banner', { hasText: 'halted: conservation violated' }).waitFor({ timeout: WAIT_MS });
  await page.locator('#alerts li', { hasText: 'CONSERVATION_VIOLATION' }).waitFor({ timeout: WAIT_MS });
  assert.is(await page.locator('#resume-box').isVisible(), true);
  await shot(page, 'console-laptop.png');
  const resumesBefore = requests.filter((u) => u.endsWith('/admin/v1/resume')).length;
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.locator('#check-result', { hasText: 'Not sent' }).waitFor({ timeout: WAIT_MS });
  assert.is(requests.filter((u) => u.endsWith('/admin/v1/resume')).length, resumesBefore, 'nothing sent without the confirmation');
  assert.is((await svc.call('GET', '/readyz')).status, 503);
  await nudgeBalance(h.sql, 7002, -1);
  await page.getByRole('button', { name: 'Run check now' }).click();
  await page.locator('#check-result', { hasText: 'Check passed' }).waitFor({ timeout: WAIT_MS });
  await page.getByLabel('Type RESUME to lift the halt').fill('RESUME');
  await page.getByRole('button', { name: 'Resume' }).click();
  await page.locator('#check-result', { hasText: 'Halt lifted' }).waitFor({ timeout: WAIT_MS });
  assert.is((await svc.call('GET', '/readyz')).status, 200);
  await page.locator('#resume-box').waitFor({ state: 'hidden', timeout: WAIT_MS });
  // The Resume the page sent is in the audit trail, under the operator whose token the page holds.
  await page.locator('#audit li[data-action="service.resume"]', { hasText: 'by 1' }).first().waitFor({ timeout: WAIT_MS });
});

test('Retry drives the stuck transfer: still pending while the row is locked, COMMITTED once it is free', async () => {
  const button = page.getByRole('button', { name: `Retry ${stuck.reqId} now` });
  await button.click();
  await page
    .locator('#retry-result', { hasText: `${stuck.reqId}: Retry answered: ${stuck.state}, retries 2` })
    .waitFor({ timeout: WAIT_MS });
  stuck.row.release();
  await stuck.row.done;
  await button.click();
  await page.locator('#retry-result', { hasText: `${stuck.reqId}: Retry answered: COMMITTED` }).waitFor({ timeout: WAIT_MS });
  await page.locator(`#unfinished li[data-req-id="${stuck.reqId}"]`).waitFor({ state: 'detached', timeout: WAIT_MS });
  assert.equal((await call(h, svc, 'GET', '/admin/v1/transfers?stuck=true')).body.transfers, []);
  await page.locator(`#by-state tr[data-state="${stuck.state}"] td.num`, { hasText: /^0$/ }).waitFor({ timeout: WAIT_MS });
});

test('search finds a transfer by user and client_order_id, by req_id, and explains a bad input', async () => {
  await page.getByLabel('User id').fill(String(STUCK_USER));
  await page.getByLabel('client_order_id (with a user)').fill('stuck-order-1');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.locator('#search-status', { hasText: '1 transfer(s) found' }).waitFor({ timeout: WAIT_MS });
  assert.match((await page.locator('#search-results > li').textContent()) ?? '', new RegExp(`COMMITTED[\\s\\S]*${stuck.reqId}`));
  await page.locator('#search-results summary').first().click();
  assert.match((await page.locator('#search-results details ol').textContent()) ?? '', /SOURCE_PENDING[\s\S]*COMMITTED/);
  await page.getByLabel('User id').fill('');
  await page.getByLabel('client_order_id (with a user)').fill('');
  await page.getByLabel('req_id').fill('not-a-ulid');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.locator('#search-status', { hasText: '400 INVALID_REQUEST' }).waitFor({ timeout: WAIT_MS });
  await page.getByLabel('req_id').fill(stuck.reqId);
  await page.getByRole('button', { name: 'Search' }).click();
  await page.locator('#search-status', { hasText: '1 transfer(s) found' }).waitFor({ timeout: WAIT_MS });
});

test('the JSON behind the console: admin only, and every bad search input named', async () => {
  for (const route of ['/admin/v1/overview', '/admin/v1/transfers/search?user_id=7001']) {
    assert.is((await svc.call('GET', route)).status, 401, route);
    assert.is((await svc.call('GET', route, { token: h.userToken(7001) })).status, 403, route);
  }
  const rows: [string, number, string, string | undefined][] = [
    ['', 400, 'INVALID_REQUEST', 'user_id'],
    ['?limit=5', 400, 'INVALID_REQUEST', 'user_id'],
    ['?req_id=abc', 400, 'INVALID_REQUEST', 'req_id'],
    [`?req_id=${stuck.reqId}&user_id=1`, 400, 'INVALID_REQUEST', 'req_id'],
    ['?user_id=0', 400, 'INVALID_USER', 'user_id'],
    ['?user_id=x1', 400, 'INVALID_USER', 'user_id'],
    ['?user_id=7001&limit=51', 400, 'INVALID_REQUEST', 'limit'],
    ['?user_id=7001&client_order_id=a%20b', 400, 'INVALID_REQUEST', 'client_order_id'],
    ['?user_id=7001&state=COMMITTED', 400, 'INVALID_REQUEST', 'state'],
    ['?user_id=7001&client_order_id=nope', 200, '', undefined],
  ];
  for (const [query, status, code, field] of rows) {
    const r = await call(h, svc, 'GET', `/admin/v1/transfers/search${query}`);
    assert.equal([r.status, r.body.code ?? '', r.body.field], [status, code, field], query);
  }
  const mine = await call(h, svc, 'GET', '/admin/v1/transfers/search?user_id=7001&limit=3');
  assert.is((mine.body.transfers as unknown[]).length, 3);
  const page = await fetch(`${svc.base}/console/console.js`);
  assert.equal(
    [page.status, page.headers.get('content-type'), page.headers.get('content-security-policy')?.startsWith("default-src 'none'")],
    [200, 'text/javascript; charset=utf-8', true],
  );
  assert.is((await fetch(`${svc.base}/console/nothing.js`)).status, 404);
});

test('on a phone the page is one column; a user token and a bad token are refused clearly', async () => {
  const phone = await openConsole(h.adminToken(), PHONE);
  await phone.locator('#by-state tr').first().waitFor({ timeout: WAIT_MS });
  await shot(phone, 'console-phone.png');
  await phone.context().close();
  for (const [token, shown] of [
    [h.userToken(7001), '403 FORBIDDEN'],
    ['not.a.token', '401 UNAUTHORIZED'],
  ] as const) {
    const p = await openConsole(token, LAPTOP, true);
    await p.locator('#banner', { hasText: shown }).waitFor({ timeout: WAIT_MS });
    assert.is(await p.locator('#by-state tr').count(), 0, 'no data shown to a refused token');
    await shot(p, `console-refused-${shown.slice(0, 3)}.png`);
    await p.context().close();
  }
});

test('no console error, no request leaving 127.0.0.1, never a token in a URL', () => {
  assert.equal(consoleErrors, []);
  assert.ok(requests.length > 20, `${requests.length} requests`);
  for (const url of requests) {
    assert.is(new URL(url).hostname, '127.0.0.1', url);
    assert.not.match(url, /eyJ|token=/, url);
  }
});

test.run();
