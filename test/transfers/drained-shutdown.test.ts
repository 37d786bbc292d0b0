// Proves the drained shutdown: on SIGTERM /readyz and new requests answer 503
// at once, every request already in flight gets its HTTP answer (none sees its connection cut),
// the process then stops in order and exits 0; a second request (another signal, or the same
// one after SIGNAL_REPEAT_WINDOW_MS) ends it at once, by that signal. A request still on the wire
// when the signal comes is answered too. To hold requests
// in flight for certain, a FUNDING balance row is kept locked by the test while they are sent.

import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SIGNAL_REPEAT_WINDOW_MS } from '../../src/limits.js';
import { units } from '../support/funds.js';
import { holdFundingRow } from '../support/locks.js';
import { cleanupAll, pollUntil, sleep, useOneServerForThisFile, withHarness, type ChildService, type Harness } from '../support/process.js';

const USER = 91;
const IN_FLIGHT = 20;
const SLOW = { SHUTDOWN_DRAIN_MS: '10000', HAPPY_PATH_DEADLINE_MS: '20000', PG_LOCK_TIMEOUT_MS: '30000' };

test.before(useOneServerForThisFile);
test.after(cleanupAll);

function sendTransfers(h: Harness, svc: ChildService, n: number) {
  return Array.from({ length: n }, () =>
    svc
      .call('POST', '/api/v1/internal_transfer', {
        token: h.userToken(USER),
        body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
        timeoutMs: 30_000,
      })
      .then(
        (r) => ({ status: r.status, body: r.body }),
        (error: unknown) => ({ status: 0, body: { error: String(error) } }),
      ),
  );
}

async function funded(h: Harness): Promise<ChildService> {
  const svc = await h.start(SLOW);
  const r = await svc.call('POST', '/admin/v1/deposit', {
    token: h.adminToken(),
    body: { user_id: String(USER), account: 'FUNDING', asset: 'USDT', amount: '100', ref: 'drain-seed' },
  });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return svc;
}

async function inFlightOnServer(h: Harness, n: number): Promise<void> {
  // The coordinators' statements wait on the row: the requests are inside the service.
  await pollUntil(
    async () =>
      ((await h.sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`)[0]
        ?.n ?? 0) >= 1
        ? true
        : undefined,
    {
      timeoutMs: 10_000,
      describe: () => `${n} requests waiting on the locked row`,
    },
  );
}

test('SIGTERM under load: 503 for new requests and /readyz at once, an answer for every request in flight, exit 0, funds exact', async () => {
  await withHarness(async (h) => {
    const svc = await funded(h);
    const row = await holdFundingRow(h.sql, USER, 'USDT');
    let sent: Promise<{ status: number; body: Record<string, unknown> }>[] = [];
    try {
      sent = sendTransfers(h, svc, IN_FLIGHT);
      await inFlightOnServer(h, IN_FLIGHT);
      await sleep(300); // the rest of the requests reach the service and wait behind the first
      process.kill(svc.pid, 'SIGTERM');
      await sleep(200);
      const ready = await svc.call('GET', '/readyz');
      assert.equal([ready.status, ready.body.draining], [503, true], 'readyz says 503 while draining');
      const late = await svc.call('POST', '/api/v1/internal_transfer', {
        token: h.userToken(USER),
        body: { from: 'FUNDING', to: 'SPOT', asset: 'USDT', amount: '1' },
      });
      assert.equal([late.status, late.body.code], [503, 'SERVICE_UNAVAILABLE'], 'a new request is turned away');
    } finally {
      row.release();
      await row.done.catch(() => undefined);
    }
    const answers = await Promise.all(sent);
    // Every request got an HTTP answer: none saw its connection cut (status 0). A request the
    // service had already taken is answered 200 or 202 and its transfer exists; one still on its
    // way when the signal came (the test cannot hold all 20 at the row) is answered 503 and
    // created nothing. The held ones must be among the first kind, so at least one is.
    for (const a of answers)
      assert.ok([200, 202, 503].includes(a.status), `every request sent before the signal got an HTTP answer: ${JSON.stringify(a)}`);
    const accepted = answers.filter((a) => a.status === 200 || a.status === 202).length;
    assert.ok(accepted >= 1, `the requests held in flight were answered, not turned away: ${JSON.stringify(answers)}`);
    const exit = await svc.waitForExit(20_000);
    assert.is(exit.code, 0, svc.stderrTail());

    const next = await h.start();
    await pollUntil(async () => ((await h.sql`SELECT count(*)::int AS n FROM transfers_active`)[0]?.n === 0 ? true : undefined), {
      timeoutMs: 20_000,
      describe: () => 'every transfer final',
    });
    const committed = Number((await h.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = ${USER} AND state = 40`)[0]?.n);
    const created = Number((await h.sql`SELECT count(*)::int AS n FROM transfers_tb WHERE user_id = ${USER}`)[0]?.n);
    assert.equal([committed, created], [accepted, accepted], 'every accepted transfer committed, and nothing turned away was created');
    const b = await next.call('GET', '/api/v1/balances', { token: h.userToken(USER) });
    const find = (list: unknown) =>
      units((list as { asset: string; available: string }[]).find((x) => x.asset === 'USDT')?.available ?? '0');
    assert.equal(
      [find(b.body.funding), find(b.body.spot)],
      [units('100') - BigInt(committed) * units('1'), BigInt(committed) * units('1')],
    );
  });
});

