// Proves a coordinator thread that dies under load leaves no zombie shard:
// the process stops at once with a critical log (piscina would otherwise put an uninitialised
// thread in its place, answering 500 to every transfer of the shard while /readyz said 200), and
// the restarted service finishes every transfer with funds exact and no 500.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { units } from '../support/funds.js';
import { cleanupAll, pollUntil, useOneServerForThisFile, withHarness, type ChildService, type Harness } from '../support/process.js';

const USERS = [71, 72, 73, 74];
const TRANSFERS_PER_USER = 10;

test.before(useOneServerForThisFile);
test.after(cleanupAll);

async function balances(h: Harness, svc: ChildService, user: number): Promise<{ funding: bigint; spot: bigint }> {
  const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(user) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const find = (list: unknown) => units((list as { asset: string; available: string }[]).find((b) => b.asset === 'USDT')?.available ?? '0');
  return { funding: find(r.body.funding), spot: find(r.body.spot) };
}

test('a coordinator thread killed by an uncaught exception under load stops the process; the restart finishes every transfer exactly, with no 500', async () => {
  await withHarness(async (h) => {
    const setup = await h.start();
    for (const user of USERS) {
      const r = await setup.call('POST', '/admin/v1/deposit', {
        token: h.adminToken(),
        body: { user_id: String(user), account: 'FUNDING', asset: 'USDT', amount: '100', ref: `zombie-${user}` },
      });
      assert.is(r.status, 200, JSON.stringify(r.body));
    }
    await setup.stop();

    // The first FUNDING → SPOT transfer past its create-and-debit commit kills its shard's thread.
    const dying = await h.startToDie({ CRASH_POINT: 'coordinator_thread_uncaught', COORDINATORS: '2' });
    assert.is((await dying.call('GET', '/readyz')).status, 200, 'ready before the fault');
    const replies = await Promise.all(
      USERS.flatMap((user) =>
        Array.from({ length: TRANSFERS_PER_USER }, () =>
          dying
            .call('POST', '/api/v1/internal_transfer', {
              token: h.userToken(user),
              body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
              timeoutMs: 5_000,
            })
            .catch(() => null),
        ),
      ),
    );
    const exit = await dying.waitForExit(10_000);
    assert.is(exit.code, 70, dying.stderrTail());
    assert.match(dying.stderrTail(), /"level":"critical".*the thread of coordinator shard \d exited/);
    // Whatever was answered before the stop: a real outcome or a 500 naming the transfer, never a zombie's answer after it.
    for (const r of replies)
      if (r !== null && r.status === 500) assert.match(String(r.body.req_id), /^[0-9A-HJKMNP-TV-Z]{26}$/, JSON.stringify(r.body));

    const restarted = await h.start();
    assert.is((await restarted.call('GET', '/readyz')).status, 200);
    await pollUntil(async () => ((await h.sql`SELECT count(*)::int AS n FROM transfers_active`)[0]?.n === 0 ? true : undefined), {
      timeoutMs: 30_000,
      intervalMs: 100,
      describe: () => `every transfer final; stderr tail:\n${restarted.stderrTail()}`,
    });
    for (const user of USERS) {
      const committed = await h.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = ${user} AND state = 40`;
      const n = BigInt(committed[0]?.n as number);
      assert.equal(
        await balances(h, restarted, user),
        { funding: units('100') - n * units('1'), spot: n * units('1') },
        `user ${user}: funds exact`,
      );
      const later = await restarted.call('POST', '/api/v1/internal_transfer', {
        token: h.userToken(user),
        body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
      });
      assert.is(later.status, 200, `no 500 after recovery: ${JSON.stringify(later.body)}`);
    }
    const open = await h.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN (40, -10, -30)`;
    assert.is(open[0]?.n, 0);
  });
});

test.run();
