// Proves the multi-host part of patches/postgres+3.4.9.patch, on which the service follows a
// Patroni leader (DATABASE_URL naming every node, target_session_attrs=read-write): a hot standby
// named first is skipped for the read-write host (as shipped, postgres.js took a PostgreSQL 14+
// standby for read-write: it reports default_transaction_read_only off); a host refusing the
// startup (starting up, in a failover) is skipped for the next host instead of failing the query;
// and while no host is read-write the driver waits its backoff between rounds of hosts instead
// of connecting again in a busy loop. A session its dying leader ended with a query in flight
// leaves nothing of itself to the next connection (its query and error were left set, and the
// next startup took that error for its own, failed its first query and skipped the check of the
// host: a hot standby was taken for read-write, seen under `make chaos` after a leader kill).
// The standby, the starting-up server and the dying leader are fakes that speak the protocol's
// startup (test/support/fake-pg.ts); the read-write host is the suite's PostgreSQL.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSql, type Sql } from '../../src/db/sql.js';
import { createTestDatabase } from '../support/database.js';
import { type FakeKind, type FakePg, startFakePg } from '../support/fake-pg.js';
import { sleep } from '../support/process.js';

/** The URL with `fake` named before the real host, and target_session_attrs=read-write. */
function fakeFirst(url: string, fakes: readonly FakePg[], withReal = true): string {
  const u = new URL(url);
  const hosts = [...fakes.map((f) => `127.0.0.1:${f.port}`), ...(withReal ? [u.host] : [])].join(',');
  return `${u.protocol}//${u.username}:${u.password}@${hosts}${u.pathname}?target_session_attrs=read-write`;
}

/**
 * Runs `body` on a one-connection pool whose URL names a fake of each of `kinds`, in order, then
 * the suite's read-write server; cleans up after.
 */
async function withFakesFirst(
  kinds: readonly FakeKind[],
  body: (sql: Sql, fakes: readonly FakePg[], realPort: number) => Promise<void>,
): Promise<void> {
  const db = await createTestDatabase();
  const fakes: FakePg[] = [];
  for (const kind of kinds) fakes.push(await startFakePg(kind));
  const sql = openSql(fakeFirst(db.url, fakes), { max: 1, application: 'test multi-host' });
  try {
    await body(sql, fakes, Number(new URL(db.url).port));
  } finally {
    await sql.end({ timeout: 1 });
    for (const f of fakes) await f.close();
    await db.drop();
  }
}

/** Asserts that a query runs on the read-write server at `realPort`. */
async function assertOnReal(sql: Sql, realPort: number, what = 'the query'): Promise<void> {
  const [row] = await sql<{ standby: boolean; port: number }[]>`SELECT pg_is_in_recovery() AS standby, inet_server_port() AS port`;
  assert.is(row?.standby, false, `${what} on a standby`);
  assert.is(row?.port, realPort);
}

const landsOnReal = (kind: FakeKind) =>
  withFakesFirst([kind], async (sql, [fake], realPort) => {
    await assertOnReal(sql, realPort);
    assert.ok((fake?.connections() ?? 0) >= 1, 'the fake was asked first');
  });

test('a hot standby named first is skipped for the read-write host', () => landsOnReal('hot-standby'));

test('a host refusing the startup (starting up) is skipped for the next host', () => landsOnReal('starting-up'));

test('a session its dying leader ended with a query in flight leaves nothing behind: the next connection skips a hot standby for the read-write host', () =>
  // Hosts in order: the dying leader, the standby, the read-write server. The connection after
  // the dying one is tried on the standby first.
  withFakesFirst(['dying-primary', 'hot-standby'], async (sql, [dying, standby], realPort) => {
    // The first statement on the dying leader (the driver's own type lookup, then this one) is
    // ended; the driver takes the next host for the query it has not sent yet.
    await sql`SELECT 1`.catch(() => undefined);
    assert.is(dying?.connections(), 1);
    for (let i = 0; i < 3; i++) await assertOnReal(sql, realPort, `query ${i}`);
    assert.ok((standby?.connections() ?? 0) >= 1, 'the standby was asked');
  }));

test('while no host is read-write, rounds of hosts are paced by the backoff, not a busy loop', async () => {
  const db = await createTestDatabase();
  const fakes = [await startFakePg('hot-standby'), await startFakePg('hot-standby')];
  const sql = openSql(fakeFirst(db.url, fakes, false), { max: 1, application: 'test multi-host' });
  try {
    const waiting = sql`SELECT 1`.catch((e: unknown) => e);
    await sleep(1_500);
    const asked = fakes.reduce((n, f) => n + f.connections(), 0);
    // Backoff 100, 200, 400, 800 ms (RECONNECT_BACKOFF_BASE_MS 50, doubled): a few rounds of two.
    assert.ok(asked >= 2 && asked <= 12, `connections in 1.5 s: ${asked}`);
    await sql.end({ timeout: 0 });
    await waiting;
  } finally {
    for (const f of fakes) await f.close();
    await db.drop();
  }
});

test.run();
