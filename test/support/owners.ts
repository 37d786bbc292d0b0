// Owners of a test database as the ownership code meets them: a hung owner's sessions, held open
// by the test, and a count of the sessions of one tag.

import { openSql, type Sql } from '../../src/db/sql.js';
import { FENCE_LOCK_KEY } from '../../src/ownership/epoch-claim.js';
import { OWNER_LOCK_KEY } from '../../src/ownership/pg-owner.js';

/**
 * The sessions a hung owner leaves: its lock session holding the owner lock, and a pool session
 * idle in a transaction that holds the fence lock shared, as a process stopped mid-write leaves it.
 */
export async function hungOwner(url: string, tag: string): Promise<{ sessions: Sql[]; end: () => Promise<void> }> {
  const lock = openSql(url, { max: 1, application: `${tag} owner lock` });
  await lock`SELECT pg_advisory_lock(${OWNER_LOCK_KEY.toString()}::bigint)`;
  const pool = openSql(url, { max: 1, application: `${tag} main` });
  await pool`BEGIN`;
  await pool`SELECT pg_advisory_xact_lock_shared(${FENCE_LOCK_KEY.toString()}::bigint)`;
  return {
    sessions: [lock, pool],
    end: async () => {
      await Promise.all([lock.end({ timeout: 1 }), pool.end({ timeout: 1 })]);
    },
  };
}

/** The server sessions whose application_name starts with `prefix`. */
export async function sessionsOf(sql: Sql, prefix: string): Promise<number> {
  const [r] = await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name LIKE ${`${prefix}%`}`;
  return Number(r?.n);
}
