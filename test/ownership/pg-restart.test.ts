// Proves that the service survives its PostgreSQL server being killed with SIGKILL under load: it does not exit, /readyz answers 503 while the server is away and 200 once it is back (the embedded server restarted by the service itself, a DATABASE_URL server reconnected to once it runs again), every transfer ends final with each user's funds exact and the conservation check ok, and a service that finds its owner lock taken by another process when the server returns exits non-zero naming the holder.
// test-runner: own-postgres

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { units } from '../support/funds.js';
import { openSql } from '../../src/db/sql.js';
import { OWNER_CLAIM_HEARTBEAT_MS } from '../../src/limits.js';
import { OWNER_LOCK_KEY } from '../../src/ownership/pg-owner.js';
import { cleanupAll, pollUntil, sleep, useOneServerForThisFile, withHarness, type ChildService, type Harness } from '../support/process.js';

const ASSET = 'USDT';
const USERS = [11, 12, 13, 14, 15, 16];
const DEPOSIT = '1000';
/** Concurrent clients, and the transfers each sends at most: the load is bounded. */
const CLIENTS = 6;
const TRANSFERS_PER_CLIENT_MAX = 120;
/** Committed transfers before the server is killed, so it dies with work in flight. */
const COMMITTED_BEFORE_KILL = 30;
const RECOVERY_TIMEOUT_MS = 60_000;

/** Short retries, so the test does not wait out the production backoff once the server is back. */
const SERVICE_ENV: Readonly<Record<string, string>> = {
  RETRY_BASE_MS: '50',
  RETRY_CAP_MS: '1000',
  PG_RECOVERY_BACKOFF_CAP_MS: '1000',
  SCAN_INTERVAL_MS: '1000',
  STALE_THRESHOLD_MS: '2000',
  PG_POOL_MAX: '4',
  INVARIANT_INTERVAL_MS: '0',
};

test.before(useOneServerForThisFile);
test.after(cleanupAll);

type Answer = { readonly status: number; readonly body: Record<string, unknown> };

/** Each user gets DEPOSIT on both sides: what FUNDING + SPOT must hold at the end. */
async function seed(h: Harness, svc: ChildService): Promise<void> {
  for (const user of USERS) {
    for (const account of ['FUNDING', 'SPOT'] as const) {
      const r = await svc.call('POST', '/admin/v1/deposit', {
        token: h.adminToken(),
        body: { user_id: String(user), account, asset: ASSET, amount: DEPOSIT, ref: `seed-${account}-${user}` },
      });
      assert.is(r.status, 200, JSON.stringify(r.body));
    }
  }
}

/** CLIENTS loops of transfers in both directions until `stop()` or their bound; every answer kept. */
function load(h: Harness, svc: ChildService) {
  let stopped = false;
  const answers: Answer[] = [];
  const client = async (c: number): Promise<void> => {
    for (let i = 0; i < TRANSFERS_PER_CLIENT_MAX && !stopped; i++) {
      const user = USERS[(c + i) % USERS.length] as number;
      const [from, to] = i % 2 === 0 ? ['FUNDING', 'SPOT'] : ['SPOT', 'FUNDING'];
      const answer = await svc
        .call('POST', '/api/v1/internal_transfer', {
          token: h.userToken(user),
          body: { from, to, asset: ASSET, amount: '1' },
          timeoutMs: 30_000,
        })
        .catch((error: unknown): Answer => ({ status: 0, body: { error: String(error) } }));
      answers.push(answer);
      // A client turned away waits a little before its next request, as a real one would.
      if (answer.status === 503 || answer.status >= 500 || answer.status === 0) await sleep(100);
    }
  };
  const done = Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
  return { answers, stop: () => (stopped = true), done };
}

