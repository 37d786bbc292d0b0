// Proves that a waiting standby outlives its PostgreSQL server's restart: killed and started again while the standby waits for the ownership, the standby stays alive, its /readyz names why it is degraded while the server is away (and its metrics count the failed waits once it is back), the primary regains its own lease, and when the primary is then killed the standby takes over and answers a transfer.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cleanupAll, pollUntil, withHarness, type ChildService } from './support/process.js';

const LEASE_ENV = { LEASE_MS: '1500', LEASE_RENEW_MS: '300' };
/**
 * Once the server is back its owner lock is free, and whoever asks first takes it: the primary
 * retakes every 250 ms at most, the standby backs off up to 5 s, so the primary is usually first.
 * A standby that comes first takes over (the primary then exits, naming it): safe, and the test
 * then checks the takeover without the kill.
 */
const PRIMARY_ENV = { ...LEASE_ENV, PG_RECOVERY_BACKOFF_CAP_MS: '250' };
const STANDBY_ENV = { ...LEASE_ENV, PG_RECOVERY_BACKOFF_CAP_MS: '5000', ROLE: 'standby', STANDBY_POLL_MS: '20' };
const USER = 21;

type Answer = { readonly status: number; readonly body: Record<string, unknown> };

/** Polls /readyz until `ok` holds of its answer, answering the answer seen then. */
async function readyzUntil(svc: ChildService, ok: (a: Answer) => boolean, timeoutMs: number, what: string): Promise<Answer> {
  let last: Answer | null = null;
  return pollUntil(
    async () => {
      last = await svc
        .call('GET', '/readyz', { timeoutMs: 5_000 })
        .catch((error: unknown): Answer => ({ status: 0, body: { error: String(error) } }));
      return ok(last) ? last : undefined;
    },
    {
      timeoutMs,
      intervalMs: 50,
      describe: () => `${what}; last ${JSON.stringify(last)}; exit ${JSON.stringify(svc.exited())}; stderr tail:\n${svc.stderrTail()}`,
    },
  );
}

async function readyOf(svc: ChildService): Promise<number> {
  return (await svc.call('GET', '/readyz', { timeoutMs: 5_000 }).catch(() => ({ status: 0 }))).status;
}

async function metric(svc: ChildService, name: string): Promise<number | null> {
  const res = await fetch(`${svc.base}/metrics`);
  assert.is(res.status, 200, `GET /metrics on ${svc.base}`);
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.split(' ').at(-1));
}

test('a standby waiting for the ownership outlives a PostgreSQL restart, says it is degraded meanwhile, and takes over afterwards', async () => {
  const standbyDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-standby-data-'));
  try {
    await withHarness(
      async (h) => {
        const primary = await h.start(PRIMARY_ENV);
        for (const account of ['FUNDING', 'SPOT'] as const) {
          const body = { user_id: String(USER), account, asset: 'USDT', amount: '10', ref: `restart-${account}` };
          assert.is((await primary.call('POST', '/admin/v1/deposit', { token: h.adminToken(), body })).status, 200);
        }
        const standby = await h.start({ ...STANDBY_ENV, DATA_DIR: standbyDir });
        assert.is((await standby.call('GET', '/readyz')).body.degraded, undefined, 'not degraded while PostgreSQL answers');

        const pid = await h.pg?.postmasterPid();
        assert.ok(pid !== undefined && pid !== null, 'a postmaster runs');
        process.kill(pid, 'SIGKILL');
        const away = await readyzUntil(standby, (a) => typeof a.body.degraded === 'string', 15_000, 'the standby says it is degraded');
        assert.is(away.status, 503);
        assert.match(String(away.body.degraded), /PostgreSQL/);
        await h.pg?.start();

        // Back: the standby is well again and still waits, and the primary took its lock and lease
        // again; or the standby took the free lock first, and the primary stopped.
        const standbyBack = await readyzUntil(standby, (a) => a.status !== 0 && a.body.degraded === undefined, 20_000, 'well again');
        assert.is(standby.exited(), null, standby.stderrTail());
        if (standbyBack.status === 503) {
          assert.ok(((await metric(standby, 'transfer_standby_wait_failures_total')) ?? 0) >= 1, 'the failed waits are counted');
          assert.is(await metric(standby, 'transfer_standby_degraded'), 0);
        }
        const primaryBack = await pollUntil(
          async () => (primary.exited() !== null || (await readyOf(primary)) === 200 ? true : undefined),
          {
            timeoutMs: 20_000,
            describe: () => `the primary serves again or stopped; stderr tail:\n${primary.stderrTail()}`,
          },
        );
        assert.ok(primaryBack);
        if (primary.exited() === null) await primary.kill9();
        else assert.match(primary.stderrTail(), /another process took the owner lock/, 'a primary that stopped names the standby');
        await readyzUntil(standby, (a) => a.status === 200, 20_000, 'the standby took over');
        const transfer = await standby.call('POST', '/api/v1/internal_transfer', {
          token: h.userToken(USER),
          body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
          timeoutMs: 30_000,
        });
        assert.is(transfer.status, 200, JSON.stringify(transfer.body));
        await standby.stop();
      },
      { pg: 'external' },
    );
  } finally {
    await fs.rm(standbyDir, { recursive: true, force: true });
  }
});

test.after(cleanupAll);

test.run();
