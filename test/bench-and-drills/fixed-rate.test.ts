// Proves the benchmark's open-loop generator sends its requests evenly at the rate asked whatever the answers, and times each from when it was due, so a service that falls behind shows the whole of the wait it causes.
// test-runner: no-postgres

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runFixedRate } from '../../bench/load/fixed-rate.js';

/** A server that answers each request `delayMs` after it arrived, and records the arrival times. */
async function server(delayMs: number): Promise<{ url: string; arrivals: number[]; close: () => Promise<void> }> {
  const arrivals: number[] = [];
  const s = http.createServer((req, res) => {
    arrivals.push(performance.now());
    req.resume();
    req.once('end', () => setTimeout(() => res.end('{}'), delayMs));
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    arrivals,
    close: () => {
      s.closeAllConnections();
      return new Promise((resolve) => s.close(() => resolve()));
    },
  };
}

const request = () => ({ path: '/', headers: { 'content-type': 'application/json' }, body: '{}' });

test('requests arrive evenly spaced at the rate asked, not in bursts, and all are answered', async () => {
  const srv = await server(0);
  try {
    const f = await runFixedRate({ url: srv.url, ratePerSecond: 200, durationS: 1, request });
    assert.is(f.scheduled, 200);
    assert.is(f.answered2xx, 200);
    assert.is(f.errors, 0);
    // 200/s is 10 per 50 ms; a generator that sends a second's quota at once puts 200 in one window.
    // The bound leaves room for a loaded machine, where a stalled event loop sends its due requests
    // together as it catches up (37 were seen with other suites running beside this one).
    const sorted = [...srv.arrivals].sort((a, b) => a - b);
    let busiest = 0;
    for (let i = 0, j = 0; i < sorted.length; i++) {
      while ((sorted[i] ?? 0) - (sorted[j] ?? 0) > 50) j++;
      busiest = Math.max(busiest, i - j + 1);
    }
    assert.ok(busiest <= 60, `at most 60 arrivals in any 50 ms, saw ${busiest}`);
    const spanMs = (sorted.at(-1) ?? 0) - (sorted[0] ?? 0);
    assert.ok(spanMs >= 900, `the 200 requests spread over the second, not ${spanMs} ms`);
  } finally {
    await srv.close();
  }
});

test('a service slower than the rate: latency counts the wait from the due time, not from the send', async () => {
  // One connection answered in 20 ms carries 50/s; 100/s offered for 0.5 s queues in the client,
  // and the last request, due at 490 ms, is answered near 1 s: about 500 ms late.
  const srv = await server(20);
  try {
    const f = await runFixedRate({ url: srv.url, ratePerSecond: 100, durationS: 0.5, request, socketsMax: 1 });
    assert.is(f.answered2xx, 50);
    assert.ok(f.latencyMs.max >= 350, `the last answers waited about 500 ms behind the others, max ${f.latencyMs.max} ms`);
    assert.ok(f.latencyMs.p50 >= 150, `half of them waited, p50 ${f.latencyMs.p50} ms`);
    assert.ok(f.achievedPerSecond <= 70, `answered at the service's pace, ${f.achievedPerSecond}/s`);
    assert.ok(f.durationS >= 0.9, `the run lasted until the last answer, ${f.durationS} s`);
  } finally {
    await srv.close();
  }
});

test('connections the server closes while idle are dropped, not reused, and every request is still answered', async () => {
  // The server ends each connection 20 ms after answering on it; at 20/s a connection idles
  // 50 ms between requests, so every reuse of a closed one would lose its request.
  let connections = 0;
  const s = http.createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      res.end('{}');
      setTimeout(() => req.socket.end(), 20);
    });
  });
  s.on('connection', () => connections++);
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    const f = await runFixedRate({ url, ratePerSecond: 20, durationS: 1, request, timeoutMs: 1_000 });
    assert.is(f.answered2xx, 20);
    assert.is(f.errors, 0);
    assert.is(connections, 20, 'a new connection for each request');
  } finally {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

test("a connection idle longer than idleReuseMsMax is closed, not reused: never a write racing the server's keep-alive close", async () => {
  // The server keeps every connection open; at 10/s a connection idles 100 ms between requests,
  // over the 50 ms allowed here, so each request goes on a new connection (a reuse would show as 1).
  let connections = 0;
  let closed = 0;
  const s = http.createServer((req, res) => {
    req.resume();
    req.once('end', () => res.end('{}'));
  });
  s.on('connection', (socket) => {
    connections++;
    socket.once('close', () => closed++);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    const f = await runFixedRate({ url, ratePerSecond: 10, durationS: 0.5, request, idleReuseMsMax: 50 });
    assert.is(f.answered2xx, 5);
    assert.is(f.errors, 0);
    assert.is(connections, 5, 'a new connection for each request');
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.ok(closed >= 4, `the stale ones closed by the client, ${closed} of 5`);
  } finally {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

test('chunked answers and answers that close their connection are read whole', async () => {
  let n = 0;
  const s = http.createServer((req, res) => {
    req.resume();
    req.once('end', () => {
      n++;
      if (n % 2 === 0) res.setHeader('connection', 'close');
      res.write('{"part":');
      res.end('1}');
    });
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    const f = await runFixedRate({ url, ratePerSecond: 40, durationS: 0.5, request });
    assert.is(f.answered2xx, 20);
    assert.is(f.errors, 0);
  } finally {
    await new Promise((resolve) => s.close(resolve));
  }
});

test('a connection reset mid-request is an error, an answer that never comes a timeout, and the run still ends', async () => {
  let n = 0;
  const s = http.createServer((req, res) => {
    req.resume();
    n++;
    if (n === 2) req.socket.destroy();
    else if (n === 1) req.once('end', () => res.end('{}'));
    // the third is never answered
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    const f = await runFixedRate({ url, ratePerSecond: 10, durationS: 0.3, request, socketsMax: 1, timeoutMs: 1_000 });
    assert.is(f.scheduled, 3);
    assert.is(f.answered2xx, 1);
    assert.is(f.timeouts, 1);
    assert.is(f.errors, 2);
    assert.ok(f.latencyMs.max >= 1_000, `a timeout counts its whole wait, max ${f.latencyMs.max} ms`);
  } finally {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

test('requests waiting for a connection time out when their own due time is that far behind, not after they were sent', async () => {
  // Nothing is ever answered and there is one connection: the two later requests wait in the
  // client, and each is given up 1 s after its own due time (about 1.1 and 1.2 s in).
  const s = http.createServer((req) => req.resume());
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  try {
    const url = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    const started = performance.now();
    const f = await runFixedRate({ url, ratePerSecond: 10, durationS: 0.3, request, socketsMax: 1, timeoutMs: 1_000 });
    assert.is(f.timeouts, 3);
    assert.ok(f.latencyMs.max < 1_500, `each given up 1 s after its due time, max ${f.latencyMs.max} ms`);
    assert.ok(performance.now() - started < 2_000, 'the run ended once the last was due 1 s ago, not 3 s later');
  } finally {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

test.run();
