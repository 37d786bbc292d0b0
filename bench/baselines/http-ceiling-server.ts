// Baseline (b)'s server: the service's HTTP stack (Hono on @hono/node-server) answering a trivial
// JSON POST, in a process of its own like the service. It parses the body and answers a small
// JSON object, so the difference to the service is everything a transfer does beyond that.
// Prints {"port":N} on stdout once listening; stops on SIGTERM.

import { serve } from '@hono/node-server';
import { Hono } from 'hono';

const app = new Hono();
app.post('/echo', async (c) => {
  const body: unknown = await c.req.json();
  const fields = typeof body === 'object' && body !== null ? Object.keys(body).length : 0;
  return c.json({ ok: true, fields });
});

const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
  process.stdout.write(`${JSON.stringify({ port: info.port })}\n`);
});

/** Idle keep-alive sockets can hold `close` open; past this the process exits anyway. */
const CLOSE_GRACE_MS = 2_000;

process.on('SIGTERM', () => {
  server.close(() => process.exit(0));
  setTimeout(() => process.exit(0), CLOSE_GRACE_MS).unref();
});
