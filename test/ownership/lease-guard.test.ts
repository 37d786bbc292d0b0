// Proves the HTTP lease guard (src/http/middleware/lease-guard.ts) sends an answer only while the owner lease is proven: an answer made while the proof has ended but the process kept running (standing by) becomes 503 OWNER_LEASE_UNPROVEN and the process goes on; one being written then is not sent; a 503 and the probes go out standing by; and a lease that lapses after the response's end() passed its check, before the socket hands the bytes on (the process stopped inside end()), still sends nothing and stops the process.
// test-runner: no-postgres

import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { leaseGuard } from '../../src/http/middleware/lease-guard.js';
import type { LeaseState } from '../../src/ownership/lease.js';

type Harness = {
  readonly get: (path: string) => Promise<string>;
  readonly lapsed: string[];
  /** Sets the lease's state; given a function, it is asked at each check. */
  setState: (s: LeaseState | (() => LeaseState)) => void;
  /** Runs while the route makes its answer. */
  duringRoute: () => void;
  /** Runs when the response corks its socket: inside end(), after end()'s own check. */
  onCork: () => void;
  readonly close: () => void;
};

async function harness(): Promise<Harness> {
  let state: () => LeaseState = () => 'proven';
  const lapsed: string[] = [];
  const app = new Hono();
  const h: Harness = {
    get: async () => '',
    lapsed,
    setState: (s) => {
      state = typeof s === 'function' ? s : () => s;
    },
    duringRoute: () => undefined,
    onCork: () => undefined,
    close: () => undefined,
  };
  app.use('*', leaseGuard({ state: () => state(), onLapsed: (reason) => lapsed.push(reason) }));
  app.get('/healthz', (c) => c.json({ status: 'ok' }));
  app.get('/work', (c) => {
    h.duringRoute();
    return c.json({ state: 'COMMITTED' });
  });
  app.get('/busy', (c) => c.json({ code: 'SERVICE_UNAVAILABLE' }, 503));
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise((resolve) => server.once('listening', resolve));
  server.on('connection', (socket: Socket) => {
    const cork = socket.cork;
    socket.cork = function corkSeen(this: Socket) {
      h.onCork();
      cork.call(this);
    };
  });
  const port = (server.address() as AddressInfo).port;
  return Object.assign(h, {
    get: (p: string) =>
      new Promise<string>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port, path: p, agent: false }, (res) => {
          let body = '';
          res.on('data', (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on('end', () => resolve(`answered ${res.statusCode} ${body}`));
        });
        req.on('error', (e) => resolve(`no answer: ${e.message}`));
      }),
    close: () => server.close(),
  });
}

test('lease guard: an answer made once the proof ended (standing by) becomes 503 OWNER_LEASE_UNPROVEN, and the process goes on', async () => {
  const h = await harness();
  try {
    assert.match(await h.get('/work'), /^answered 200 .*COMMITTED/, 'proven throughout: answered');
    // The request arrived proven; the renewal's proof ended while the route made its answer.
    h.duringRoute = () => h.setState('standing-by');
    const answer = await h.get('/work');
    assert.match(answer, /^answered 503 .*"code":"OWNER_LEASE_UNPROVEN"/, answer);
    assert.match(answer, /"owner":false/);
    assert.not.match(answer, /COMMITTED/);
    h.duringRoute = () => undefined;
    assert.match(await h.get('/healthz'), /^answered 200/, 'standing by, the probes still answer');
    assert.match(await h.get('/busy'), /^answered 503 .*SERVICE_UNAVAILABLE/, 'a 503 of its own goes out standing by');
    assert.equal(h.lapsed, [], 'standing by never stops the process');
    h.setState('proven');
    assert.match(await h.get('/work'), /^answered 200 .*COMMITTED/, 'proven again: answered');
  } finally {
    h.close();
  }
});

test('lease guard: an answer being written once the proof ended is not sent; standing by, the process goes on', async () => {
  const h = await harness();
  try {
    // Proven as it arrives and as it is made (two checks), then not as its bytes are written.
    let asked = 0;
    h.setState(() => (asked++ < 2 ? 'proven' : 'standing-by'));
    assert.match(await h.get('/work'), /^no answer/);
    assert.equal(h.lapsed, []);
    h.setState('proven');
    assert.match(await h.get('/work'), /^answered 200/);
  } finally {
    h.close();
  }
});

test('lease guard: a lease that lapses inside end(), after its check and before the socket writes, sends nothing and stops the process', async () => {
  const h = await harness();
  try {
    let stopped = false;
    h.setState(() => (stopped ? 'lapsed' : 'proven'));
    // The socket is corked inside end(), after end() was checked: the process "stops" there.
    h.onCork = () => {
      stopped = true;
    };
    assert.match(await h.get('/work'), /^no answer/, 'the bytes end() had passed were not written');
    assert.is(h.lapsed.length, 1);
    assert.match(h.lapsed[0] ?? '', /being written after the owner lease lapsed/);
  } finally {
    h.close();
  }
});

test.run();
