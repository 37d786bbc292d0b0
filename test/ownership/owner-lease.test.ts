// Proves the owner lease (src/ownership/lease.ts, pg-owner.ts, the HTTP lease guard): a live owner renews its lease and a second process is refused while it does; an owner whose epoch another process took stops within two renewals; a process waiting for the ownership takes it from a hung owner only once that owner's lease has passed, ending every session of its tag (and no other) and claiming the next epoch; an answer made after the lease lapsed unnoticed is never sent; a process whose renewal is slow or failing stands by while it keeps running, and a late renewal that still finds its epoch proves the lease again (only another epoch, or a stop past a whole lease, ends it); LEASE_RENEW_MS must stay under LEASE_MS / 3.

import { STANDBY_SETTLE_MS } from '../../src/limits.js';
import type { AddressInfo } from 'node:net';
import http from 'node:http';
import { serve } from '@hono/node-server';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ConfigError, loadConfig } from '../../src/config/config.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { OwnershipError } from '../../src/ownership/errors.js';
import { keepLease, type LeaseState, type OwnerLease } from '../../src/ownership/lease.js';
import { ownDatabase, waitForOwnership, type PgOwner } from '../../src/ownership/pg-owner.js';
import { stubApps } from '../support/app.js';
import { withMigratedDatabase } from '../support/database.js';
import { hungOwner, sessionsOf } from '../support/owners.js';
import { pollUntil, sleep } from '../support/process.js';
import { TEST_JWT_SECRET } from '../support/service.js';

const LEASE = { ms: 1_000, renewMs: 200 };
/** How often a waiting process asks again (TAKE_RETRY_MS of pg-owner.ts). */
const TAKE_RETRY_MS = 250;
/** A process that has just begun to wait takes a free or lapsed lock only after STANDBY_SETTLE_MS. */
const TAKE_AFTER_MS = Math.max(LEASE.ms, STANDBY_SETTLE_MS);
const quiet = { onLost: () => undefined, onRegained: () => undefined, onTakenByOther: () => undefined, log: { info: () => undefined } };

const withLedger = withMigratedDatabase;

async function ownerRow(sql: Sql): Promise<{ epoch: number; owner: string; leaseUntil: number }> {
  const [r] = await sql<{ epoch: string; owner: string; ms: string }[]>`
    SELECT epoch::text AS epoch, owner, (extract(epoch FROM lease_until) * 1000)::bigint::text AS ms FROM ledger_owner`;
  return { epoch: Number(r?.epoch), owner: String(r?.owner), leaseUntil: Number(r?.ms) };
}

test('lease: a live owner renews its lease, and a second process is refused while it does (after more than LEASE_MS)', async () => {
  await withLedger(async (url, sql) => {
    const ended: string[] = [];
    const first = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms });
    try {
      await first.claim(LEASE, (reason) => ended.push(reason));
      const before = await ownerRow(sql);
      await new Promise((resolve) => setTimeout(resolve, 2 * LEASE.renewMs + 100));
      assert.ok((await ownerRow(sql)).leaseUntil > before.leaseUntil, 'lease_until moved on');
      // The second asks for TAKE_WAIT_MS (3 s), three times the lease: only the renewals keep it out.
      const refused = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms }).then(
        async (o) => {
          await o.release();
          return 'taken';
        },
        (e: unknown) => (e instanceof OwnershipError ? 'refused' : String(e)),
      );
      assert.is(refused, 'refused');
      assert.equal([first.held(), first.leaseState(), ended], [true, 'proven', []]);
      assert.is((await ownerRow(sql)).epoch, before.epoch, 'the epoch is still the first owner');
    } finally {
      await first.release();
    }
  });
});

test('lease: an owner whose epoch another process took stops within two renewals', async () => {
  await withLedger(async (url, sql) => {
    const ended: string[] = [];
    const owner = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms });
    try {
      await owner.claim(LEASE, (reason) => ended.push(reason));
      const at = Date.now();
      await sql`UPDATE ledger_owner SET epoch = epoch + 1`;
      await pollUntil(async () => (ended.length > 0 ? true : undefined), { timeoutMs: 3 * LEASE.renewMs + 200, describe: () => 'no end' });
      assert.ok(Date.now() - at <= 3 * LEASE.renewMs, `ended after ${Date.now() - at} ms`);
      assert.match(ended[0] ?? '', /superseded/);
    } finally {
      await owner.release();
    }
  });
});

