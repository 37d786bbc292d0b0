// Proves the main thread's side of the processed set's retention on a real PostgreSQL: the plan's horizon comes from the seq clock (nothing before the retention has passed, the last seq durable a retention ago after), KEEP holds every unfinished transfer and PENDING movement and nothing final; the owner's pass ticks and trims the clock, hands UBSCore the plan and deletes from spot_processed only what is at or below the horizon and not kept; a standby's pass prunes and writes nothing; a retention plan never runs beside a conservation check; and the check asks UBSCore about unsettled SPOT movements only, so a pruned key of a settled one never matters.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { migrate } from '../../src/db/migrations.js';
import { seedDemoAssets } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { runConservationCheck } from '../../src/invariant/checker.js';
import { createLogger } from '../../src/log.js';
import { Registry } from '../../src/metrics/registry.js';
import { PlanGate } from '../../src/ubscore/processed/retention-gate.js';
import { planRetention } from '../../src/ubscore/processed/retention-plan.js';
import { RetentionTask } from '../../src/ubscore/processed/retention-task.js';
import type { UbsControlApi, UbsPruneOutcome, UbsStats } from '../../src/ubscore/control.js';
import type { UbsCommand, UbsResult } from '../../src/domain/spot-commands.js';
import type { UbsOpName } from '../../src/domain/spot-commands.js';
import { processedKeyOf } from '../../wal/processed-key.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { cleanupAll, useOneServerForThisFile } from '../support/process.js';

const EPOCH = 3;
const RETENTION_S = 100;
const log = createLogger({ level: 'error', name: 'test-retention' });

let db: TestDatabase;
/** Unfenced: the test's own writes. */
let setup: Sql;
/** The owner's main pool, fenced by the current epoch. */
let owner: Sql;
/** A standby's connection: the fence refuses it every write. */
let standby: Sql;

test.before(async () => {
  await useOneServerForThisFile();
  db = await createTestDatabase();
  setup = openSql(db.url, { max: 1, application: 'test-setup' });
  await migrate(setup);
  await seedDemoAssets(setup);
  await setup`UPDATE ledger_owner SET epoch = ${EPOCH}`;
  owner = openSql(db.url, { max: 2, application: 'main', owner: { tag: 'test-owner', epoch: EPOCH } });
  standby = openSql(db.url, { max: 1, application: 'standby retention', owner: { tag: 'test-standby', epoch: 'standby' } });
});
test.after(async () => {
  await standby?.end({ timeout: 5 });
  await owner?.end({ timeout: 5 });
  await setup?.end({ timeout: 5 });
  await db?.drop();
  await cleanupAll();
});

async function clean(): Promise<void> {
  await setup`DELETE FROM spot_seq_clock`;
  await setup`DELETE FROM spot_processed`;
  await setup`DELETE FROM transfers_active`;
  await setup`DELETE FROM transfers_tb`;
  await setup`DELETE FROM external_movements`;
}

/** A clock row `agoS` seconds old. */
async function clockRow(agoS: number, seq: number): Promise<void> {
  await setup`INSERT INTO spot_seq_clock (at, seq) VALUES (now() - make_interval(secs => ${agoS}), ${seq})`;
}

let reqCounter = 0;
/** A ULID-shaped req_id, distinct per call. */
function reqId(): string {
  reqCounter++;
  return `01J${String(reqCounter).padStart(23, '0')}`;
}

/** A transfer in `state` (30 TARGET_PENDING, 40 COMMITTED, -10 FAILED); unfinished ones are in transfers_active, as the writes keep them. */
async function transferIn(state: number): Promise<string> {
  const id = reqId();
  await setup`
    INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state)
    VALUES (${id}, 1, 'USDT', 10, 1, 1, 2, ${state})`;
  if (![40, -10, -30].includes(state)) await setup`INSERT INTO transfers_active (req_id, user_id) VALUES (${id}, 1)`;
  return id;
}

async function movement(ref: string, state: string, opts: { amount?: number; updatedAgoS?: number } = {}): Promise<void> {
  await setup`
    INSERT INTO external_movements (ref, kind, user_id, account, asset, amount, state, updated_at)
    VALUES (${ref}, 'DEPOSIT', 1, 'SPOT', 'USDT', ${opts.amount ?? 10}, ${state}, now() - make_interval(secs => ${opts.updatedAgoS ?? 0}))`;
}

