// Proves the fence of migrations 0010 and 0013 and that no layer takes its refusal for a business one: every table of the schema but ledger_owner carries the fence; a write on a connection whose owner epoch was superseded is refused with LF001 on every money table and by every control writer (halt, resume, alert, audit row, asset), a `standby` connection writes nothing, the current epoch and an unfenced connection pass, the Funding adapter answers a fenced write as an unknown outcome (PENDING), never FAILED, and an admin route answers a fenced write 503 OWNER_LEASE_UNPROVEN.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ulid } from 'ulid';
import { FundingAdapter } from '../../src/adapters/funding.js';
import { isConstraintRefusal } from '../../src/db/batch.js';
import { migrate } from '../../src/db/migrations.js';
import { seedDemoAssets } from '../../src/db/schema.js';
import { openSql, type PgOwnerIdentity, type Sql } from '../../src/db/sql.js';
import { TransferWrites } from '../../src/db/transfer-writes.js';
import { isFenced } from '../../src/db/fence.js';
import { readHalt } from '../../src/db/halt-state.js';
import { AlertSink } from '../../src/alerts/alerts.js';
import { AuditLog } from '../../src/audit/audit-log.js';
import { signJwt } from '../../src/http/auth/jwt.js';
import { TokenVerifier } from '../../src/http/auth/token-verifier.js';
import { AdminService } from '../../src/services/admin.js';
import { HaltSwitch } from '../../src/services/halt.js';
import { keptLog, stubApps } from '../support/app.js';
import { createTestDatabase } from '../support/database.js';
import { TEST_JWT_SECRET } from '../support/service.js';

/** Every table that holds money or the SPOT log: each must carry the fence. */
const MONEY_TABLES = [
  'external_movements',
  'funding_balances',
  'funding_operations',
  'spot_log',
  'spot_processed',
  'spot_seq_clock',
  'spot_snapshots',
  'transfer_state_history',
  'transfers_active',
  'transfers_tb',
];
const CURRENT_EPOCH = 5;

async function withLedger(body: (url: string, setup: Sql) => Promise<void>): Promise<void> {
  const db = await createTestDatabase();
  const setup = openSql(db.url, { max: 1, application: 'test-setup' });
  try {
    await migrate(setup);
    await seedDemoAssets(setup);
    await setup`UPDATE ledger_owner SET epoch = ${CURRENT_EPOCH}`;
    await body(db.url, setup);
  } finally {
    await setup.end({ timeout: 5 });
    await db.drop();
  }
}