async function committedCount(h: Harness): Promise<number> {
  const [row] = await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_tb WHERE state = 40`;
  return row?.n ?? 0;
}

async function killPostmaster(h: Harness): Promise<number> {
  const pid = await h.pg?.postmasterPid();
  assert.ok(pid !== undefined && pid !== null, 'a postmaster runs');
  process.kill(pid, 'SIGKILL');
  return pid;
}

/** Polls /readyz until `status`, answering the body seen then. */
async function readyzUntil(svc: ChildService, status: number, timeoutMs: number): Promise<Record<string, unknown>> {
  let last: Answer | null = null;
  return pollUntil(
    async () => {
      last = await svc
        .call('GET', '/readyz', { timeoutMs: 5_000 })
        .catch((error: unknown) => ({ status: 0, body: { error: String(error) } }));
      return last.status === status ? last.body : undefined;
    },
    {
      timeoutMs,
      intervalMs: 25,
      describe: () =>
        `GET /readyz ${status}; last ${JSON.stringify(last)}; exit ${JSON.stringify(svc.exited())}; stderr tail:\n${svc.stderrTail()}`,
    },
  );
}

/** Every transfer final, every user's FUNDING + SPOT what was deposited, conservation ok. */
async function assertSettled(h: Harness, svc: ChildService): Promise<void> {
  await pollUntil(
    async () => ((await h.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM transfers_active`)[0]?.n === 0 ? true : undefined),
    {
      timeoutMs: RECOVERY_TIMEOUT_MS,
      describe: () => 'transfers_active empty',
    },
  );
  const unfinished = await h.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE state NOT IN (40, 50, 60)`;
  assert.is(unfinished[0]?.n, 0, 'every transfer in transfers_tb is final');
  for (const user of USERS) {
    const r = await svc.call('GET', '/api/v1/balances', { token: h.userToken(user) });
    assert.is(r.status, 200, JSON.stringify(r.body));
    const pick = (list: unknown) =>
      units((list as { asset: string; available: string }[]).find((b) => b.asset === ASSET)?.available ?? '0');
    assert.is(pick(r.body.funding) + pick(r.body.spot), 2n * units(DEPOSIT), `user ${user}: FUNDING + SPOT is what was deposited`);
  }
  const inv = await svc.call('GET', '/admin/v1/invariant', { token: h.adminToken(), timeoutMs: 30_000 });
  assert.is(inv.status, 200, JSON.stringify(inv.body));
  assert.is(inv.body.ok, true, JSON.stringify(inv.body));
}

/**
 * The scenario both modes share: load, SIGKILL of the postmaster, 503 while away, `bringBack`
 * (nothing for the embedded server: the service restarts it), 200 again, settled.
 */
async function killUnderLoad(h: Harness, bringBack: () => Promise<void>): Promise<void> {
  const svc = await h.start(SERVICE_ENV);
  await seed(h, svc);
  const traffic = load(h, svc);
  try {
    await pollUntil(async () => ((await committedCount(h)) >= COMMITTED_BEFORE_KILL ? true : undefined), {
      timeoutMs: 30_000,
      describe: () => `${COMMITTED_BEFORE_KILL} committed`,
    });
    const killed = await killPostmaster(h);
    const away = await readyzUntil(svc, 503, 10_000);
    assert.is(away.postgres === false || away.owner === false, true, `readyz says why: ${JSON.stringify(away)}`);
    await bringBack();
    const back = await readyzUntil(svc, 200, RECOVERY_TIMEOUT_MS);
    assert.equal([back.postgres, back.owner], [true, true]);
    const now = await h.pg?.postmasterPid();
    assert.ok(now !== null && now !== undefined && now !== killed, 'a new postmaster runs');
    assert.is(svc.exited(), null, `the service did not exit: ${svc.stderrTail()}`);
  } finally {
    await traffic.done;
  }
  const statuses = new Map<number, number>();
  for (const a of traffic.answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  assert.ok(
    traffic.answers.every((a) => [200, 202, 422, 500, 503].includes(a.status)),
    `every request got an HTTP answer: ${JSON.stringify([...statuses])}`,
  );
  assert.ok(
    traffic.answers.some((a) => a.status === 503 && a.body.owner === false),
    `new work was turned away while the owner lock was lost: ${JSON.stringify([...statuses])}`,
  );
  await assertSettled(h, svc);
  assert.is(svc.exited(), null, svc.stderrTail());
}

test('embedded PostgreSQL killed under load: the service restarts it and every transfer ends final, funds exact', async () => {
  await withHarness(
    async (h) => {
      await killUnderLoad(h, async () => undefined);
    },
    { pg: 'embedded' },
  );
});

test('DATABASE_URL server killed under load: the service waits, reconnects once it runs again, funds exact', async () => {
  await withHarness(
    async (h) => {
      await killUnderLoad(h, async () => {
        await sleep(2_000); // the server stays away a while: the service must wait, not exit
        await h.pg?.start();
      });
    },
    { pg: 'external' },
  );
});

test('a service whose owner lock another process took while the server was away exits non-zero, naming the holder', async () => {
  await withHarness(
    async (h) => {
      // The owner asks for its lock again at least every second while the server is away, so the
      // intruder wins only while the service is stopped (SIGSTOP) from before the server comes back
      // until the lock is taken. A lease of 10 s outlasts that pause: the service resumes standing
      // by, not lapsed, and meets the intruder's lock.
      const svc = await h.start({ ...SERVICE_ENV, LEASE_MS: '10000', LEASE_RENEW_MS: '1000' });
      await killPostmaster(h);
      await readyzUntil(svc, 503, 10_000);
      await sleep(2_000);
      process.kill(svc.pid, 'SIGSTOP');
      let stopped = true;
      const resume = () => {
        if (stopped) process.kill(svc.pid, 'SIGCONT');
        stopped = false;
      };
      try {
        await h.pg?.start();
      } catch (error) {
        resume();
        throw error;
      }
      const intruder = openSql(h.databaseUrl, { max: 1, application: 'intruder-process' });
      // A live process shows itself on its lock session until its claim, as every starter does
      // (src/ownership/unclaimed.ts): one that stays idle would be ended as frozen.
      const alive = setInterval(() => void intruder`SELECT 1`.catch(() => undefined), OWNER_CLAIM_HEARTBEAT_MS);
      try {
        const [row] = await intruder<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${OWNER_LOCK_KEY.toString()}::bigint) AS ok`;
        assert.is(row?.ok, true, 'the intruder took the lock before the service did');
        resume();
        const exit = await svc.waitForExit(20_000);
        assert.ok(exit.code !== 0 && exit.code !== null, `exited non-zero: ${JSON.stringify(exit)}`);
        const said = svc.stderrTail();
        assert.ok(
          /another process took the owner lock[^\n]*intruder-process/.test(said),
          `the exit names the intruder; stderr tail:\n${said}`,
        );
      } finally {
        resume();
        clearInterval(alive);
        await intruder.end({ timeout: 5 });
      }
    },
    { pg: 'external' },
  );
});

test.run();
