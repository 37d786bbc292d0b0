// A holder of the owner lock that has not claimed the epoch yet (a starting primary migrating
// and reconciling, a standby between its lock and its claim) is no owner of record, so the lease
// rule of pg-owner.ts cannot end it. Frozen or cut off there, it would keep the lock for as long
// as the OS keeps a dead socket (hours), and every standby waiting. So a live one shows itself on
// its lock session every OWNER_CLAIM_HEARTBEAT_MS until its claim is done (`claimHeartbeat`), and
// a waiting process ends a holder that is not the owner of record and whose lock session has not
// moved for OWNER_CLAIM_MS_MAX (`endUnclaimedHolder`): idle, idle in a transaction (a claim frozen
// halfway, holding the fence lock), or stuck in one statement. Server clock only: state_change
// and now() are both the server's.

import type postgres from 'postgres';
import { OWNER_CLAIM_HEARTBEAT_MS, OWNER_CLAIM_MS_MAX } from '../limits.js';

/** The holder as pg-owner.ts finds it: its backend pid and start time, and what it calls itself. */
type Holder = { readonly pid: number; readonly application_name: string; readonly backend_start_text: string };

/**
 * Runs a cheap statement on the lock session every OWNER_CLAIM_HEARTBEAT_MS (its state_change
 * stays fresh) until `stop`; a failed one is left to the session's own loss handling.
 */
export function claimHeartbeat(sql: postgres.Sql): { readonly stop: () => void } {
  const timer = setInterval(() => {
    sql`SELECT 1`.catch(() => undefined);
  }, OWNER_CLAIM_HEARTBEAT_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * Ends `holder` if it is not a session of the owner of record (nor of this process, `tag`) and
 * its session has not moved for OWNER_CLAIM_MS_MAX. Answers whether it was ended (then ask again).
 */
export async function endUnclaimedHolder(sql: postgres.Sql, holder: Holder, tag: string): Promise<boolean> {
  if (holder.application_name.startsWith(`${tag} `)) return false;
  const bound = OWNER_CLAIM_MS_MAX / 1000;
  const rows = await sql<{ ended: boolean }[]>`
    SELECT pg_terminate_backend(a.pid) AS ended FROM pg_stat_activity AS a
     WHERE a.pid = ${holder.pid}::int AND a.backend_start::text = ${holder.backend_start_text}
       AND now() - coalesce(a.state_change, a.backend_start) > make_interval(secs => ${bound})
       AND NOT EXISTS (SELECT 1 FROM ledger_owner AS o
                        WHERE o.owner <> '' AND left(a.application_name, length(o.owner) + 1) = o.owner || ' ')`.catch((error: unknown) => {
    // Before migration 0010 there is no ledger_owner, and so no owner of record to spare.
    if ((error as { code?: unknown }).code !== '42P01') throw error;
    return sql<{ ended: boolean }[]>`
        SELECT pg_terminate_backend(a.pid) AS ended FROM pg_stat_activity AS a
         WHERE a.pid = ${holder.pid}::int AND a.backend_start::text = ${holder.backend_start_text}
           AND now() - coalesce(a.state_change, a.backend_start) > make_interval(secs => ${bound})`;
  });
  return rows[0]?.ended === true;
}
