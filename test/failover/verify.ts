// The failover drill's verdict at the end, once the load has stopped: everything drains, then make
// drill's checks run on the stores (every transfer final, each side's balance on its own equation,
// the Funding adapter's operations, every COMMITTED a client saw still COMMITTED, the service's
// conservation check with 0 differences), plus what only the failover clients can show.

import type { Sql } from '../../src/db/sql.js';
import { verifyDrill, type Violation } from '../drill/checks.js';
import { ASSETS, token, waitAllTerminal } from '../drill/drill.js';
import type { LoadTally } from './load.js';
import type { Running } from './processes.js';

export type Verified = { readonly violations: Violation[]; readonly transfers: number };

/** Runs every end check against the stores and the owning instance `primary`; never throws for a failed check. */
export async function verifyFailover(sql: Sql, primary: Running | null, users: readonly bigint[], tally: LoadTally): Promise<Verified> {
  const violations: Violation[] = tally.anomalies.map((detail) => ({ check: 'client-answer', detail }));
  const [count] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb`;
  const transfers = count?.n ?? 0;
  if (primary === null || primary.ended() !== null) {
    violations.push({ check: 'verification', detail: 'no instance owns the ledger at the end: the stores could not be verified' });
    return { violations, transfers };
  }
  try {
    await waitAllTerminal(sql);
  } catch (error) {
    violations.push({ check: 'terminal', detail: error instanceof Error ? error.message : String(error) });
  }
  violations.push(
    ...(await verifyDrill({
      sql,
      base: primary.instance.base,
      token: (u) => token(u),
      adminToken: token('admin'),
      users,
      assets: ASSETS,
      committed: tally.committed,
    })),
  );
  return { violations, transfers };
}
