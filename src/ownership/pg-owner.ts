// One process per database (rule 7). The owner holds a PostgreSQL session advisory lock on a
// connection of its own, for its whole life: not a pooled one, never recycled, never idle-closed.
// A second process asks for the same lock, is refused at once, names the holder from
// pg_stat_activity, and exits before it migrates or writes anything. When the owner's connection
// closes, the session and its lock are gone and another process may take them, so the owner must
// stop taking work: `onLost` is called once.

import os from 'node:os';
import postgres from 'postgres';
import { OwnershipError } from './errors.js';

/** The advisory lock every owner of a database takes: "ledger-o" in ASCII. Per database, as every advisory lock is. */
export const OWNER_LOCK_KEY = 0x6c65646765722d6fn;
/** How long a start waits for a lock held by a process that just died (its backend exits when it sees the closed socket). */
const TAKE_WAIT_MS = 3_000;
const TAKE_RETRY_MS = 250;
const CONNECT_TIMEOUT_S = 10;

export type PgOwner = { readonly release: () => Promise<void> };

/** Takes the database's owner lock, or throws OwnershipError naming the process that holds it. */
export async function ownDatabase(url: string, onLost: (reason: string) => void): Promise<PgOwner> {
  let held = false;
  let released = false;
  const sql = postgres(url, {
    max: 1,
    idle_timeout: 0,
    max_lifetime: null,
    connect_timeout: CONNECT_TIMEOUT_S,
    onnotice: () => undefined,
    // application_name is at most 63 bytes: enough to name the process in the refusal.
    connection: { application_name: `transfer owner pid ${process.pid} on ${os.hostname()}`.slice(0, 63) },
    onclose: () => {
      if (held && !released) {
        held = false;
        onLost('the connection holding the owner lock closed: another process may now own the database');
      }
    },
  });
  const deadline = Date.now() + TAKE_WAIT_MS;
  try {
    for (;;) {
      const [row] = await sql<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${OWNER_LOCK_KEY.toString()}::bigint) AS ok`;
      if (row?.ok === true) break;
      if (Date.now() >= deadline) throw new OwnershipError(`the database is owned by another process: ${await describeHolder(sql)}. Stop it first; two processes on one database would split the SPOT ledger.`);
      await new Promise((resolve) => setTimeout(resolve, TAKE_RETRY_MS));
    }
  } catch (error) {
    released = true;
    await sql.end({ timeout: 5 }).catch(() => undefined);
    throw error;
  }
  held = true;
  return {
    release: async () => {
      released = true;
      await sql.end({ timeout: 5 });
    },
  };
}

async function describeHolder(sql: postgres.Sql): Promise<string> {
  const rows = await sql<{ pid: number; application_name: string; client_addr: string | null; backend_start: Date }[]>`
    SELECT a.pid, a.application_name, host(a.client_addr) AS client_addr, a.backend_start
      FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
     WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.objsubid = 1 AND (l.classid::bigint << 32 | l.objid::bigint) = ${OWNER_LOCK_KEY.toString()}::bigint`;
  const r = rows[0];
  if (r === undefined) return 'a session that has just let go of the owner lock (try again)';
  return `"${r.application_name}" (backend pid ${r.pid}, from ${r.client_addr ?? 'a local socket'}, connected ${r.backend_start.toISOString()})`;
}
