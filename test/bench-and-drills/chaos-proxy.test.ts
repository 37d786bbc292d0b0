// Proves make chaos's link proxy (test/chaos/proxy.ts) against an echo server: passing, bytes go
// through; blackholed, an open connection stalls (nothing comes back) and a new one is accepted
// but reaches nothing, and on heal what was held goes through, in order; delayed, each chunk
// arrives no sooner than the delay; healed while chunks are still delayed, the chunks sent after
// the heal never overtake them (TCP never reorders a stream).
// test-runner: no-postgres

import net from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LinkProxy } from '../chaos/proxy.js';

async function echoServer(): Promise<{ port: number; accepted: () => number; close: () => Promise<void> }> {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('data', (d) => s.write(d));
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as net.AddressInfo).port,
    accepted: () => accepted,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

async function connect(port: number): Promise<{ socket: net.Socket; received: () => string }> {
  let text = '';
  const socket = net.connect(port, '127.0.0.1');
  socket.on('data', (d) => (text += d.toString()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, received: () => text };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('pass, blackhole (open and new connections held), heal (held bytes delivered in order), delay', async () => {
  const echo = await echoServer();
  const { proxy, ports } = await LinkProxy.open('t', [echo.port]);
  const port = ports[0] as number;
  try {
    const a = await connect(port);
    a.socket.write('one');
    await sleep(100);
    assert.is(a.received(), 'one');

    proxy.set({ kind: 'blackhole' });
    a.socket.write('two');
    const b = await connect(port);
    b.socket.write('new');
    await sleep(300);
    assert.is(a.received(), 'one', 'an open connection stalls');
    assert.is(b.received(), '', 'a new connection is accepted but reaches nothing');
    assert.is(echo.accepted(), 1, 'the new connection did not reach the server');

    proxy.set({ kind: 'pass' });
    await sleep(200);
    assert.is(a.received(), 'onetwo');
    assert.is(b.received(), 'new');

    proxy.set({ kind: 'delay', ms: 300 });
    const sent = Date.now();
    a.socket.write('three');
    while (!a.received().endsWith('three') && Date.now() - sent < 3_000) await sleep(10);
    assert.ok(Date.now() - sent >= 550, `a round trip through a 300 ms link took ${Date.now() - sent} ms`);
    a.socket.destroy();
    b.socket.destroy();
  } finally {
    await proxy.close();
    await echo.close();
  }
});

test('a delay healed with chunks still delayed: what comes after waits behind them, in both directions', async () => {
  const echo = await echoServer();
  const { proxy, ports } = await LinkProxy.open('t', [echo.port]);
  try {
    const a = await connect(ports[0] as number);
    proxy.set({ kind: 'delay', ms: 400 });
    for (const part of ['1', '2', '3']) {
      a.socket.write(part);
      await sleep(20);
    }
    proxy.set({ kind: 'pass' });
    a.socket.write('4');
    await sleep(20);
    a.socket.write('5');
    const sent = Date.now();
    while (a.received().length < 5 && Date.now() - sent < 3_000) await sleep(10);
    assert.is(a.received(), '12345');
    a.socket.destroy();
  } finally {
    await proxy.close();
    await echo.close();
  }
});

test.run();