async function withPool<T>(url: string, owner: PgOwnerIdentity | undefined, body: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = openSql(url, { max: 1, application: 'test-writer', ...(owner === undefined ? {} : { owner }) });
  try {
    return await body(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/** What a write on each money table answers: 'ok', or the SQLSTATE it was refused with. */
async function writeEach(sql: Sql): Promise<Record<string, string>> {
  const answers: Record<string, string> = {};
  for (const table of MONEY_TABLES) {
    // A statement trigger fires whether or not a row matches: the fence is asked all the same.
    answers[table] = await sql
      .unsafe(`DELETE FROM ${table} WHERE false`)
      .then(() => 'ok')
      .catch((error: unknown) => (isFenced(error) ? 'LF001' : String((error as { code?: unknown }).code)));
  }
  return answers;
}

const every = (answer: string) => Object.fromEntries(MONEY_TABLES.map((t) => [t, answer]));

/**
 * The only table of the schema left unfenced (migration 0013 says why): the claim and the lease
 * renewal write it on the owner-lock session, under the fence lock itself.
 */
const UNFENCED_TABLES = ['ledger_owner'];
/** pg_trigger.tgtype's bits for INSERT (4), DELETE (8) and UPDATE (16): a fence must guard all three. */
const WRITE_EVENTS = 4 | 8 | 16;

test('fence: every table of the schema carries the fence trigger, but the documented exclusions', async () => {
  await withLedger(async (_url, setup) => {
    // Derived, not listed: a table added without its fence fails here.
    const tables = await setup<{ name: string }[]>`
      SELECT tablename AS name FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`;
    const fenced = await setup<{ name: string }[]>`
      SELECT DISTINCT c.relname AS name FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid JOIN pg_proc AS p ON p.oid = t.tgfoid
       WHERE p.proname = 'owner_fence' AND NOT t.tgisinternal AND t.tgenabled <> 'D' AND (t.tgtype & ${WRITE_EVENTS}) = ${WRITE_EVENTS}
         AND c.relnamespace = current_schema()::regnamespace ORDER BY c.relname`;
    const all = tables.map((r) => r.name);
    assert.ok(all.length > MONEY_TABLES.length + UNFENCED_TABLES.length, `the schema's tables: ${all.join(', ')}`);
    assert.equal(
      fenced.map((r) => r.name),
      all.filter((t) => !UNFENCED_TABLES.includes(t)),
      'fenced tables',
    );
    for (const t of MONEY_TABLES) assert.ok(all.includes(t), `money table ${t} exists`);
  });
});

test('fence: a superseded epoch is refused with LF001 on every money table, a standby writes nothing, the current epoch and an unfenced connection pass', async () => {
  await withLedger(async (url, setup) => {
    const old = { tag: 'test-old', epoch: CURRENT_EPOCH - 1 };
    assert.equal(await withPool(url, old, writeEach), every('LF001'), 'superseded epoch');
    assert.equal(await withPool(url, { tag: 'test-standby', epoch: 'standby' }, writeEach), every('LF001'), 'standby');
    assert.equal(await withPool(url, { tag: 'test-now', epoch: CURRENT_EPOCH }, writeEach), every('ok'), 'current epoch');
    assert.equal(await withPool(url, undefined, writeEach), every('ok'), 'unfenced');
    // A real row, not only the statement: nothing of it lands.
    const refused = await withPool(url, old, (sql) =>
      sql`INSERT INTO funding_balances (user_id, asset, available) VALUES (7, 'USDT', 1)`.then(
        () => 'written',
        (e: unknown) => (isFenced(e) ? 'LF001' : String(e)),
      ),
    );
    assert.is(refused, 'LF001');
    assert.is((await setup`SELECT count(*)::int AS n FROM funding_balances`)[0]?.n, 0);
  });
});

/** What a write answered: 'ok', or 'LF001' for the fence's refusal, or the error itself. */
const answerOf = (write: Promise<unknown>): Promise<string> =>
  write.then(
    () => 'ok',
    (e: unknown) => (isFenced(e) ? 'LF001' : String(e)),
  );

const ASSET = {
  symbol: 'FENCE',
  precision: 2,
  minTransferUnits: 1n,
  maxTransferUnits: 1_000n,
  status: 'ACTIVE' as const,
  internalTransferEnabled: true,
  dailyAmountLimitUnits: null,
};
const AUDIT = { operator: 'ops', action: 'service.halt' as const, target: {}, parameters: {}, status: 200, outcome: 'ok', reqId: null };

/** The control writers of one pool, as the service builds them on its main pool. */
async function controlWriters(sql: Sql) {
  const { log } = keptLog();
  const unused = () => Promise.reject(new Error('UBSCore is not part of this test'));
  return {
    halt: await HaltSwitch.load(sql, log),
    alerts: new AlertSink({ sql, log, webhookUrl: null }),
    audit: new AuditLog(sql),
    admin: new AdminService({ sql, ubs: unused, ubsTimeoutMs: 1_000, onAssetChange: async () => undefined }),
  };
}

const alert = (key: string) => ({
  kind: 'CONSERVATION_VIOLATION' as const,
  reqId: null,
  userId: null,
  message: 'fence test',
  details: {},
  dedupeKey: key,
});

test('fence: once epoch N+1 is claimed, epoch N can neither halt, resume, raise an alert, write an audit row nor change an asset', async () => {
  await withLedger(async (url, setup) => {
    await withPool(url, { tag: 'test-owner', epoch: CURRENT_EPOCH }, async (sql) => {
      // Its own writes pass while the epoch is its own.
      const unhalted = await controlWriters(sql);
      const w = await controlWriters(sql);
      assert.equal(
        [await answerOf(w.halt.halt('owner halts')), await answerOf(w.alerts.raise(alert('a1'))), await answerOf(w.audit.record(AUDIT))],
        ['ok', 'ok', 'ok'],
        'the current epoch writes',
      );
      assert.equal(await w.admin.putAsset(ASSET), { kind: 'ok', created: true });
      await setup`UPDATE ledger_owner SET epoch = ${CURRENT_EPOCH + 1}`;
      const refused = {
        halt: await answerOf(unhalted.halt.halt('stale RAM says the funds differ')),
        resume: await answerOf(w.halt.resume()),
        alert: await answerOf(w.alerts.raise(alert('a2'))),
        audit: await answerOf(w.audit.record(AUDIT)),
        asset: await answerOf(w.admin.putAsset({ ...ASSET, status: 'SUSPENDED' })),
      };
      assert.equal(refused, { halt: 'LF001', resume: 'LF001', alert: 'LF001', audit: 'LF001', asset: 'LF001' });
    });
    // Nothing of the former epoch's writes landed: the halt is the one it wrote while it owned.
    assert.equal(await readHalt(setup).then((h) => h.state?.reason), 'owner halts');
    const [counts] = await setup<{ alerts: number; audits: number; status: string }[]>`
      SELECT (SELECT count(*)::int FROM alerts) AS alerts, (SELECT count(*)::int FROM admin_audit) AS audits,
             (SELECT status FROM assets WHERE symbol = 'FENCE') AS status`;
    assert.equal(counts, { alerts: 1, audits: 1, status: 'ACTIVE' });
  });
});

test('fence: an admin route whose write the fence refused answers 503 OWNER_LEASE_UNPROVEN, not a refusal nor SYSTEM_ERROR', async () => {
  await withLedger(async (url, setup) => {
    await withPool(url, { tag: 'test-old', epoch: CURRENT_EPOCH }, async (sql) => {
      const w = await controlWriters(sql);
      await setup`UPDATE ledger_owner SET epoch = ${CURRENT_EPOCH + 1}`;
      const admin = signJwt({ sub: 'ops', exp: Math.floor(Date.now() / 1000) + 600, role: 'admin' }, TEST_JWT_SECRET);
      const tokens = new TokenVerifier({ hs256Secret: TEST_JWT_SECRET, jwks: null, policy: { issuer: null, audience: null } });
      const apps = stubApps(tokens, { deps: { halt: w.halt, audit: w.audit, alerts: w.alerts } });
      const res = await apps.public.request('/admin/v1/halt', {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'stale' }),
      });
      const body = (await res.json()) as { code?: string; owner?: boolean };
      assert.equal([res.status, body.code, body.owner], [503, 'OWNER_LEASE_UNPROVEN', false]);
      assert.ok(
        apps.lines.some((l) => l.level === 'critical' && /superseded|no longer owns/.test(l.msg)),
        JSON.stringify(apps.lines.map((l) => l.msg)),
      );
    });
    assert.is((await readHalt(setup)).state, null, 'no halt stored');
  });
});

test('fence: a fenced Funding write is an unknown outcome (PENDING, retried), never FAILED', async () => {
  await withLedger(async (url, setup) => {
    await setup`INSERT INTO funding_balances (user_id, asset, available) VALUES (8, 'USDT', 100)`;
    const batch = { batchMax: 16 };
    const outcome = await withPool(url, { tag: 'test-old', epoch: CURRENT_EPOCH - 1 }, (sql) =>
      new FundingAdapter(sql, new TransferWrites(sql, batch), batch).withdraw({ reqId: ulid(), userId: 8n, asset: 'USDT', amount: 1n }),
    );
    assert.is(outcome.kind, 'PENDING', JSON.stringify(outcome));
    assert.not.ok(isConstraintRefusal({ code: 'LF001' }), 'LF001 is no constraint refusal');
    assert.is((await setup`SELECT available::text AS a FROM funding_balances WHERE user_id = 8`)[0]?.a, '100', 'nothing withdrawn');
  });
});

test.run();
