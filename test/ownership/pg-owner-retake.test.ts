// Proves that an owner whose lock connection drops takes the lock again: when the server still holds its old session (the network dropped, not the server), that session, and only that one, is ended and the lock taken on a new one; a lock another session holds is reported with its name instead.
// test-runner: alone

import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSql } from '../../src/db/sql.js';
import { ownDatabase, OWNER_LOCK_KEY, type PgOwner } from '../../src/ownership/pg-owner.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { pollUntil } from '../support/process.js';

const EVENT_TIMEOUT_MS = 15_000;

/**
 * A TCP proxy in front of PostgreSQL that can cut its client sides while keeping the server
 * sides open: to the client the connection is gone, to the server the session lives on.
 */
async function cuttableProxy(target: URL): Promise<{ url: (db: URL) => string; cutClients: () => void; close: () => Promise<void> }> {
  const clients = new Set<net.Socket>();
  const upstreams = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    clients.add(client);
    upstreams.add(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => undefined);
    upstream.on('error', () => undefined);
    // Only the client side ends: the server side is left open on purpose (see cutClients).
    client.on('close', () => clients.delete(client));
    upstream.on('close', () => {
      upstreams.delete(upstream);
      client.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: (db) => {
      const u = new URL(db.href);
      u.port = String(port);
      return u.href;
    },
    cutClients: () => {
      for (const c of clients) {
        c.unpipe();
        c.destroy();
      }
    },
    close: async () => {
      for (const s of [...clients, ...upstreams]) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type Seen = { lost: number; regained: number; takenBy: string | null };

function recorder(): { seen: Seen; events: Parameters<typeof ownDatabase>[1] } {
  const seen: Seen = { lost: 0, regained: 0, takenBy: null };
  return {
    seen,
    events: {
      onLost: () => (seen.lost += 1),
      onRegained: () => (seen.regained += 1),
      onTakenByOther: (holder) => (seen.takenBy = holder),
      log: { info: () => undefined },
    },
  };
}

async function withOwnerBehindProxy(
  body: (o: { db: TestDatabase; proxy: Awaited<ReturnType<typeof cuttableProxy>>; seen: Seen; owner: PgOwner }) => Promise<void>,
): Promise<void> {
  const db = await createTestDatabase();
  const proxy = await cuttableProxy(new URL(db.url));
  const { seen, events } = recorder();
  let owner: PgOwner | null = null;
  try {
    owner = await ownDatabase(proxy.url(new URL(db.url)), events, { retakeBackoffCapMs: 500, leaseMs: 1_000 });
    await body({ db, proxy, seen, owner });
  } finally {
    await owner?.release().catch(() => undefined);
    await proxy.close();
    await db.drop();
  }
}

async function lockHolders(url: string): Promise<number[]> {
  const sql = openSql(url, { max: 1, application: 'test-look' });
  try {
    const rows = await sql<{ pid: number }[]>`SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                                               AND (classid::bigint << 32 | objid::bigint) = ${OWNER_LOCK_KEY.toString()}::bigint`;
    return rows.map((r) => r.pid);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

test('a dropped connection whose session the server still holds: that session is ended and the lock taken again', async () => {
  await withOwnerBehindProxy(async ({ db, proxy, seen, owner }) => {
    const [before] = await lockHolders(db.url);
    assert.ok(before !== undefined, 'the owner holds the lock');
    proxy.cutClients();
    await pollUntil(async () => (seen.regained > 0 || seen.takenBy !== null ? true : undefined), {
      timeoutMs: EVENT_TIMEOUT_MS,
      describe: () => JSON.stringify(seen),
    });
    assert.equal([seen.lost, seen.regained, seen.takenBy], [1, 1, null]);
    assert.ok(owner.held());
    const after = await lockHolders(db.url);
    assert.is(after.length, 1);
    assert.not.equal(after[0], before, 'a new session holds it; the old one was ended');
  });
});

test('a lock another session took while the connection was down is reported with its holder, never ended', async () => {
  await withOwnerBehindProxy(async ({ db, proxy, seen, owner }) => {
    const [before] = await lockHolders(db.url);
    const admin = openSql(db.url, { max: 1, application: 'test-admin' });
    const intruder = openSql(db.url, { max: 1, application: 'intruder-session' });
    try {
      // The intruder queues for the lock first, so it is granted the moment the old session ends.
      const queued = intruder`SELECT pg_advisory_lock(${OWNER_LOCK_KEY.toString()}::bigint)`.then(() => true);
      await pollUntil(
        async () =>
          (
            await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'intruder-session' AND wait_event_type = 'Lock'`
          )[0]?.n === 1
            ? true
            : undefined,
        {
          timeoutMs: EVENT_TIMEOUT_MS,
          describe: () => 'the intruder waits for the lock',
        },
      );
      // The old session ends for real (as after a server restart).
      proxy.cutClients();
      await admin`SELECT pg_terminate_backend(${before as number}::int)`;
      assert.ok(await queued, 'the intruder holds the lock');
      await pollUntil(async () => (seen.regained > 0 || seen.takenBy !== null ? true : undefined), {
        timeoutMs: EVENT_TIMEOUT_MS,
        describe: () => JSON.stringify(seen),
      });
      assert.equal([seen.regained, owner.held()], [0, false]);
      assert.match(seen.takenBy ?? '', /intruder-session/);
      assert.is((await intruder`SELECT 1 AS one`)[0]?.one, 1, 'the intruder session was not ended');
    } finally {
      await intruder.end({ timeout: 5 });
      await admin.end({ timeout: 5 });
    }
  });
});

test.run();
