// Proves that a holder of the owner lock without a completed claim cannot keep it (src/ownership/unclaimed.ts): a session that took the lock and then froze, idle or inside a claim holding the fence lock exclusively, is ended by a waiting standby after OWNER_CLAIM_MS_MAX, which then takes over and claims; a live starting primary that is slow before its claim is never ended; and every session the service opens carries the server-side TCP bounds.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSql, type Sql } from '../../src/db/sql.js';
import { OWNER_CLAIM_MS_MAX, PG_TCP_USER_TIMEOUT_MS } from '../../src/limits.js';
import { FENCE_LOCK_KEY } from '../../src/ownership/epoch-claim.js';
import { OWNER_LOCK_KEY, ownDatabase, waitForOwnership, type PgOwner } from '../../src/ownership/pg-owner.js';
import { createTestDatabase, withMigratedDatabase } from '../support/database.js';
import { sleep } from '../support/process.js';

const LEASE = { ms: 1_000, renewMs: 200 };
const quiet = { onLost: () => undefined, onRegained: () => undefined, onTakenByOther: () => undefined, log: { info: () => undefined } };
/** How long past the bound the waiter may take: its next ask (TAKE_RETRY_MS 250) and the backend's exit. */
const SLACK_MS = 2_000;

const withLedger = withMigratedDatabase;

/** A process that took the owner lock and froze before its claim: a plain session, no bounds of its own. */
async function frozenStarter(url: string, inClaim: boolean): Promise<Sql> {
  const lock = openSql(url, { max: 1, application: 'transfer-99-aaaaaa@frozen owner lock' });
  await lock`SELECT pg_advisory_lock(${OWNER_LOCK_KEY.toString()}::bigint)`;
  if (inClaim) {
    await lock`BEGIN`;
    await lock`SELECT pg_advisory_xact_lock(${FENCE_LOCK_KEY.toString()}::bigint)`;
  }
  return lock;
}

async function alive(sql: Sql, application: string): Promise<number> {
  const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = ${application}`;
  return r?.n ?? 0;
}

for (const inClaim of [false, true]) {
  const how = inClaim ? 'inside its claim, holding the fence lock exclusively' : 'idle before its claim';
  test(`a holder of the owner lock frozen ${how} is ended by a waiting standby after OWNER_CLAIM_MS_MAX, which takes over and claims`, async () => {
    await withLedger(async (url, sql) => {
      // The owner of record is an earlier process whose lease passed long ago.
      await sql`UPDATE ledger_owner SET epoch = 3, owner = 'transfer-1-bbbbbb@gone', lease_until = now() - interval '1 minute'`;
      const frozen = await frozenStarter(url, inClaim);
      let taker: PgOwner | null = null;
      try {
        const at = Date.now();
        taker = await Promise.race([
          waitForOwnership(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms }),
          sleep(OWNER_CLAIM_MS_MAX + SLACK_MS + 3_000).then(() => null),
        ]);
        const tookMs = Date.now() - at;
        assert.ok(taker !== null, 'the frozen holder was ended and the lock taken');
        assert.ok(tookMs >= OWNER_CLAIM_MS_MAX - 1_000 && tookMs <= OWNER_CLAIM_MS_MAX + SLACK_MS, `taken after ${tookMs} ms`);
        assert.is(await alive(sql, 'transfer-99-aaaaaa@frozen owner lock'), 0, 'the frozen session is gone');
        const identity = await taker.claim(LEASE, () => undefined);
        assert.is(identity.epoch, 4);
      } finally {
        await (taker as PgOwner | null)?.release();
        await frozen.end({ timeout: 1 });
      }
    });
  });
}

test('a live starting primary slow before its claim (migrating, reconciling) is never ended, and claims afterwards', async () => {
  await withLedger(async (url, sql) => {
    await sql`UPDATE ledger_owner SET epoch = 3, owner = 'transfer-1-bbbbbb@gone', lease_until = now() - interval '1 minute'`;
    const starter = await ownDatabase(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms });
    const stopWaiting = new AbortController();
    let taken = false;
    const waiting = waitForOwnership(url, quiet, { retakeBackoffCapMs: 500, leaseMs: LEASE.ms, signal: stopWaiting.signal }).then(
      async (o) => {
        taken = true;
        await o.release();
      },
      () => undefined,
    );
    try {
      await sleep(OWNER_CLAIM_MS_MAX + SLACK_MS);
      assert.is(taken, false, 'the waiter did not take the lock from a live starter');
      assert.is(starter.held(), true);
      const identity = await starter.claim(LEASE, () => undefined);
      assert.is(identity.epoch, 4);
    } finally {
      stopWaiting.abort();
      await waiting;
      await starter.release();
    }
  });
});

test('every session the service opens carries the server-side TCP bounds', async () => {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 1, application: 'test-bounds' });
  try {
    const [r] = await sql<{ idle: string; user: string }[]>`
      SELECT current_setting('tcp_keepalives_idle') AS idle, current_setting('tcp_user_timeout') AS user`;
    const unixSocket = (await sql<{ a: string | null }[]>`SELECT inet_client_addr()::text AS a`)[0]?.a === null;
    // Over a Unix socket the server ignores TCP settings and shows 0.
    if (!unixSocket) assert.equal([r?.idle, r?.user], ['5', String(PG_TCP_USER_TIMEOUT_MS)]);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test.run();