/** Writes `head`, runs `between`, writes `rest`, and resolves with everything read until the server closes. */
function rawRequest(port: number, head: string, between: () => Promise<void>, rest: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = '';
    socket.on('data', (chunk: Buffer) => {
      got += chunk.toString();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(got));
    socket.once('connect', () => {
      socket.write(head);
      between().then(
        () => socket.write(rest),
        (error: unknown) => reject(error),
      );
    });
  });
}

test('requests on the wire but not yet parsed when SIGTERM comes are answered 503 with Connection: close, not reset', async () => {
  await withHarness(async (h) => {
    const svc = await h.start();
    // Two connections, nothing in flight: on one the request's head is half sent before the
    // signal; the other is idle after an answer, kept alive. Both requests become whole 150 ms
    // after the signal, as bytes already on their way over a slow network would.
    const signalled = (async () => {
      await sleep(100); // both connections are open
      process.kill(svc.pid, 'SIGTERM');
    })();
    const afterSignal = async () => {
      await signalled;
      await sleep(150);
    };
    const auth = `Authorization: Bearer ${h.userToken(USER)}\r\n\r\n`;
    const replies = await Promise.all([
      rawRequest(svc.port, 'GET /api/v1/balances HTTP/1.1\r\nHost: 127.0.0.1\r\n', afterSignal, auth),
      rawRequest(
        svc.port,
        'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n',
        afterSignal,
        `GET /api/v1/balances HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}`,
      ),
    ]);
    for (const reply of replies) {
      const last = reply.slice(reply.lastIndexOf('HTTP/1.1 '));
      assert.match(last, /^HTTP\/1\.1 503/, `an HTTP answer, not a reset: ${JSON.stringify(replies)}`);
      assert.match(last, /connection: close/i);
    }
    assert.is((await svc.waitForExit(20_000)).code, 0, svc.stderrTail());
  });
});

test('a second signal while draining exits at once: a different one, or the same one after the repeat window', async () => {
  for (const second of ['SIGINT', 'SIGTERM'] as const)
    await withHarness(async (h) => {
      const svc = await funded(h);
      const row = await holdFundingRow(h.sql, USER, 'USDT');
      try {
        void sendTransfers(h, svc, 3);
        await inFlightOnServer(h, 3);
        process.kill(svc.pid, 'SIGTERM');
        await sleep(300);
        assert.is(svc.exited(), null, 'still draining after the first signal');
        if (second === 'SIGTERM') {
          process.kill(svc.pid, 'SIGTERM');
          await sleep(SIGNAL_REPEAT_WINDOW_MS);
          assert.is(svc.exited(), null, 'the same signal within the window is the same stop');
        }
        const started = Date.now();
        process.kill(svc.pid, second);
        const exit = await svc.waitForExit(5_000);
        assert.equal(exit, { code: null, signal: second }, svc.stderrTail());
        assert.ok(Date.now() - started < 2_000, 'at once');
        assert.match(svc.stderrTail(), /second stop request: exiting now/);
      } finally {
        row.release();
        await row.done.catch(() => undefined);
      }
    });
});

test.run();
