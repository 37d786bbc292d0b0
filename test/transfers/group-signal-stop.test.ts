// Proves that `make run` stopped by a signal to its whole process group (Ctrl-C, systemd's
// KillMode=control-group) drains like a signal to the service alone (issue item 9): under load
// from 16 keep-alive clients every request sent before the signal gets an HTTP answer and none is
// reset, although the service receives the signal twice (from the group, and relayed by make);
// a deliberate second request (the same signal after SIGNAL_REPEAT_WINDOW_MS) exits at once; and
// neither stop leaves the embedded PostgreSQL running, nor does a fatal stop (exit code 70).
// GROUP_STOP_RUNS sets the SIGTERM runs (2).
// test-runner: own-postgres

import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SIGNAL_REPEAT_WINDOW_MS } from '../../src/limits.js';
import { holdFundingRow } from '../support/locks.js';
import { cleanupAll, pollUntil, sleep, useOneServerForThisFile, withHarness, type ChildService, type Harness } from '../support/process.js';

const RUNS = Number(process.env.GROUP_STOP_RUNS ?? '2');
const CLIENTS = 16;
const LOAD_MS = 1_500;
const FIRST_USER = 300;
const ENV = { LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '10000', HAPPY_PATH_DEADLINE_MS: '20000', PG_LOCK_TIMEOUT_MS: '30000' };

test.before(useOneServerForThisFile);
test.after(cleanupAll);

type Tally = { sent: number; answered: number; statuses: Record<number, number>; resets: string[] };

function failure(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  return `${String(error)}${cause === undefined ? '' : ` (${String(cause.code ?? cause.message)})`}`;
}

