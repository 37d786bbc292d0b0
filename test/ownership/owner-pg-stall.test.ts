// Proves that a sole primary outlives its PostgreSQL server stalling for 5 s (every server process stopped with SIGSTOP, then resumed): its lease renewal, answered long after its proof ended but still finding its epoch, proves the lease again, so the process stands by (never exits 70) and serves again with its epoch unchanged.

import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cleanupAll, pollUntil, sleep, withHarness, type ChildService } from '../support/process.js';

const STALL_MS = 5_000;
const USER = 31;

/** The postmaster and every process it started (backends, checkpointer, WAL writer). */
function serverPids(postmaster: number): number[] {
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .map((l) => Number(l.trim()))
    .filter((n) => n > 0);
  return [postmaster, ...children];
}

async function readyz(svc: ChildService): Promise<number> {
  return (await svc.call('GET', '/readyz', { timeoutMs: 10_000 }).catch(() => ({ status: 0 }))).status;
}

test('a sole primary outlives a 5 s PostgreSQL stall: it stands by, its lease is proven again, it serves on with its own epoch', async () => {
  await withHarness(
    async (h) => {
      const primary = await h.start({ LEASE_MS: '1500', LEASE_RENEW_MS: '300' });
      const body = { user_id: String(USER), account: 'FUNDING', asset: 'USDT', amount: '10', ref: 'stall-1' };
      assert.is((await primary.call('POST', '/admin/v1/deposit', { token: h.adminToken(), body })).status, 200);
      const [before] = await h.sql<{ epoch: string }[]>`SELECT epoch::text AS epoch FROM ledger_owner`;
      const postmaster = await h.pg?.postmasterPid();
      assert.ok(postmaster !== undefined && postmaster !== null, 'a postmaster runs');
      const pids = serverPids(postmaster);
      for (const pid of pids) process.kill(pid, 'SIGSTOP');
      try {
        await sleep(STALL_MS);
      } finally {
        for (const pid of pids) process.kill(pid, 'SIGCONT');
      }
      await pollUntil(async () => (primary.exited() !== null || (await readyz(primary)) === 200 ? true : undefined), {
        timeoutMs: 20_000,
        describe: () => `the primary serves again; stderr tail:\n${primary.stderrTail()}`,
      });
      assert.is(primary.exited(), null, `the primary is still running; stderr tail:\n${primary.stderrTail()}`);
      const transfer = await primary.call('POST', '/api/v1/internal_transfer', {
        token: h.userToken(USER),
        body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
        timeoutMs: 30_000,
      });
      assert.is(transfer.status, 200, JSON.stringify(transfer.body));
      const [after] = await h.sql<{ epoch: string }[]>`SELECT epoch::text AS epoch FROM ledger_owner`;
      assert.is(after?.epoch, before?.epoch, 'still its own epoch');
      await primary.stop();
    },
    { pg: 'external' },
  );
});

test.after(cleanupAll);

test.run();