/** A processed-set entry in spot_processed, as the archive writes it. */
async function processedRow(op: UbsOpName, key: string, seq: number): Promise<void> {
  const bytes = processedKeyOf(`${op}:${key}`);
  if (bytes === null) throw new Error(`not a processed key: ${op}:${key}`);
  await setup`INSERT INTO spot_processed (key, record, seq) VALUES (${bytes}, ${Buffer.from([seq])}, ${seq})`;
}

async function processedLeft(): Promise<string[]> {
  const rows = await setup<{ name: string }[]>`
    SELECT get_byte(key, 0)::text || ':' || convert_from(substring(key FROM 2), 'UTF8') || '@' || seq AS name FROM spot_processed ORDER BY seq, key`;
  return rows.map((r) => r.name);
}

/** UBSCore's control as the retention uses it: a durable seq, and every plan it was handed. */
function fakeUbs(walSeq: number, outcome: UbsPruneOutcome) {
  const plans: { throughSeq: number; keep: readonly string[] }[] = [];
  const ubs: Pick<UbsControlApi, 'stats' | 'prune'> = {
    stats: async () => ({ accounts: 0, walSeq, batches: 0, commands: 0 }) satisfies UbsStats,
    prune: async (plan) => {
      plans.push(plan);
      return outcome;
    },
  };
  return { ubs, plans };
}

const PRUNED: UbsPruneOutcome = { kind: 'pruned', scanned: 9, pruned: 5, liveEntries: 4, oldestLiveSeq: 15, ms: 1 };

async function gauge(registry: Registry, name: string): Promise<number | undefined> {
  const family = (await registry.json()).find((f) => f.name === name);
  return family?.values[0]?.value;
}

test('plan: the horizon is 0 before a retention has passed, then the last seq durable a retention ago', async () => {
  await clean();
  assert.is((await planRetention(owner, RETENTION_S)).throughSeq, 0, 'no clock at all');
  await clockRow(30, 30);
  assert.is((await planRetention(owner, RETENTION_S)).throughSeq, 0, 'the clock is younger than the retention');
  await clockRow(250, 10);
  await clockRow(150, 20);
  assert.is((await planRetention(owner, RETENTION_S)).throughSeq, 20);
  assert.is((await planRetention(owner, 200)).throughSeq, 10);
  assert.is((await planRetention(standby, 300)).throughSeq, 0, 'a standby plans on its read-only connection too');
});

test('plan: KEEP holds every unfinished transfer and PENDING movement, and nothing final', async () => {
  await clean();
  const unfinished = [await transferIn(0), await transferIn(30), await transferIn(-20)];
  const final = [await transferIn(40), await transferIn(-10), await transferIn(-30)];
  await movement('pend-1', 'PENDING');
  await movement('done-1', 'DONE');
  await movement('rej-1', 'REJECTED');
  const plan = await planRetention(owner, RETENTION_S);
  assert.equal([...plan.keep].sort(), [...unfinished, 'pend-1'].sort());
  for (const gone of [...final, 'done-1', 'rej-1']) assert.not.ok(plan.keep.includes(gone), `${gone} is final: not kept`);
});

test("owner's pass: ticks and trims the clock, hands UBSCore the plan, deletes only spot_processed rows at or below the horizon and not kept", async () => {
  await clean();
  await clockRow(3 * RETENTION_S, 5); // older than twice the retention: trimmed
  await clockRow(150, 10);
  await clockRow(120, 20); // H = 20
  const kept = await transferIn(30);
  const final = await transferIn(40);
  await movement('pend-2', 'PENDING');
  await processedRow('WITHDRAW', final, 11);
  await processedRow('WITHDRAW', kept, 12);
  await processedRow('EXTERNAL_DEPOSIT', 'pend-2', 13);
  await processedRow('EXTERNAL_DEPOSIT', 'done-2', 14);
  await processedRow('DEPOSIT', final, 20);
  await processedRow('DEPOSIT', kept, 21);
  await processedRow('REFUND', final, 22);
  const { ubs, plans } = fakeUbs(42, PRUNED);
  const registry = new Registry();
  const task = new RetentionTask({ sql: owner, ubs, role: 'owner', retentionS: RETENTION_S, log, registry, pageRows: 2 });
  const pass = await task.pass();
  assert.is(pass.plan.throughSeq, 20);
  assert.equal(plans, [{ throughSeq: 20, keep: [kept, 'pend-2'] }]);
  assert.is(pass.rowsDeleted, 3);
  assert.equal(await processedLeft(), [`1:${kept}@12`, '4:pend-2@13', `2:${kept}@21`, `3:${final}@22`]);
  const clock = await setup<{ seq: bigint; young: boolean }[]>`
    SELECT seq, at > now() - interval '10 seconds' AS young FROM spot_seq_clock ORDER BY at`;
  assert.equal(
    clock.map((r) => [Number(r.seq), r.young]),
    [
      [10, false],
      [20, false],
      [42, true],
    ],
    "the row older than twice the retention went; UBSCore's durable seq was ticked",
  );
  assert.is(await gauge(registry, 'transfer_processed_retention_horizon_seq'), 20);
  const age = (await gauge(registry, 'transfer_processed_oldest_age_seconds')) ?? 0;
  assert.ok(age >= 149 && age < 160, `the oldest live seq 15 dates from the clock row of seq 10, 150 s ago: got ${age}`);
  await task.stop();
});