/** One keep-alive client (fetch's pool): transfers in a closed loop until told to stop sending. */
async function client(svc: ChildService, token: string, stop: { now: boolean }, tally: Tally): Promise<void> {
  while (!stop.now) {
    tally.sent++;
    try {
      const r = await fetch(`${svc.base}/api/v1/internal_transfer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' }),
        signal: AbortSignal.timeout(30_000),
      });
      await r.text();
      tally.statuses[r.status] = (tally.statuses[r.status] ?? 0) + 1;
    } catch (error) {
      tally.resets.push(failure(error));
    }
    tally.answered++;
  }
}

async function fund(h: Harness, svc: ChildService): Promise<void> {
  for (let i = 0; i < CLIENTS; i++) {
    const r = await svc.call('POST', '/admin/v1/deposit', {
      token: h.adminToken(),
      body: { user_id: String(FIRST_USER + i), account: 'FUNDING', asset: 'USDT', amount: '1000000', ref: `group-seed-${i}` },
    });
    assert.is(r.status, 200, JSON.stringify(r.body));
  }
}

/** The live processes whose command line names the data directory (the embedded PostgreSQL's do). */
function processesNaming(dir: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let cmdline = '';
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
    } catch {
      continue; // gone meanwhile
    }
    if (cmdline.includes(dir)) found.push(`${pid}: ${cmdline}`);
  }
  return found;
}

async function assertNoPostgresLeft(h: Harness): Promise<void> {
  const left = await pollUntil(
    async () => ((await h.pg?.postmasterPid()) === null && processesNaming(h.dataDir).length === 0 ? true : undefined),
    { timeoutMs: 5_000, describe: () => `no PostgreSQL of ${h.dataDir} left: ${processesNaming(h.dataDir).join('; ')}` },
  );
  assert.ok(left);
}

/** One stop under load: `make run`, 16 clients for LOAD_MS, then `signal` to the whole group. */
async function stopUnderLoad(h: Harness, signal: NodeJS.Signals, run: number): Promise<void> {
  const svc = await h.start(ENV, { viaMake: true });
  if (run === 1) await fund(h, svc);
  const stop = { now: false };
  const tally: Tally = { sent: 0, answered: 0, statuses: {}, resets: [] };
  const clients = Array.from({ length: CLIENTS }, (_, i) => client(svc, h.userToken(FIRST_USER + i), stop, tally));
  await sleep(LOAD_MS);
  // Every request counted in `sent` was sent before the signal: no client sends after this line.
  stop.now = true;
  const inFlight = tally.sent - tally.answered;
  svc.signalGroup(signal);
  await Promise.all(clients);
  const exit = await svc.waitForExit(30_000);
  const log = svc.stderrTail();
  console.log(
    `  ${signal} run ${run}: ${tally.sent} sent, ${inFlight} in flight at the signal, answers ${JSON.stringify(tally.statuses)}, ${tally.resets.length} reset`,
  );
  assert.equal(tally.resets, [], `no request sent before the signal is reset: ${tally.resets.length} of ${tally.sent}`);
  for (const status of Object.keys(tally.statuses).map(Number))
    assert.ok([200, 202, 503].includes(status), `served or turned away, nothing else: ${JSON.stringify(tally.statuses)}`);
  assert.ok((tally.statuses[200] ?? 0) + (tally.statuses[202] ?? 0) >= CLIENTS, `the load was served: ${JSON.stringify(tally.statuses)}`);
  assert.ok(inFlight >= 1, 'requests were in flight when the signal came');
  assert.not.match(log, /exiting now|FATAL ERROR/, `the stop finished in order; make exited ${JSON.stringify(exit)}`);
  assert.match(log, /"stopped in order"/, log);
  await assertNoPostgresLeft(h);
}

test('SIGTERM to the process group of make run under 16 keep-alive clients: every request answered, 0 resets, no PostgreSQL left', async () => {
  await withHarness(
    async (h) => {
      for (let run = 1; run <= RUNS; run++) await stopUnderLoad(h, 'SIGTERM', run);
    },
    { pg: 'embedded' },
  );
});

test('SIGINT to the process group (Ctrl-C in a terminal) drains the same way', async () => {
  await withHarness((h) => stopUnderLoad(h, 'SIGINT', 1), { pg: 'embedded' });
});

test('the same signal within the repeat window is the same stop; after it, a deliberate second request exits at once, no PostgreSQL left', async () => {
  await withHarness(
    async (h) => {
      const svc = await h.start(ENV, { viaMake: true });
      await fund(h, svc);
      const row = await holdFundingRow(h.sql, FIRST_USER, 'USDT');
      row.done.catch(() => undefined); // the server is stopped under it
      const token = h.userToken(FIRST_USER);
      void svc
        .call('POST', '/api/v1/internal_transfer', { token, body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' } })
        .catch(() => undefined);
      await sleep(500); // the transfer waits on the held row: the stop cannot finish
      const first = Date.now();
      svc.signalGroup('SIGTERM');
      await sleep(100);
      svc.signalGroup('SIGTERM');
      await sleep(SIGNAL_REPEAT_WINDOW_MS + 200 - (Date.now() - first));
      assert.is(svc.exited(), null, `still draining after two signals within the window:\n${svc.stderrTail()}`);
      const started = Date.now();
      svc.signalGroup('SIGTERM');
      const exit = await svc.waitForExit(10_000);
      const log = svc.stderrTail();
      assert.ok(Date.now() - started < 3_000, `at once (${Date.now() - started} ms, make ${JSON.stringify(exit)})`);
      assert.match(log, /second stop request: exiting now/, log);
      assert.match(log, /the same stop signal again within the repeat window/, log);
      assert.not.match(log, /FATAL ERROR|stopped in order/, log);
      await assertNoPostgresLeft(h);
      row.release();
    },
    { pg: 'embedded' },
  );
});

test('a fatal stop (a coordinator thread dies) exits with code 70 and stops the embedded PostgreSQL too', async () => {
  await withHarness(
    async (h) => {
      const svc = await h.startToDie({ CRASH_POINT: 'coordinator_thread_uncaught' });
      const seeded = await svc.call('POST', '/admin/v1/deposit', {
        token: h.adminToken(),
        body: { user_id: String(FIRST_USER), account: 'FUNDING', asset: 'USDT', amount: '10', ref: 'fatal-seed' },
      });
      assert.is(seeded.status, 200, JSON.stringify(seeded.body));
      // The first FUNDING → SPOT transfer past its create-and-debit commit kills its shard's thread.
      void svc
        .call('POST', '/api/v1/internal_transfer', {
          token: h.userToken(FIRST_USER),
          body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
        })
        .catch(() => undefined);
      const exit = await svc.waitForExit(15_000);
      assert.is(exit.code, 70, svc.stderrTail());
      assert.match(svc.stderrTail(), /fatal: stopping the process/);
      await assertNoPostgresLeft(h);
    },
    { pg: 'embedded' },
  );
});

test.run();