/** A hung owner: its lock session holds the owner lock, another of its sessions holds the fence lock shared in an open transaction. */
test('takeover: a process waiting for the ownership takes it from a hung owner once its lease passed, ends every session of its tag and no other, and claims the next epoch', async () => {
  await withLedger(async (url, sql) => {
    const tag = 'transfer-1-abcdef@hung';
    const hung = await hungOwner(url, tag);
    const bystander = openSql(url, { max: 1, application: 'transfer-2-fedcba@other main' });
    await bystander`SELECT 1`;
    let taker: PgOwner | null = null;
    try {
      await sql`UPDATE ledger_owner SET epoch = 7, owner = ${tag}, lease_until = now() + make_interval(secs => ${LEASE.ms / 1000})`;
      const at = Date.now();
      const waiting = waitForOwnership(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms }).then((o) => {
        taker = o;
        return Date.now() - at;
      });
      await new Promise((resolve) => setTimeout(resolve, LEASE.ms / 2));
      assert.is(taker, null, 'not taken while the lease runs');
      const tookMs = await Promise.race([waiting, new Promise<number>((resolve) => setTimeout(() => resolve(-1), 5 * LEASE.ms))]);
      assert.ok(tookMs >= LEASE.ms - 50 && tookMs <= TAKE_AFTER_MS + TAKE_RETRY_MS + 500, `taken after ${tookMs} ms`);
      await pollUntil(async () => ((await sessionsOf(sql, tag)) === 0 ? true : undefined), {
        timeoutMs: 2_000,
        describe: () => 'hung sessions',
      });
      assert.is(await sessionsOf(sql, 'transfer-2-fedcba@other'), 1, 'another tag is left alone');
      const identity = await (taker as unknown as PgOwner).claim(LEASE, () => undefined);
      assert.is(identity.epoch, 8);
      assert.is((await ownerRow(sql)).owner, identity.tag);
    } finally {
      await (taker as PgOwner | null)?.release();
      await bystander.end({ timeout: 1 });
      await hung.end();
    }
  });
});

test('takeover: an owner that has just taken its lock back, its lease passed during the outage, is left STANDBY_SETTLE_MS to renew; one that never renews is ended then', async () => {
  await withLedger(async (url, sql) => {
    const tag = 'transfer-3-abcdef@back';
    await sql`UPDATE ledger_owner SET epoch = 7, owner = ${tag}, lease_until = now() - interval '10 seconds'`;
    const at = Date.now();
    let taker: PgOwner | null = null;
    const waiting = waitForOwnership(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms }).then((o) => {
      taker = o;
      return Date.now() - at;
    });
    // The owner takes its lock back while the new standby still settles, as after a failover.
    await sleep(STANDBY_SETTLE_MS - 1_000);
    const back = await hungOwner(url, tag);
    const backAfterMs = Date.now() - at;
    try {
      await sleep(1_500);
      assert.is(taker, null, 'past the standby settling, the young lock session of a passed lease is left alone');
      const tookMs = await Promise.race([waiting, sleep(4 * STANDBY_SETTLE_MS).then(() => -1)]);
      assert.ok(
        tookMs >= backAfterMs + STANDBY_SETTLE_MS - 100 && tookMs <= backAfterMs + STANDBY_SETTLE_MS + TAKE_RETRY_MS + 1_000,
        `taken ${tookMs} ms after the start, the owner's session ${backAfterMs} ms`,
      );
      await pollUntil(async () => ((await sessionsOf(sql, tag)) === 0 ? true : undefined), {
        timeoutMs: 2_000,
        describe: () => 'the hung sessions',
      });
    } finally {
      await (taker as PgOwner | null)?.release();
      await back.end();
    }
  });
});

