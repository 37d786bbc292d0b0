// Proves that a backup taken while transfers in both directions and deposits run restores into a fresh DATA_DIR and database on which the service starts, recovers every unfinished transfer and conserves every fund exactly, and that a restore over a non-empty target or a mismatched pair is refused.

import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { units } from '../support/funds.js';
import { seededRandom } from '../support/random.js';
import {
  PROJECT_ROOT,
  cleanupAll,
  pollUntil,
  sleep,
  useOneServerForThisFile,
  withHarness,
  type ChildService,
  type Harness,
} from '../support/process.js';

const USERS = 12;
const FIRST_USER = 301;
const ASSET = 'USDT';
const CLIENTS = 8;
const LOAD_BEFORE_MS = 1_500;
const LOAD_AFTER_MS = 700;
const MIN_ACCEPTED = 60;
const LOAD_CAP_MS = 60_000;
const CLI = path.join(PROJECT_ROOT, 'dist', 'src', 'backup-cli.js');

test.before(useOneServerForThisFile);
test.after(cleanupAll);

type CliResult = { readonly code: number | null; readonly out: string; readonly err: string };

/** `make backup` / `make restore` without make: the same command with the same variables. */
function cli(command: 'backup' | 'restore', env: Record<string, string>): Promise<CliResult> {
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [CLI, command], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
    proc.on('exit', (code) => resolve({ code, out, err }));
  });
}

async function seedUsers(h: Harness, svc: ChildService): Promise<void> {
  for (let u = FIRST_USER; u < FIRST_USER + USERS; u++) {
    for (const account of ['FUNDING', 'SPOT'] as const) {
      const r = await svc.call('POST', '/admin/v1/deposit', {
        token: h.adminToken(),
        body: { user_id: String(u), account, asset: ASSET, amount: '1000', ref: `seed-${account}-${u}` },
      });
      assert.is(r.status, 200, JSON.stringify(r.body));
    }
  }
}

