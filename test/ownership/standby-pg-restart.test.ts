// Proves that a waiting standby outlives its PostgreSQL server's restart: killed and started again while the standby waits for the ownership, the standby stays alive, its /readyz names why it is degraded while the server is away (and its metrics count the failed waits once it is back), the primary keeps the ownership (the same epoch) although the standby asks for the freed lock far more often, and when the primary is then killed the standby takes over and answers a transfer.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cleanupAll, pollUntil, withHarness, type ChildService } from '../support/process.js';

const LEASE_ENV = { LEASE_MS: '1500', LEASE_RENEW_MS: '300' };
/**
 * Once the server is back its owner lock is free. The standby retries every 250 ms at most; the
 * primary's PG_RECOVERY_BACKOFF_CAP_MS lets its other waits grow to 5 s, but it asks for its own
 * lock at least every OWNER_RETAKE_BACKOFF_CAP_MS (1 s), and the standby, back from its own
 * trouble, only watches for STANDBY_SETTLE_MS (3 s) first: the ownership stays where it was.
 * Without that settling the quicker standby takes the lock and the primary stops.
 */
const PRIMARY_ENV = { ...LEASE_ENV, PG_RECOVERY_BACKOFF_CAP_MS: '5000' };
const STANDBY_ENV = { ...LEASE_ENV, PG_RECOVERY_BACKOFF_CAP_MS: '250', ROLE: 'standby', STANDBY_POLL_MS: '20' };
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

/** The owner epoch the process names in its answers (x-owner-epoch), with /readyz's status. */
async function epochOf(svc: ChildService): Promise<{ status: number; epoch: string | null }> {
  const res = await fetch(`${svc.base}/readyz`);
  await res.arrayBuffer();
  return { status: res.status, epoch: res.headers.get('x-owner-epoch') };
}

async function metric(svc: ChildService, name: string): Promise<number | null> {
  const res = await fetch(`${svc.base}/metrics`);
  assert.is(res.status, 200, `GET /metrics on ${svc.base}`);
  const text = await res.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
  return line === undefined ? null : Number(line.split(' ').at(-1));
}

test('a standby waiting for the ownership outlives a PostgreSQL restart, says it is degraded meanwhile, leaves the ownership to the primary, and takes over once the primary dies', async () => {
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

        const before = await epochOf(primary);
        assert.is(before.status, 200);
        assert.ok(before.epoch !== null, 'the primary names its epoch');
        const pid = await h.pg?.postmasterPid();
        assert.ok(pid !== undefined && pid !== null, 'a postmaster runs');
        process.kill(pid, 'SIGKILL');
        const away = await readyzUntil(standby, (a) => typeof a.body.degraded === 'string', 15_000, 'the standby says it is degraded');
        assert.is(away.status, 503);
        assert.match(String(away.body.degraded), /PostgreSQL/);
        await h.pg?.start();

        // Back: the standby is well again and still waits; the primary took its own lock and lease
        // back, under the same epoch.
        await readyzUntil(standby, (a) => a.status === 503 && a.body.degraded === undefined, 20_000, 'well again, still waiting');
        assert.ok(((await metric(standby, 'transfer_standby_wait_failures_total')) ?? 0) >= 1, 'the failed waits are counted');
        assert.is(await metric(standby, 'transfer_standby_degraded'), 0);
        const after = await pollUntil(
          async () => {
            if (primary.exited() !== null) return { status: -1, epoch: null };
            const e = await epochOf(primary).catch(() => null);
            return e?.status === 200 ? e : undefined;
          },
          { timeoutMs: 20_000, describe: () => `the primary serves again; stderr tail:\n${primary.stderrTail()}` },
        );
        assert.is(primary.exited(), null, `the primary kept the ownership: ${primary.stderrTail()}`);
        assert.is(after.epoch, before.epoch, 'the same epoch: no takeover');
        assert.is(standby.exited(), null, standby.stderrTail());
        assert.is((await standby.call('GET', '/readyz')).status, 503, 'the standby still waits');
        await primary.kill9();
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