test('takeover: a lapsed owner whose renewal waits for its row is not waited on: the standby reports no trouble, leaves the owner alone, and takes a lock freed later at once', async () => {
  await withLedger(async (url, sql) => {
    const owner = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms });
    let taker: PgOwner | null = null;
    const troubles: string[] = [];
    try {
      await owner.claim(LEASE, () => undefined);
      // The owner's lock session is past STANDBY_SETTLE_MS when the standby first asks.
      await sleep(1_000);
      const waiting = waitForOwnership(url, quiet, {
        retakeBackoffCapMs: 500,
        leaseMs: LEASE.ms,
        onWaitTrouble: (reason) => {
          if (reason !== null) troubles.push(reason);
        },
      }).then((o) => {
        taker = o;
      });
      // The row held as a renewal waiting for a synchronous standby holds it: the owner's own
      // renewals wait behind it and its lease passes by the server's clock, for longer than the
      // lock session's lock_timeout after the standby's first ask.
      await holdOwnerRow(sql, STANDBY_SETTLE_MS + 4_000, false);
      assert.equal(troubles, [], 'the wait never stalled on the row');
      assert.is(taker, null, 'the owner, renewing, was left alone');
      await pollUntil(async () => (owner.leaseState() === 'proven' ? true : undefined), {
        timeoutMs: 3 * LEASE.renewMs + 3_000,
        describe: () => `owner lease ${owner.leaseState()}`,
      });
      assert.ok(owner.held(), 'the owner still holds its lock');
      const releasedAt = Date.now();
      await owner.release();
      await Promise.race([waiting, sleep(4 * STANDBY_SETTLE_MS)]);
      const tookMs = Date.now() - releasedAt;
      assert.ok(taker !== null && tookMs <= TAKE_RETRY_MS + 1_000, `the freed lock taken ${tookMs} ms after its release`);
      assert.equal(troubles, []);
    } finally {
      await (taker as PgOwner | null)?.release();
      await owner.release().catch(() => undefined);
    }
  });
});

test('lease guard: an answer made or written after the lease lapsed unnoticed is never sent, and the process is told to stop', async () => {
  let state: () => LeaseState = () => 'proven';
  const lapsed: string[] = [];
  const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });
  const apps = stubApps(tokens, { deps: { leaseState: () => state(), onLeaseLapsed: (reason) => lapsed.push(reason) } });
  const server = serve({ fetch: apps.public.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  const get = (p: string) =>
    new Promise<string>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
        res.resume();
        resolve(`answered ${res.statusCode}`);
      });
      req.on('error', (e) => resolve(`no answer: ${e.message}`));
    });
  try {
    assert.is(await get('/healthz'), 'answered 200');
    state = () => 'standing-by';
    assert.is(await get('/healthz'), 'answered 200', 'standing by, the process still answers');
    // Proven as the request arrives, lapsed once its answer is made: the answer is not sent.
    let asked = 0;
    state = () => (asked++ === 0 ? 'proven' : 'lapsed');
    assert.match(await get('/healthz'), /^no answer/);
    assert.is(lapsed.length, 1);
    assert.match(lapsed[0] ?? '', /an answer was ready after the owner lease lapsed/);
    // Proven as the answer is made, lapsed by the time the server writes it (the process was
    // stopped between the two): the answer is not sent.
    asked = 0;
    state = () => (asked++ < 2 ? 'proven' : 'lapsed');
    assert.match(await get('/healthz'), /^no answer/, 'an answer written after the lease lapsed');
    assert.is(lapsed.length, 2);
    assert.match(lapsed[1] ?? '', /an answer was being written after the owner lease lapsed/);
    state = () => 'lapsed';
    assert.match(await get('/healthz'), /^no answer/, 'a request that arrives once it lapsed');
    assert.is(lapsed.length, 3);
  } finally {
    server.close();
  }
});