/** CLIENTS loops of transfers both ways and SPOT/FUNDING deposits until `stop()` says so, counting answers by status. */
function runLoad(h: Harness, svc: ChildService, statuses: Map<number, number>, stop: () => boolean): Promise<void> {
  const loop = async (client: number): Promise<void> => {
    const random = seededRandom(7_000 + client);
    for (let i = 0; !stop(); i++) {
      const user = FIRST_USER + Math.floor(random() * USERS);
      const amount = `${1 + Math.floor(random() * 3)}.${Math.floor(random() * 100)}`;
      const roll = random();
      const reply =
        roll < 0.8
          ? svc.call('POST', '/api/v1/internal_transfer', {
              token: h.userToken(user),
              body: { from: roll < 0.42 ? 'FUNDING' : 'SPOT', to: roll < 0.42 ? 'SPOT' : 'FUNDING', asset: ASSET, amount },
            })
          : svc.call('POST', '/admin/v1/deposit', {
              token: h.adminToken(),
              body: { user_id: String(user), account: roll < 0.9 ? 'SPOT' : 'FUNDING', asset: ASSET, amount, ref: `load-${client}-${i}` },
            });
      const status = await reply.then(
        (r) => r.status,
        () => 0,
      );
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  return Promise.all(Array.from({ length: CLIENTS }, (_, c) => loop(c))).then(() => undefined);
}

/** Runs load, takes the backup in the middle of it with the documented command, and stops the service. */
async function backupUnderLoad(h: Harness, backupDir: string): Promise<{ answer: Record<string, unknown>; originalTransfers: number }> {
  const svc = await h.start();
  await seedUsers(h, svc);
  // The load stops once the backup is taken, LOAD_AFTER_MS has passed and MIN_ACCEPTED requests were accepted, or at
  // LOAD_CAP_MS whatever it reached: a loaded machine answers slower, and the test needs the amount of load, not its rate.
  let stopped = false;
  const started = Date.now();
  const statuses = new Map<number, number>();
  const accepted = () => (statuses.get(200) ?? 0) + (statuses.get(202) ?? 0);
  const load = runLoad(h, svc, statuses, () => (stopped && accepted() >= MIN_ACCEPTED) || Date.now() - started > LOAD_CAP_MS);
  await sleep(LOAD_BEFORE_MS);
  const taken = await cli('backup', { BACKUP_DIR: backupDir, SERVICE_URL: svc.base, ADMIN_TOKEN: h.adminToken() });
  await sleep(LOAD_AFTER_MS);
  stopped = true;
  await load;
  assert.is(taken.code, 0, `backup: ${taken.out} ${taken.err}`);
  assert.ok(accepted() >= MIN_ACCEPTED, `the load ran: ${JSON.stringify([...statuses])}`);
  await svc.stop();
  const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb`;
  return { answer: JSON.parse(taken.out) as Record<string, unknown>, originalTransfers: row?.n ?? 0 };
}

/** Per user, each side on its own: the external movements plus the committed transfers. */
async function assertBalances(h: Harness, svc: ChildService): Promise<void> {
  const expected = await h.sql<{ user_id: bigint; funding: bigint; spot: bigint }[]>`
    WITH moves AS (
      SELECT user_id, account, CASE kind WHEN 'DEPOSIT' THEN amount ELSE -amount END AS delta FROM external_movements WHERE state = 'DONE' AND asset = ${ASSET}
      UNION ALL SELECT user_id, CASE source_type WHEN 1 THEN 'FUNDING' ELSE 'SPOT' END, -amount FROM transfers_tb WHERE state = 40 AND asset = ${ASSET}
      UNION ALL SELECT user_id, CASE target_type WHEN 1 THEN 'FUNDING' ELSE 'SPOT' END, amount FROM transfers_tb WHERE state = 40 AND asset = ${ASSET})
    SELECT user_id, COALESCE(sum(delta) FILTER (WHERE account = 'FUNDING'), 0)::bigint AS funding, COALESCE(sum(delta) FILTER (WHERE account = 'SPOT'), 0)::bigint AS spot
    FROM moves GROUP BY user_id ORDER BY user_id`;
  assert.is(expected.length, USERS);
  for (const e of expected) {
    const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(e.user_id) });
    const pick = (list: unknown) =>
      units((list as { asset: string; available: string }[]).find((b) => b.asset === ASSET)?.available ?? '0');
    assert.equal(
      { user: e.user_id, funding: pick(r.body.funding), spot: pick(r.body.spot) },
      { user: e.user_id, funding: e.funding, spot: e.spot },
      'each side equals its movements and committed transfers',
    );
  }
}

async function assertRestoredConserves(h2: Harness): Promise<void> {
  const svc = await h2.start();
  await pollUntil(
    async () => {
      const [row] = await h2.sql<{ active: number; pending: number }[]>`
        SELECT (SELECT count(*) FROM transfers_active)::int AS active, (SELECT count(*) FROM external_movements WHERE state = 'PENDING')::int AS pending`;
      return row?.active === 0 && row.pending === 0 ? true : undefined;
    },
    { timeoutMs: 30_000, describe: () => 'every transfer and movement of the restored pair final' },
  );
  const [open] = await h2.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN (40, -10, -30)`;
  assert.is(open?.n, 0, 'every transfer terminal');
  const inv = await svc.call('GET', '/admin/v1/invariant', { token: h2.adminToken() });
  assert.is(inv.status, 200, JSON.stringify(inv.body));
  assert.equal([inv.body.ok, inv.body.differences], [true, []], `conservation on the restored pair: ${JSON.stringify(inv.body)}`);
  await assertBalances(h2, svc);
  await svc.stop();
}

test('a backup under load restores into a fresh pair that starts, recovers and conserves every fund; non-empty targets and a mismatched pair are refused', async () => {
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-backup-'));
  try {
    const backupDir = path.join(scratch, 'backup');
    await withHarness(async (h) => {
      const { answer, originalTransfers } = await backupUnderLoad(h, backupDir);
      const inFlight = (answer.tables as Record<string, number>).transfers_active;
      console.log(
        `backup: wal_seq ${String(answer.wal_seq)}, pause ${String(answer.pause_ms)} ms, ${inFlight} transfers unfinished at the cut, ${originalTransfers} in the original at the end`,
      );
      await withHarness(async (h2) => {
        const restored = await cli('restore', { BACKUP_DIR: backupDir, DATA_DIR: h2.dataDir, DATABASE_URL: h2.databaseUrl });
        assert.is(restored.code, 0, `restore: ${restored.out} ${restored.err}`);
        assert.is(
          (JSON.parse(restored.out) as { ledger_id: string }).ledger_id,
          answer.ledger_id,
          'the restored pair carries the ledger id of the backup',
        );
        await withHarness(async (h3) => {
          // The restored WAL against another (empty) database: the ledger identity check refuses it.
          const mismatched = await h3.startToDie({ DATA_DIR: h2.dataDir });
          assert.is((await mismatched.waitForExit()).code, 3, mismatched.stderrTail());
          assert.match(mismatched.stderrTail(), /refused to start: .*WAL of ledger/);
          await assertRestoredConserves(h2);
          const [{ n } = { n: 0 }] = await h2.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb`;
          assert.ok(n < originalTransfers, `the load went on after the cut (${n} restored, ${originalTransfers} in the original)`);
          const again = await cli('restore', { BACKUP_DIR: backupDir, DATA_DIR: h2.dataDir, DATABASE_URL: h2.databaseUrl });
          assert.equal([again.code, /DATA_DIR .* is not empty/.test(again.err)], [3, true], again.err);
          // h3's database was migrated by the refused start: not empty, so refused, and nothing written.
          const intoUsed = await cli('restore', { BACKUP_DIR: backupDir, DATA_DIR: h3.dataDir, DATABASE_URL: h3.databaseUrl });
          assert.equal([intoUsed.code, /target database holds \d+ tables/.test(intoUsed.err)], [3, true], intoUsed.err);
          assert.equal(await fs.readdir(h3.dataDir), [], 'a refused restore writes nothing');
        });
      });
    });
  } finally {
    await fs.rm(scratch, { recursive: true, force: true });
  }
});

test('a restore from a directory that is not a complete backup is refused', async () => {
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-backup-'));
  try {
    const result = await cli('restore', {
      BACKUP_DIR: scratch,
      DATA_DIR: path.join(scratch, 'data'),
      DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none',
    });
    assert.equal([result.code, /holds no manifest.json/.test(result.err)], [3, true], result.err);
  } finally {
    await fs.rm(scratch, { recursive: true, force: true });
  }
});

test.run();