test("a standby's pass: plans from the owner's clock and prunes its own UBSCore, and writes nothing", async () => {
  await clean();
  await clockRow(150, 20);
  const final = await transferIn(40);
  await processedRow('WITHDRAW', final, 11);
  const { ubs, plans } = fakeUbs(42, PRUNED);
  const task = new RetentionTask({ sql: standby, ubs, role: 'standby', retentionS: RETENTION_S, log, registry: new Registry() });
  const pass = await task.pass();
  assert.is(pass.plan.throughSeq, 20);
  assert.equal(plans, [{ throughSeq: 20, keep: [] }]);
  assert.is(pass.rowsDeleted, 0);
  assert.equal(await processedLeft(), [`1:${final}@11`]);
  assert.equal(
    (await setup<{ seq: bigint }[]>`SELECT seq FROM spot_seq_clock`).map((r) => Number(r.seq)),
    [20],
  );
  await task.stop();
});

test('no horizon yet (nothing a retention old): UBSCore is not asked to walk its processed set, nothing is deleted', async () => {
  await clean();
  await clockRow(10, 20); // younger than the retention
  const final = await transferIn(40);
  await processedRow('WITHDRAW', final, 11);
  const { ubs, plans } = fakeUbs(42, PRUNED);
  const task = new RetentionTask({ sql: owner, ubs, role: 'owner', retentionS: RETENTION_S, log, registry: new Registry() });
  const pass = await task.pass();
  assert.is(pass.plan.throughSeq, 0);
  assert.equal(plans, [], 'no prune asked of UBSCore');
  assert.is(pass.rowsDeleted, 0);
  assert.equal(await processedLeft(), [`1:${final}@11`]);
  await task.stop();
});

test('the gate: a retention plan waits for a conservation check in flight, and the next check for the plan', async () => {
  const gate = new PlanGate();
  const order: string[] = [];
  let endCheck = (): void => undefined;
  const check = gate.run(
    () =>
      new Promise<void>((resolve) => {
        order.push('check begins');
        endCheck = () => {
          order.push('check ends');
          resolve();
        };
      }),
  );
  const plan = gate.run(async () => {
    order.push('plan');
  });
  const next = gate.run(async () => {
    order.push('next check');
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(order, ['check begins'], 'the plan waits');
  endCheck();
  await Promise.all([check, plan, next]);
  assert.equal(order, ['check begins', 'check ends', 'plan', 'next check']);
});

test('conservation: UBSCore is asked about unsettled SPOT movements only, so a pruned key of a settled one never matters', async () => {
  await clean();
  await movement('settled-1', 'DONE', { amount: 10, updatedAgoS: 3600 });
  await movement('pending-1', 'PENDING', { amount: 5 });
  await movement('recent-1', 'DONE', { amount: 3, updatedAgoS: -3600 }); // written after the check's clock
  const asked: string[] = [];
  const ubs = async (command: UbsCommand): Promise<UbsResult | null> => {
    if (command.kind === 'audit_cut') return { kind: 'audit_cut', seq: 100, accounts: [{ userId: 1n, asset: 'USDT', available: 18n }] };
    if (command.kind === 'op_seqs') {
      asked.push(...command.keys.map((k) => `${k.op}:${k.key}`));
      // The settled movement's key was pruned: UBSCore no longer knows it.
      return { kind: 'op_seqs', seqs: command.keys.map((k) => (k.key === 'settled-1' ? null : 7)) };
    }
    throw new Error(`unexpected command ${command.kind}`);
  };
  const report = await runConservationCheck(setup, ubs);
  assert.equal(asked.sort(), ['EXTERNAL_DEPOSIT:pending-1', 'EXTERNAL_DEPOSIT:recent-1']);
  assert.equal(report.differences, []);
});

test.run();
