// Proves the multi-host part of patches/postgres+3.4.9.patch, on which the service follows a
// Patroni leader (DATABASE_URL naming every node, target_session_attrs=read-write): a hot standby
// named first is skipped for the read-write host (as shipped, postgres.js took a PostgreSQL 14+
// standby for read-write: it reports default_transaction_read_only off); a host refusing the
// startup (starting up, in a failover) is skipped for the next host instead of failing the query;
// and while no host is read-write the driver waits its backoff between rounds of hosts instead
// of connecting again in a busy loop. The standby and the starting-up server are fakes that speak
// the protocol's startup (test/support/fake-pg.ts); the read-write host is the suite's PostgreSQL.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openSql } from '../src/db/sql.js';
import { createTestDatabase } from './support/database.js';
import { type FakeKind, type FakePg, startFakePg } from './support/fake-pg.js';
import { sleep } from './support/process.js';

/** The URL with `fake` named before the real host, and target_session_attrs=read-write. */
function fakeFirst(url: string, fakes: readonly FakePg[], withReal = true): string {
  const u = new URL(url);
  const hosts = [...fakes.map((f) => `127.0.0.1:${f.port}`), ...(withReal ? [u.host] : [])].join(',');
  return `${u.protocol}//${u.username}:${u.password}@${hosts}${u.pathname}?target_session_attrs=read-write`;
}

async function landsOnReal(kind: FakeKind): Promise<void> {
  const db = await createTestDatabase();
  const fake = await startFakePg(kind);
  const sql = openSql(fakeFirst(db.url, [fake]), { max: 1, application: 'test multi-host' });
  try {
    const [row] = await sql<{ standby: boolean; port: number }[]>`SELECT pg_is_in_recovery() AS standby, inet_server_port() AS port`;
    assert.is(row?.standby, false);
    assert.is(row?.port, Number(new URL(db.url).port));
    assert.ok(fake.connections() >= 1, 'the fake was asked first');
  } finally {
    await sql.end({ timeout: 1 });
    await fake.close();
    await db.drop();
  }
}

test('a hot standby named first is skipped for the read-write host', () => landsOnReal('hot-standby'));

test('a host refusing the startup (starting up) is skipped for the next host', () => landsOnReal('starting-up'));

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
