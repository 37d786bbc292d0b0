// Proves a ROLE=standby process: beside a running primary it serves nothing, answering
// /healthz 200 and /readyz 503 with its role and lag, and 503 STANDBY to a transfer; and that
// ROLE=standby is refused without DATABASE_URL, and against an owner that keeps no SPOT log.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { cleanupAll, createHarness } from '../support/process.js';

test('ROLE=standby without DATABASE_URL is refused; ROLE takes primary or standby only', () => {
  assert.throws(
    () => loadConfig({ ROLE: 'standby' }),
    (e: unknown) => e instanceof ConfigError && /DATABASE_URL/.test(e.message),
  );
  assert.throws(
    () => loadConfig({ ROLE: 'backup', DATABASE_URL: 'postgres://x/y' }),
    (e: unknown) => e instanceof ConfigError,
  );
  const config = loadConfig({ ROLE: 'standby', DATABASE_URL: 'postgres://x/y' });
  assert.equal([config.role, config.standbyPollMs], ['standby', 50]);
});

test('a standby beside a primary answers /healthz 200, /readyz 503 with its role and lag, and refuses a transfer', async () => {
  const h = await createHarness();
  const standbyDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-standby-data-'));
  try {
    const primary = await h.start();
    const standby = await h.start({ ROLE: 'standby', DATA_DIR: standbyDir, STANDBY_POLL_MS: '20' });
    const health = await standby.call('GET', '/healthz');
    assert.equal(health.status, 200);
    assert.equal(health.body, { status: 'standby', role: 'standby', lag_records: 0, lag_ms: 0, applied_seq: 0 });
    const ready = await standby.call('GET', '/readyz');
    assert.equal(ready.status, 503);
    assert.equal(ready.body.role, 'standby');
    assert.equal(typeof ready.body.lag_records, 'number');
    const body = { from_account: 'FUNDING', to_account: 'SPOT', asset: 'USDT', amount: '1', client_order_id: 'c1' };
    const transfer = await standby.call('POST', '/api/v1/internal_transfer', { token: h.userToken(7), body });
    assert.equal(transfer.status, 503);
    assert.equal(transfer.body.code, 'STANDBY');
    // The primary still serves: the standby took nothing from it.
    assert.equal((await primary.call('GET', '/readyz')).status, 200);
    assert.equal(standby.exited(), null);
    await standby.stop();
  } finally {
    await h.cleanup();
    await fs.rm(standbyDir, { recursive: true, force: true });
  }
});

test('a standby against an owner that keeps no SPOT log in PostgreSQL (SPOT_LOG=off) is refused: it would take over with no SPOT balances', async () => {
  const h = await createHarness();
  const standbyDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-standby-data-'));
  try {
    const primary = await h.start({ SPOT_LOG: 'off' });
    const deposit = await primary.call('POST', '/admin/v1/deposit', {
      token: h.adminToken(),
      body: { user_id: '8', account: 'SPOT', asset: 'USDT', amount: '5', ref: 'standby-off-1' },
    });
    assert.equal(deposit.status, 200, JSON.stringify(deposit.body));
    const standby = await h.startToDie({ ROLE: 'standby', DATA_DIR: standbyDir });
    const exit = await standby.waitForExit(15_000);
    assert.is(exit.code, 3, standby.stderrTail());
    assert.match(standby.stderrTail(), /holds transfers and balances but no SPOT log/);
    assert.equal((await primary.call('GET', '/readyz')).status, 200);
  } finally {
    await h.cleanup();
    await fs.rm(standbyDir, { recursive: true, force: true });
  }
});

test.after(cleanupAll);

test.run();
