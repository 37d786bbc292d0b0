// Proves what keeps a PostgreSQL failover from moving the ownership (src/ownership/lapsed.ts,
// pg-owner.ts's `take`): a lease that a late commit wrote already passed (a claim or a renewal
// that waited for a synchronous standby) is a live owner, left a lease to renew, and ended only
// once its row stays as it is; and a waiting standby whose try waited for its connection (no node
// read-write while the leader changes) does not take the lock on that new session before
// STANDBY_SETTLE_MS, so the owner, whose own try waited as long, takes its lock back first.

import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { STANDBY_SETTLE_MS, TAKE_RETRY_MS } from '../../src/limits.js';
import { ownDatabase, type PgOwner, waitForOwnership } from '../../src/ownership/pg-owner.js';
import { withMigratedDatabase } from '../support/database.js';
import { hungOwner, sessionsOf } from '../support/owners.js';
import { pollUntil, sleep } from '../support/process.js';

const LEASE_MS = 2_000;
const RENEW_MS = 300;
const quiet = { onLost: () => undefined, onRegained: () => undefined, onTakenByOther: () => undefined, log: { info: () => undefined } };

/**
 * A TCP proxy in front of PostgreSQL that can cut every connection through it and hold the new
 * ones (accepted, not forwarded) until released: PostgreSQL failing over, as a client sees it.
 */
async function holdingProxy(
  target: URL,
): Promise<{ url: string; cut: () => void; hold: () => void; release: () => void; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let held: (() => void)[] | null = null;
  const server = net.createServer((client) => {
    client.on('error', () => undefined);
    const forward = () => {
      const upstream = net.connect(Number(target.port), target.hostname);
      upstream.on('error', () => undefined);
      sockets.add(client);
      sockets.add(upstream);
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    };
    if (held === null) forward();
    else held.push(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target.href);
  url.port = String((server.address() as net.AddressInfo).port);
  return {
    url: url.href,
    cut: () => {
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
    hold: () => {
      held = [];
    },
    release: () => {
      const waiting = held ?? [];
      held = null;
      for (const forward of waiting) forward();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

test('takeover: a lease that a late commit wrote already passed is a live owner: it is left a lease to renew, and ended once its row stays lapsed', async () => {
  await withMigratedDatabase(async (url, sql) => {
    const tag = 'transfer-5-abcdef@late';
    const owner = await hungOwner(url, tag);
    const renew = () => sql`UPDATE ledger_owner SET lease_until = now() + make_interval(secs => ${LEASE_MS / 1000})`;
    await sql`UPDATE ledger_owner SET epoch = 7, owner = ${tag}`;
    await renew();
    let renewing = true;
    const renewals = (async () => {
      while (renewing) {
        await renew();
        await sleep(RENEW_MS);
      }
    })();
    let taker: PgOwner | null = null;
    const waiting = waitForOwnership(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE_MS }).then((o) => {
      taker = o;
      return Date.now();
    });
    try {
      // Past the standby's settle time and the owner's lock session's: only the lease holds it back.
      await sleep(STANDBY_SETTLE_MS + 500);
      renewing = false;
      await renewals;
      assert.is(taker, null, 'taken from an owner that renews');
      // A renewal whose commit waited 3 s for a synchronous standby: its lease passed as it landed.
      await sql`UPDATE ledger_owner SET lease_until = now() - interval '1 second'`;
      await sleep(LEASE_MS / 2);
      assert.is(taker, null, 'an owner whose row has just landed lapsed was ended');
      assert.is(await sessionsOf(sql, tag), 2, "the owner's sessions");
      // Its next renewal lands in time; then it hangs.
      await renew();
      const hungAt = Date.now();
      const takenAt = await Promise.race([waiting, sleep(5 * LEASE_MS).then(() => -1)]);
      const tookMs = takenAt - hungAt;
      assert.ok(tookMs >= LEASE_MS - 50 && tookMs <= LEASE_MS + 2 * TAKE_RETRY_MS + 750, `taken ${tookMs} ms after the last renewal`);
      await pollUntil(async () => ((await sessionsOf(sql, tag)) === 0 ? true : undefined), {
        timeoutMs: 2_000,
        describe: () => 'the hung sessions',
      });
    } finally {
      renewing = false;
      await (taker as PgOwner | null)?.release();
      await owner.end();
    }
  });
});

test('takeover: a standby whose try waited for its connection while no node was read-write takes the lock on that session only after STANDBY_SETTLE_MS', async () => {
  await withMigratedDatabase(async (url) => {
    const proxy = await holdingProxy(new URL(url));
    const owner = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE_MS });
    let taker: PgOwner | null = null;
    let takenAt = 0;
    const waiting = waitForOwnership(proxy.url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE_MS }).then((o) => {
      taker = o;
      takenAt = Date.now();
    });
    try {
      await sleep(STANDBY_SETTLE_MS + 500);
      assert.is(taker, null, 'taken from a live holder');
      // The leader dies: the standby's session is gone and its next one waits, while the owner's
      // lock goes with the old leader.
      proxy.hold();
      proxy.cut();
      await owner.release();
      await sleep(STANDBY_SETTLE_MS + 500);
      assert.is(taker, null, 'taken with no session');
      // A node is read-write again: the try that waited runs on a brand-new session.
      proxy.release();
      const backAt = Date.now();
      await sleep(1_000);
      assert.is(taker, null, 'the lock taken on a session that has just connected');
      await Promise.race([waiting, sleep(STANDBY_SETTLE_MS + 2_000)]);
      assert.ok(taker !== null, 'never taken');
      const tookMs = takenAt - backAt;
      assert.ok(
        tookMs >= STANDBY_SETTLE_MS - 100 && tookMs <= STANDBY_SETTLE_MS + TAKE_RETRY_MS + 500,
        `taken ${tookMs} ms after the connection`,
      );
    } finally {
      await (taker as PgOwner | null)?.release();
      await owner.release().catch(() => undefined);
      await proxy.close();
    }
  });
});

test.run();