test('lease states: a failure seen in time stands by while the process runs; a process that then does not run for a whole lease has lapsed', async () => {
  // A renewal that never answers: the next tick sees it out and notes the failure.
  const neverAnswers = (() => new Promise(() => undefined)) as unknown as Sql;
  const settings = { ms: 600, renewMs: 150 };
  const start = (): OwnerLease =>
    keepLease({
      sql: neverAnswers,
      tag: 't',
      epoch: 1,
      settings,
      claimSentAt: performance.now(),
      lockHeld: () => true,
      onEnded: () => undefined,
      log: { info: () => undefined },
    });
  const running = start();
  try {
    // One renewal sent at 150 ms, seen unanswered at 300 ms: failing before the proof ends at 540 ms.
    await sleep(750);
    assert.is(running.state(), 'standing-by', 'noticed in time and running since (its ticks came)');
  } finally {
    running.stop();
  }
  const frozen = start();
  try {
    await sleep(350);
    // Blocks this thread as SIGSTOP stops the process, past a whole lease: nothing ticks. The
    // first to ask afterwards (the HTTP guard, with an answer ready) must hear lapsed.
    const until = performance.now() + 800;
    while (performance.now() < until);
    assert.is(frozen.state(), 'lapsed', 'noticed in time, then stopped past the lease');
  } finally {
    frozen.stop();
  }
});

/** Holds ledger_owner's row for `holdMs` in a transaction of another session (optionally taking the epoch too), as a slow statement or a paused server does. */
async function holdOwnerRow(sql: Sql, holdMs: number, supersede: boolean): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT epoch FROM ledger_owner FOR UPDATE`;
    if (supersede) await tx`UPDATE ledger_owner SET epoch = epoch + 1`;
    await sleep(holdMs);
  });
}

/** The lease states seen every 20 ms until `until` settles. */
async function statesWhile(owner: PgOwner, until: Promise<unknown>): Promise<Set<LeaseState>> {
  const seen = new Set<LeaseState>();
  let done = false;
  void until.finally(() => (done = true));
  while (!done) {
    seen.add(owner.leaseState());
    await sleep(20);
  }
  return seen;
}

test('lease: a renewal answered after the proof ended, still finding our epoch, proves the lease again: the owner stands by, never ends', async () => {
  await withLedger(async (url, sql) => {
    const ended: string[] = [];
    const owner = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms });
    try {
      await owner.claim(LEASE, (reason) => ended.push(reason));
      // 2.5 lease periods: the renewal sent meanwhile waits for the row and is answered long after its proof.
      const seen = await statesWhile(owner, holdOwnerRow(sql, 2_500, false));
      assert.ok(seen.has('standing-by'), `stood by while the renewal waited: ${[...seen]}`);
      assert.not.ok(seen.has('lapsed'), 'never lapsed: the process kept running');
      await pollUntil(async () => (owner.leaseState() === 'proven' ? true : undefined), {
        timeoutMs: 3 * LEASE.renewMs + 500,
        describe: () => `state ${owner.leaseState()}`,
      });
      await sleep(LEASE.ms);
      assert.equal([owner.leaseState(), owner.held(), ended], ['proven', true, []]);
    } finally {
      await owner.release();
    }
  });
});

test('lease: a late renewal that finds another epoch (0 rows) still ends the owner', async () => {
  await withLedger(async (url, sql) => {
    const ended: string[] = [];
    const owner = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms });
    try {
      await owner.claim(LEASE, (reason) => ended.push(reason));
      const seen = await statesWhile(owner, holdOwnerRow(sql, 2_500, true));
      assert.not.ok(seen.has('lapsed'), 'never lapsed while waiting');
      await pollUntil(async () => (ended.length > 0 ? true : undefined), { timeoutMs: 3 * LEASE.renewMs + 500, describe: () => 'no end' });
      assert.match(ended[0] ?? '', /superseded/);
    } finally {
      await owner.release();
    }
  });
});

test('config: LEASE_RENEW_MS must stay under LEASE_MS / 3', () => {
  assert.equal(loadConfig({}).lease, { ms: 2_000, renewMs: 400 });
  assert.equal(loadConfig({ LEASE_MS: '1000', LEASE_RENEW_MS: '200' }).lease, { ms: 1_000, renewMs: 200 });
  assert.throws(
    () => loadConfig({ LEASE_MS: '1200', LEASE_RENEW_MS: '400' }),
    (e: unknown) => e instanceof ConfigError,
  );
  assert.throws(
    () => loadConfig({ LEASE_MS: '100' }),
    (e: unknown) => e instanceof ConfigError,
  );
});

test.run();
