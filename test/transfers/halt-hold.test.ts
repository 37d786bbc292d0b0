// Proves a stored halt holds from the first moment of a start: 1,000 transfers parked in INIT across 4 shards, with every shard re-reading the halt and scanning every 100 ms, make 0 moves for HALT_HOLD_MS (60 s by default) and no balance moves; after resume every one of them commits and the conservation check finds 0 differences.

import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeHalt } from '../../src/db/halt-state.js';
import { migrate } from '../../src/db/migrations.js';
import { seedDemoAssets } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { TransferWrites } from '../../src/db/transfer-writes.js';
import { TransferStore } from '../../src/db/transfers.js';
import { shardOfUser } from '../../src/domain/shard.js';
import { stateName } from '../../src/domain/fsm.js';
import { newReqId } from '../../src/http/req-ids.js';
import { createTestDatabase } from '../support/database.js';
import { startTestService, type TestService } from '../support/service.js';

/** How long the halt is watched; HALT_HOLD_MS shortens it for a quick local run. */
const HOLD_MS = Number(process.env.HALT_HOLD_MS ?? '60000');
const SHARDS = 4;
const USERS = 40;
const PER_USER = 25;
const UNITS = 1_000_000n;
const FIRST_USER = 3_001;

type Seeded = { readonly reqIds: readonly string[]; readonly users: readonly bigint[] };

/** Funded users (each balance with its external deposit, so conservation holds) and their transfers parked in INIT, created as a full mailbox parks them. */
async function seed(sql: Sql): Promise<Seeded> {
  await migrate(sql);
  await seedDemoAssets(sql);
  const users = Array.from({ length: USERS }, (_, i) => BigInt(FIRST_USER + i));
  assert.is(new Set(users.map((u) => shardOfUser(u, SHARDS))).size, SHARDS, 'the users fall on every shard');
  for (const user of users) {
    const amount = UNITS * BigInt(PER_USER);
    await sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (${user.toString()}, 'USDT', ${amount.toString()})`;
    await sql`INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state)
              VALUES (${`hold-${user}`}, 'DEPOSIT', ${user.toString()}, 'FUNDING', 'USDT', ${amount.toString()}, 'DONE')`;
  }
  const batch = { batchMax: 100 };
  const store = new TransferStore(sql, new TransferWrites(sql, batch), batch);
  const transfers = users.flatMap((userId) =>
    Array.from({ length: PER_USER }, () => ({
      reqId: newReqId(),
      userId,
      from: 'FUNDING' as const,
      to: 'SPOT' as const,
      asset: 'USDT',
      amount: UNITS,
      clientOrderId: null,
    })),
  );
  const created = await Promise.all(transfers.map((t) => store.create(t)));
  assert.ok(
    created.every((c) => c.kind === 'created' && c.view.state === 'INIT'),
    'every transfer parked in INIT',
  );
  return { reqIds: transfers.map((t) => t.reqId), users };
}

/** The transfers' states by name, counted; their history rows; and the users' FUNDING balances as text. */
async function snapshot(sql: Sql, s: Seeded): Promise<{ states: Record<string, number>; moves: number; funding: string }> {
  const rows = await sql<{ state: number; n: number }[]>`
    SELECT state, count(*)::int AS n FROM transfers_tb WHERE req_id = ANY(${s.reqIds}) GROUP BY state`;
  const states = Object.fromEntries(rows.map((r) => [stateName(r.state) ?? String(r.state), r.n]));
  const [history] = await sql<
    { n: number }[]
  >`SELECT count(*)::int AS n FROM transfer_state_history AS h JOIN transfers_tb AS t USING (transfer_id) WHERE t.req_id = ANY(${s.reqIds})`;
  const funding = await sql<{ user_id: bigint; available: bigint }[]>`
    SELECT user_id, available FROM funding_balances WHERE user_id = ANY(${s.users.map(String)}::bigint[]) ORDER BY user_id`;
  return { states, moves: history?.n ?? -1, funding: funding.map((f) => `${f.user_id}=${f.available}`).join(',') };
}

test(`MON-003: a start with a stored halt and ${USERS * PER_USER} INIT transfers across ${SHARDS} shards, refreshing and scanning every 100 ms, holds for ${HOLD_MS} ms with 0 moves; after resume all commit, conservation exact`, async () => {
  const db = await createTestDatabase();
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-halt-hold-'));
  const sql = openSql(db.url, { max: 4, application: 'test-halt-hold' });
  const env = {
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    COORDINATORS: String(SHARDS),
    SCAN_INTERVAL_MS: '100',
    RATE_LIMIT_PER_SECOND: '0',
    DAILY_TRANSFER_LIMIT: '0',
    INVARIANT_INTERVAL_MS: '0',
  };
  let svc: TestService | null = null;
  try {
    // A first start names the ledger in both halves (an empty WAL against a used database is refused); then it stops.
    await (await startTestService(env)).stop();
    const seeded = await seed(sql);
    await writeHalt(sql, { reason: 'hold drill', since: new Date().toISOString() });
    const before = await snapshot(sql, seeded);
    assert.equal(before.states, { INIT: USERS * PER_USER });
    svc = await startTestService(env);
    const ready = await svc.call('GET', '/readyz');
    assert.equal([ready.status, ready.body.halt_reason], [503, 'hold drill'], 'started halted');
    const until = Date.now() + HOLD_MS;
    let looks = 0;
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, Math.min(1_000, Math.max(0, until - Date.now()))));
      assert.equal(await snapshot(sql, seeded), before, `nothing moved after ${HOLD_MS - (until - Date.now())} ms`);
      looks += 1;
    }
    assert.ok(looks > 0);
    const resumed = await svc.call('POST', '/admin/v1/resume', { token: svc.adminToken() });
    assert.equal([resumed.status, resumed.body.was_halted, resumed.body.shards_not_holding], [200, true, []]);
    const deadline = Date.now() + 120_000;
    for (;;) {
      const now = await snapshot(sql, seeded);
      if (now.states.COMMITTED === USERS * PER_USER) break;
      assert.ok(Date.now() < deadline, `every transfer commits after resume: ${JSON.stringify(now.states)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const checked = await svc.call('GET', '/admin/v1/invariant', { token: svc.adminToken() });
    assert.equal([checked.body.ok, checked.body.differences], [true, []], 'conservation: 0 differences');
    const [left] = await sql<{ n: bigint }[]>`SELECT coalesce(sum(available), 0)::bigint AS n FROM funding_balances
                                             WHERE user_id = ANY(${seeded.users.map(String)}::bigint[])`;
    assert.is(BigInt(left?.n ?? -1), 0n, 'every FUNDING unit moved to SPOT');
  } finally {
    await svc?.stop();
    await sql.end({ timeout: 5 });
    await db.drop();
    await fs.rm(dataDir, { recursive: true, force: true });
  }
});

test.run();
