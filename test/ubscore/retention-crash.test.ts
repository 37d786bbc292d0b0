// Proves the retention against a real service: a kill in the middle of a prune pass (the
// crash point ubscore_prune_after_step, SIGKILL as a power cut) leaves a ledger that restarts,
// finishes pruning and conserves every fund; and a repeat of a command whose key was pruned never
// reaches UBSCore again: the external movement's own row answers it, and the SPOT balance stays.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { units } from '../support/funds.js';
import { pollUntil, withHarness, type ChildService, type Harness } from '../support/process.js';

const USER = 51;
/** Short enough that the backdated clock row below makes every entry so far old enough to prune. */
const RETENTION = { PROCESSED_RETENTION_S: '60', PROCESSED_PRUNE_INTERVAL_S: '1' };

async function spotUsdt(h: Harness, svc: ChildService): Promise<bigint> {
  const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(USER) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const spot = (r.body.spot as { asset: string; available: string }[]).find((b) => b.asset === 'USDT');
  return units(spot?.available ?? '0');
}

function spotDeposit(h: Harness, svc: ChildService, ref: string) {
  return svc.call('POST', '/admin/v1/deposit', {
    token: h.adminToken(),
    body: { user_id: String(USER), account: 'SPOT', asset: 'USDT', amount: '3', ref },
  });
}

/** A series of the service's GET /metrics, summed over its labels; 0 when absent. */
async function metric(svc: ChildService, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${svc.base}/metrics`)).text();
  return text
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(labels))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

test('retention: a kill inside a prune pass restarts and conserves; a pruned external deposit repeated is answered from its row, never applied twice', async () => {
  await withHarness(async (h) => {
    const first = await h.start();
    for (let i = 0; i < 5; i++) assert.is((await spotDeposit(h, first, `ret-crash-${i}`)).status, 200);
    const before = await spotUsdt(h, first);
    assert.is(before, units('15'));
    await first.stop();
    // The seq clock says every seq written so far was durable an hour ago: H covers all of them.
    await h.sql`INSERT INTO spot_seq_clock (at, seq) SELECT now() - interval '1 hour', coalesce(max(last_seq), 0) FROM spot_log`;

    const crashing = await h.startToDie({ ...RETENTION, CRASH_POINT: 'ubscore_prune_after_step' });
    const exit = await crashing.waitForExit(30_000);
    assert.is(exit.signal, 'SIGKILL', `the crash point in the prune pass was reached: ${crashing.stderrTail()}`);

    const next = await h.start(RETENTION);
    // The step before the kill deleted every entry (5, within one step); a pass after the restart
    // ends over an empty set.
    await pollUntil(
      async () => ((await metric(next, 'transfer_processed_prune_passes_total', 'outcome="pruned"')) >= 1 ? true : undefined),
      {
        timeoutMs: 20_000,
        describe: () => 'a prune pass after the restart',
      },
    );
    assert.is(await metric(next, 'transfer_ubscore_processed_entries'), 0, 'every old entry pruned, none came back');
    assert.is(await spotUsdt(h, next), before, 'the SPOT balance is what it was');
    const check = await next.call('GET', '/admin/v1/invariant', { token: h.adminToken() });
    assert.is(check.status, 200, JSON.stringify(check.body));
    assert.equal(check.body.differences, [], JSON.stringify(check.body));
    // The key of ret-crash-0 is gone from UBSCore's processed set; its repeat is answered by
    // external_movements (unique ref) and never sent to UBSCore, which would apply it again.
    const repeat = await spotDeposit(h, next, 'ret-crash-0');
    assert.is(repeat.status, 200, JSON.stringify(repeat.body));
    assert.is(await spotUsdt(h, next), before, 'the repeat moved nothing');
    await next.stop();
  });
});

test.run();
