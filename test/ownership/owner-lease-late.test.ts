// Proves that a lease renewal answered late (after the proof it gives had ended: PostgreSQL was
// failing over, or a commit waited on the synchronous standby) leaves a process that ran throughout
// standing by, and the next renewal proves the lease again; the process is not ended as if its
// lease had lapsed unnoticed. Seen under a Patroni switchover: the renewal waited for the former
// leader to rejoin as the synchronous standby, came back late, and the service stopped itself.

import { performance } from 'node:perf_hooks';
import type postgres from 'postgres';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keepLease, type LeaseState } from '../../src/ownership/lease.js';
import { sleep } from '../support/process.js';

const LEASE = { ms: 1_000, renewMs: 200 };
/** The first renewal is answered this long after it was sent: past the proof it gives (ms - margin). */
const LATE_MS = 1_200;

test('a renewal answered after its proof ended leaves the process standing by, and the next one proves the lease', async () => {
  let calls = 0;
  // The lease sends `UPDATE ledger_owner ... RETURNING epoch` through this tagged template.
  const sql = (() => {
    calls++;
    const answer = [{ epoch: '1' }];
    return calls === 1 ? sleep(LATE_MS).then(() => answer) : Promise.resolve(answer);
  }) as unknown as postgres.Sql;
  const ended: string[] = [];
  const lease = keepLease({
    sql,
    tag: 'test',
    epoch: 1,
    settings: LEASE,
    claimSentAt: performance.now(),
    lockHeld: () => true,
    onEnded: (reason) => ended.push(reason),
    log: { info: () => undefined },
  });
  const seen: LeaseState[] = [];
  try {
    const until = performance.now() + LATE_MS + 3 * LEASE.renewMs + 500;
    while (performance.now() < until) {
      seen.push(lease.state());
      await sleep(20);
    }
    assert.equal(ended, [], 'the process ran throughout: it is not ended');
    assert.ok(!seen.includes('lapsed'), `never lapsed: ${[...new Set(seen)].join(', ')}`);
    assert.ok(seen.includes('standing-by'), 'it stood by while the renewal was out past its proof');
    assert.is(lease.state(), 'proven', 'the renewal sent after the late one proved the lease again');
    assert.ok(calls >= 2);
  } finally {
    lease.stop();
  }
});

test.run();
