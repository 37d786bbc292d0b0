// Funds many users on both sides before a load run. FUNDING goes straight into PostgreSQL, in the
// same two tables an operator's deposit writes (the balance and the external ledger the
// conservation check sums). SPOT goes through POST /admin/v1/deposit, since only UBSCore may
// change a spot balance and its WAL must hold every one.

import type { Sql } from '../../src/db/sql.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { BENCH_JWT_SECRET, type BenchService } from './service-child.js';

export const BENCH_ASSETS = ['USDT', 'BTC'] as const;
/** Whole coins per user, asset and side: far more than a run's transfers can move. */
const SEED_WHOLE_COINS = 1_000_000n;
const PRECISION_UNITS = 10n ** 8n;
const FIRST_USER_ID = 100_000;
const TOKEN_LIFETIME_S = 6 * 3_600;

export type BenchUser = { readonly id: bigint; readonly token: string };

export function adminToken(): string {
  return signJwt({ sub: '1', exp: Math.floor(Date.now() / 1000) + TOKEN_LIFETIME_S, role: 'admin' }, BENCH_JWT_SECRET);
}

/** Creates `count` users funded on both sides and returns each with a signed token. */
export async function seedUsers(svc: BenchService, count: number, spotConcurrency: number): Promise<BenchUser[]> {
  const exp = Math.floor(Date.now() / 1000) + TOKEN_LIFETIME_S;
  const users = Array.from({ length: count }, (_, i): BenchUser => {
    const id = BigInt(FIRST_USER_ID + i);
    return { id, token: signJwt({ sub: id.toString(), exp }, BENCH_JWT_SECRET) };
  });
  await seedFunding(svc.sql, users);
  await seedSpot(svc.base, users, spotConcurrency);
  return users;
}

async function seedFunding(sql: Sql, users: readonly BenchUser[]): Promise<void> {
  // Lists travel as one comma-joined text parameter: postgres.js's sql.array() can stall as the
  // first query on a fresh connection (porsager/postgres#789).
  const ids = users.map((u) => u.id.toString()).join(',');
  const units = SEED_WHOLE_COINS * PRECISION_UNITS;
  for (const asset of BENCH_ASSETS) {
    await sql.begin(async (tx) => {
      await tx`
        INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state)
        SELECT 'bench-f-' || u || '-' || ${asset}, 'DEPOSIT', u::bigint, 'FUNDING', ${asset}, ${units}, 'DONE'
          FROM unnest(string_to_array(${ids}, ',')) AS u`;
      await tx`
        INSERT INTO funding_balances (user_id, asset, available)
        SELECT u::bigint, ${asset}, ${units} FROM unnest(string_to_array(${ids}, ',')) AS u`;
    });
  }
}

/** One admin deposit per user and asset, `concurrency` in flight, each answered 200 or the seed fails. */
async function seedSpot(base: string, users: readonly BenchUser[], concurrency: number): Promise<void> {
  const jobs = users.flatMap((u) => BENCH_ASSETS.map((asset) => ({ user: u.id, asset })));
  const headers = { authorization: `Bearer ${adminToken()}`, 'content-type': 'application/json' };
  let next = 0;
  const worker = async (): Promise<void> => {
    for (let job = jobs[next++]; job !== undefined; job = jobs[next++]) {
      const body = {
        user_id: job.user.toString(),
        account: 'SPOT',
        asset: job.asset,
        amount: SEED_WHOLE_COINS.toString(),
        ref: `bench-s-${job.user}-${job.asset}`,
      };
      const r = await fetch(`${base}/admin/v1/deposit`, { method: 'POST', headers, body: JSON.stringify(body) });
      if (r.status !== 200) throw new Error(`SPOT seed deposit answered ${r.status}: ${await r.text()}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, worker));
}
