// Proves the part of patches/postgres+3.4.9.patch that makes the service's pools follow a new
// PostgreSQL leader: a pooled connection of a `target_session_attrs=read-write` URL that answers a
// write with SQLSTATE 25006 (read_only_sql_transaction: its server was demoted under it, as a
// Patroni switchover does) is closed once the statement has failed, so the pool's next write runs
// on a new connection, which the URL sends to the read-write host. Unpatched, postgres.js keeps
// the connection, and every later write on it fails the same way for ever. A URL without
// target_session_attrs keeps its connection, as before. The demotion is played by the session
// itself turning read-only (default_transaction_read_only), which is what a write sees either way.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { errorCode } from '../../src/error-text.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { createTestDatabase } from '../support/database.js';

const withUrl = (url: string, attrs: string) => `${url}${url.includes('?') ? '&' : '?'}${attrs}`;

/**
 * Writes until one succeeds, at most `tries` times: a write sent in the moment between the close
 * and the pool seeing it is refused with the driver's CONNECTION_DESTROYED (never sent, an unknown
 * outcome to the service, which retries it). Returns the codes of the refusals.
 */
async function writeUntilDone(write: () => Promise<unknown>, tries: number): Promise<string[]> {
  const codes: string[] = [];
  for (let i = 0; i < tries; i++) {
    const code = await write().then(
      () => null,
      (e: unknown) => errorCode(e) ?? String(e),
    );
    if (code === null) return codes;
    codes.push(code);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`no write succeeded in ${tries} tries: ${codes.join(', ')}`);
}

async function backend(sql: Sql): Promise<number> {
  const [row] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  return row?.pid ?? 0;
}

/** The session under the pool's one connection turns read-only, as a demoted server's would. */
async function demote(sql: Sql): Promise<void> {
  await sql`SET default_transaction_read_only = on`;
}

test('read-write URL: a write refused with 25006 closes its connection, and the next write runs on a new one', async () => {
  const db = await createTestDatabase();
  const sql = openSql(withUrl(db.url, 'target_session_attrs=read-write'), { max: 1, application: 'test read-only' });
  try {
    await sql`CREATE TABLE t (x int)`;
    const before = await backend(sql);
    await demote(sql);
    const refused = await sql`INSERT INTO t VALUES (1)`.then(
      () => 'written',
      (e: unknown) => errorCode(e),
    );
    assert.is(refused, '25006');
    const refusals = await writeUntilDone(() => sql`INSERT INTO t VALUES (2)`, 5);
    assert.ok(
      refusals.every((c) => c.startsWith('CONNECTION_')),
      `only the driver's closed connection, never 25006 again: ${refusals}`,
    );
    assert.is.not(await backend(sql), before, 'a new connection');
    await demote(sql);
    const inTransaction = await sql
      .begin((tx) => tx`INSERT INTO t VALUES (3)`)
      .then(
        () => 'written',
        (e: unknown) => errorCode(e),
      );
    assert.ok(inTransaction !== 'written', 'the transaction failed');
    await writeUntilDone(() => sql.begin((tx) => tx`INSERT INTO t VALUES (4)`), 5);
    const rows = await sql<{ x: number }[]>`SELECT x FROM t ORDER BY x`;
    assert.equal(
      rows.map((r) => r.x),
      [2, 4],
    );
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test('a URL without target_session_attrs keeps its connection after a 25006', async () => {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 1, application: 'test read-only' });
  try {
    await sql`CREATE TABLE t (x int)`;
    const before = await backend(sql);
    await demote(sql);
    await sql`INSERT INTO t VALUES (1)`.catch(() => undefined);
    assert.is(await backend(sql), before);
  } finally {
    await sql.end({ timeout: 5 });
    await db.drop();
  }
});

test.run();
