// The owner's claim of the epoch (src/ownership/pg-owner.ts takes the owner lock first): the epoch
// is incremented under the fence lock, so every write of a former owner is refused from then on.

import type postgres from 'postgres';
import type { PgOwnerIdentity } from '../db/sql.js';
import { OWNER_CLAIM_TRIES_MAX } from '../limits.js';

/**
 * The fence lock of migration 0010 ("ledgerfd"): every write of money takes it shared and checks
 * the epoch; a claim holds it exclusively while it increments the epoch.
 */
export const FENCE_LOCK_KEY = 0x6c65646765726664n;

/** The owner's claim of the epoch: made once, then read by every pool that writes money. */
export function epochClaim(
  sql: postgres.Sql,
  tag: string,
): {
  readonly claim: (leaseMs: number) => Promise<PgOwnerIdentity>;
  readonly identity: () => PgOwnerIdentity;
} {
  let identity: PgOwnerIdentity | null = null;
  return {
    claim: async (leaseMs) => {
      if (identity !== null) throw new Error('the owner epoch is claimed once per process');
      identity = { tag, epoch: await claimEpoch(sql, tag, leaseMs) };
      return identity;
    },
    identity: () => {
      if (identity === null) throw new Error('the owner epoch is not claimed yet');
      return identity;
    },
  };
}

/** The claim, tried again when its wait for the fence lock or its statement ran past the lock session's bounds. */
async function claimEpoch(sql: postgres.Sql, tag: string, leaseMs: number): Promise<number> {
  for (let tries = 1; ; tries++) {
    try {
      return await claimEpochOnce(sql, tag, leaseMs);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (tries >= OWNER_CLAIM_TRIES_MAX || (code !== '55P03' && code !== '57014')) throw error;
    }
  }
}

async function claimEpochOnce(sql: postgres.Sql, tag: string, leaseMs: number): Promise<number> {
  const rows = await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${FENCE_LOCK_KEY.toString()}::bigint)`;
    return tx<{ epoch: string }[]>`
      UPDATE ledger_owner SET epoch = epoch + 1, owner = ${tag},
             lease_until = now() + make_interval(secs => ${leaseMs / 1000}), promoted_at = now()
       RETURNING epoch::text AS epoch`;
  });
  const epoch = Number(rows[0]?.epoch);
  if (!Number.isSafeInteger(epoch) || epoch < 1) throw new Error(`claiming the owner epoch answered ${JSON.stringify(rows[0])}`);
  return epoch;
}
