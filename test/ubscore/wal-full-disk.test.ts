// Proves that a full disk under UBSCore's WAL loses nothing: while a small tmpfs holding DATA_DIR/ubscore is full, no transfer is answered COMMITTED, transfers stay pending (never FAILED, never refunded), /readyz answers 503 and a CRITICAL alert is raised, the service never exits; once space returns every transfer completes exactly once, funds are exact, and they survive a restart.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCOUNT_TYPE } from '../../src/db/transfer-writes.js';
import { units } from '../support/funds.js';
import { cleanupAll, pollUntil, sleep, useOneServerForThisFile, withHarness, type ChildService, type Harness } from '../support/process.js';

const USERS = [801, 802, 803, 804] as const;
const ASSET = 'USDT';
const SEED = '1000';
const TMPFS_SIZE = '8m';
/** UBSCore's free-space reserve in the test (UBS_DISK_RESERVE_MB), within the small tmpfs. */
const RESERVE_MB = 1;
/** Room left beside the filler above the reserve: a few batches' worth, so it runs out under load within seconds. */
const ROOM_LEFT_BYTES = RESERVE_MB * 1024 * 1024 + 48 * 1024;
/** Clients sending transfers at once: a bounded load. */
const CLIENTS = 8;
/** The most transfers the load may send before the disk must have filled. */
const TRANSFERS_TO_FILL_MAX = 4_000;
/** How long transfers go on while the disk is known to be full. */
const WHILE_FULL_MS = 2_500;
const SERVICE_ENV = {
  RETRY_BASE_MS: '50',
  RETRY_CAP_MS: '500',
  HAPPY_PATH_DEADLINE_MS: '3000',
  INVARIANT_INTERVAL_MS: '0',
  UBS_DISK_RESERVE_MB: String(RESERVE_MB),
};

type Answer = {
  readonly status: number;
  readonly reqId: string | null;
  readonly state: string | null;
  readonly sentAt: number;
  readonly answeredAt: number;
};

test.before(useOneServerForThisFile);
test.after(cleanupAll);

/** Mounts a tmpfs at `dir`; null when this machine cannot (not root, no mount): the test then skips. */
function mountTmpfs(dir: string): string | null {
  if (process.getuid?.() !== 0) return 'not running as root';
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE}`, 'tmpfs', dir], { stdio: 'pipe' });
    return null;
  } catch (error) {
    return `mount -t tmpfs failed: ${String((error as { stderr?: unknown }).stderr ?? error)}`;
  }
}

function unmount(dir: string): void {
  try {
    execFileSync('umount', [dir], { stdio: 'pipe' });
  } catch {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  }
}

/** Fills the tmpfs with one file, leaving about `leftBytes` free. */
async function fill(dir: string, filler: string, leftBytes: number): Promise<void> {
  const stats = await fs.statfs(dir);
  const free = Number(stats.bavail) * Number(stats.bsize);
  await fs.writeFile(filler, Buffer.alloc(Math.max(0, free - leftBytes)));
}

async function readyz(svc: ChildService): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await svc.call('GET', '/readyz', { timeoutMs: 5_000 });
  return { status: r.status, body: r.body };
}

/** The UBSCORE_WAL_UNWRITABLE alerts, from GET /admin/v1/alerts. */
async function walAlerts(h: Harness, svc: ChildService): Promise<{ kind: string; severity: string }[]> {
  const r = await svc.call('GET', '/admin/v1/alerts?limit=100', { token: h.adminToken() });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return (r.body.alerts as { kind: string; severity: string }[]).filter((a) => a.kind === 'UBSCORE_WAL_UNWRITABLE');
}

/** Sends transfers from CLIENTS clients, alternating directions, until `until()` says stop. */
async function load(h: Harness, svc: ChildService, answers: Answer[], until: () => boolean): Promise<void> {
  let n = 0;
  const client = async (k: number): Promise<void> => {
    while (!until()) {
      const user = USERS[(n + k) % USERS.length] as number;
      const from = n++ % 2 === 0 ? 'FUNDING' : 'SPOT';
      const sentAt = Date.now();
      // Unequal amounts, so a lost deposit and a lost withdrawal cannot cancel out in the balances.
      const body = { from, to: from === 'FUNDING' ? 'SPOT' : 'FUNDING', asset: ASSET, amount: from === 'FUNDING' ? '0.01' : '0.007' };
      const r = await svc.call('POST', '/api/v1/internal_transfer', { token: h.userToken(user), body, timeoutMs: 15_000 });
      const reqId = typeof r.body.req_id === 'string' ? r.body.req_id : null;
      answers.push({
        status: r.status,
        reqId,
        state: typeof r.body.state === 'string' ? r.body.state : null,
        sentAt,
        answeredAt: Date.now(),
      });
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, k) => client(k)));
}

async function balancesOf(h: Harness, svc: ChildService, user: number): Promise<{ funding: bigint; spot: bigint }> {
  const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(user) });
  assert.is(r.status, 200, JSON.stringify(r.body));
  const pick = (list: unknown): bigint =>
    units((list as { asset: string; available: string }[]).find((b) => b.asset === ASSET)?.available ?? '0');
  return { funding: pick(r.body.funding), spot: pick(r.body.spot) };
}

/** Each user's balances as PostgreSQL's COMMITTED transfers say they must be. */
async function expectedBalances(h: Harness, user: number): Promise<{ funding: bigint; spot: bigint }> {
  const rows = await h.sql<{ source_type: number; total: bigint }[]>`
    SELECT source_type, coalesce(sum(amount), 0)::bigint AS total
    FROM transfers_tb WHERE user_id = ${user} AND state = 40 GROUP BY source_type`;
  let toSpot = 0n;
  let toFunding = 0n;
  for (const row of rows) {
    if (Number(row.source_type) === ACCOUNT_TYPE.FUNDING) toSpot += BigInt(row.total);
    else toFunding += BigInt(row.total);
  }
  const seed = units(SEED);
  return { funding: seed - toSpot + toFunding, spot: seed + toSpot - toFunding };
}

async function checkFundsExact(h: Harness, svc: ChildService, label: string): Promise<Map<number, { funding: bigint; spot: bigint }>> {
  const seen = new Map<number, { funding: bigint; spot: bigint }>();
  for (const user of USERS) {
    const actual = await balancesOf(h, svc, user);
    const expected = await expectedBalances(h, user);
    assert.equal(actual, expected, `${label}: user ${user}'s balances match its COMMITTED transfers`);
    seen.set(user, actual);
  }
  const invariant = await svc.call('GET', '/admin/v1/invariant', { token: h.adminToken(), timeoutMs: 30_000 });
  assert.is(invariant.status, 200, JSON.stringify(invariant.body));
  assert.is(invariant.body.ok, true, `${label}: conservation holds: ${JSON.stringify(invariant.body)}`);
  return seen;
}

async function seed(h: Harness, svc: ChildService): Promise<void> {
  for (const user of USERS) {
    for (const account of ['FUNDING', 'SPOT'] as const) {
      const body = { user_id: String(user), account, asset: ASSET, amount: SEED, ref: `full-disk-seed-${user}-${account}` };
      const r = await svc.call('POST', '/admin/v1/deposit', { token: h.adminToken(), body });
      assert.is(r.status, 200, JSON.stringify(r.body));
    }
  }
}

async function fullDiskScenario(h: Harness, ubsDir: string, started: ChildService[]): Promise<void> {
  const svc = await h.start(SERVICE_ENV);
  started.push(svc);
  await seed(h, svc);
  const filler = path.join(ubsDir, 'filler');
  await fill(ubsDir, filler, ROOM_LEFT_BYTES);

  // Load until the WAL alert is raised, then on for a while with the disk still full. The alert
  // is read from PostgreSQL, so that every command UBSCore gets meanwhile is a transfer's: the
  // batch whose write fails then always holds some, and answering one of them as applied would
  // show as a COMMITTED transfer whose spot change is lost.
  const answers: Answer[] = [];
  let degradedAt: number | null = null;
  let fullUntil: number | null = null;
  const watcher = (async () => {
    while (degradedAt === null && answers.length < TRANSFERS_TO_FILL_MAX) {
      if ((await walAlerts(h, svc)).length > 0) degradedAt = Date.now();
      else await sleep(50);
    }
  })();
  const stopLoad = () =>
    answers.length >= TRANSFERS_TO_FILL_MAX * 2 ||
    (degradedAt !== null && Date.now() - degradedAt > WHILE_FULL_MS) ||
    (degradedAt === null && answers.length >= TRANSFERS_TO_FILL_MAX);
  await Promise.all([load(h, svc, answers, stopLoad), watcher]);
  assert.ok(degradedAt !== null, `the WAL filled the tmpfs within ${answers.length} transfers (a WAL alert was raised)`);
  const whileFull = await readyz(svc);
  assert.is(whileFull.status, 503, 'readyz still 503 while the disk is full');
  assert.equal([whileFull.body.wal_writable, whileFull.body.ubscore], [false, false], JSON.stringify(whileFull.body));
  fullUntil = Date.now();
  const count = (status: number) => answers.filter((a) => a.status === status).length;
  console.log(
    `wal-full-disk: ${answers.length} transfers answered (${count(200)} x 200, ${count(202)} x 202), full after ${answers.filter((a) => a.sentAt < (degradedAt as number)).length}`,
  );

  // While full: no COMMITTED answer for a transfer sent once the WAL was known unwritable; the
  // transfers wait (202), none is FAILED or refunded.
  const sentWhileFull = answers.filter((a) => a.sentAt >= (degradedAt as number) && a.answeredAt <= (fullUntil as number));
  assert.ok(sentWhileFull.length > 0, 'transfers were sent while the disk was full');
  for (const a of sentWhileFull) assert.equal([a.status, a.state], [202, 'PENDING'], `answered while full: ${JSON.stringify(a)}`);
  for (const a of answers) assert.ok(a.status === 200 || a.status === 202, `every transfer was accepted: ${JSON.stringify(a)}`);
  const failed = await h.sql`SELECT req_id, state FROM transfers_tb WHERE state < 0`;
  assert.is(failed.length, 0, `nothing FAILED or rolled back while full: ${JSON.stringify(failed)}`);
  const raised = await walAlerts(h, svc);
  assert.ok(raised.length >= 1 && raised.every((a) => a.severity === 'CRITICAL'), `a CRITICAL alert: ${JSON.stringify(raised)}`);
  assert.is(svc.exited(), null, 'the service never exits while the disk is full');

  // Space returns: readiness, every transfer terminal and COMMITTED, funds exact.
  await fs.rm(filler);
  await pollUntil(async () => ((await readyz(svc)).status === 200 ? true : undefined), {
    timeoutMs: 20_000,
    describe: () => 'readyz 200 once space returned',
  });
  await pollUntil(async () => ((await h.sql`SELECT count(*)::int AS n FROM transfers_active`)[0]?.n === 0 ? true : undefined), {
    timeoutMs: 60_000,
    describe: () => 'every transfer terminal',
  });
  const states = await h.sql<{ state: number; n: number }[]>`SELECT state, count(*)::int AS n FROM transfers_tb GROUP BY state`;
  assert.equal(
    states.map((s) => Number(s.state)),
    [40],
    `every transfer COMMITTED: ${JSON.stringify(states)}`,
  );
  const committedAnswers = answers.filter((a) => a.status === 200);
  const committedIds = new Set((await h.sql<{ req_id: string }[]>`SELECT req_id FROM transfers_tb WHERE state = 40`).map((r) => r.req_id));
  for (const a of committedAnswers)
    assert.ok(a.reqId !== null && committedIds.has(a.reqId), `a COMMITTED answer is still COMMITTED: ${JSON.stringify(a)}`);
  const before = await checkFundsExact(h, svc, 'after space returned');
  assert.is(svc.exited(), null, 'the service never exited');

  // Durability: a restart on the same directories finds the same balances.
  const next = await h.restart(svc, SERVICE_ENV);
  started.push(next);
  const after = await checkFundsExact(h, next, 'after a restart');
  assert.equal([...after.entries()], [...before.entries()], 'the balances survive a restart');
  const metrics = await fetch(`${next.base}/metrics`).then((r) => r.text());
  // The WAL database itself may be empty by now: the stop wrote a snapshot over its 1,000-odd
  // records, and the restarted core prunes the records it covers in the background.
  assert.match(metrics, /^transfer_ubscore_lmdb_bytes\{db="wal",thread="ubscore"\} \d/m, "GET /metrics reports the WAL's bytes on disk");
  assert.match(metrics, /^transfer_ubscore_lmdb_file_bytes\{thread="ubscore"\} [1-9]/m, "and the data file's");
  assert.match(metrics, /^transfer_ubscore_disk_free_bytes\{thread="ubscore"\} [1-9]/m, 'and the space left under it');
  await next.stop();
}

test('a full disk under the WAL: pending while full, 503 and a CRITICAL alert, then every transfer completes exactly once and survives a restart', async () => {
  await withHarness(async (h) => {
    const ubsDir = path.join(h.dataDir, 'ubscore');
    await fs.mkdir(ubsDir, { recursive: true });
    const skipped = mountTmpfs(ubsDir);
    if (skipped !== null) {
      console.log(`SKIPPED wal-full-disk: ${skipped}`);
      return;
    }
    const started: ChildService[] = [];
    try {
      await fullDiskScenario(h, ubsDir, started);
    } catch (error) {
      for (const svc of started) console.log(`service ${svc.pid} (exit ${JSON.stringify(svc.exited())}) stderr tail:\n${svc.stderrTail()}`);
      throw error;
    } finally {
      // Nothing may hold the mount when it goes; the harness then removes the data dir.
      for (const svc of started) if (svc.exited() === null) await svc.stop();
      unmount(ubsDir);
    }
  });
});

test.run();
