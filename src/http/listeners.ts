// The listeners: the public one (HOST:PORT) and, with ADMIN_PORT, the admin one
// (ADMIN_HOST:ADMIN_PORT). Listening registers the first step of every stop, for both at once:
// new requests on either are answered 503 while the ones in flight on either finish (one Drain
// counts both), for at most SHUTDOWN_DRAIN_MS; then both listeners and every connection close.
// A listener stays open while draining, so a new connection gets a 503, not a refusal, and it
// stays open for DRAIN_SETTLE_MS while connections are open, so a request already on the wire
// when the stop began is read and answered rather than reset.

import type { AddressInfo, Socket } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Config } from '../config/config.js';
import type { Logger } from '../log.js';
import type { Apps } from './app.js';
import type { Drain } from './drain.js';
import { DRAIN_SETTLE_MS } from '../limits.js';

type Fetch = (req: Request) => Response | Promise<Response>;

type Listening = { readonly port: number; readonly adminPort: number | null };

export async function listenAll(apps: Apps, config: Config, stack: (() => Promise<void>)[], drain: Drain, log: Logger): Promise<Listening> {
  const servers: ServerType[] = [];
  const connections = { open: 0 };
  stack.push(async () => {
    const deadline = Date.now() + config.shutdownDrainMs;
    drain.start();
    const idle = await drain.idle(config.shutdownDrainMs, { openConnections: () => connections.open, settleMs: DRAIN_SETTLE_MS });
    if (!idle)
      log.error('requests still in flight when the drain time ran out: their connections are closed', {
        in_flight: drain.requestsInFlight,
        shutdown_drain_ms: config.shutdownDrainMs,
      });
    await Promise.all(servers.map((server) => close(server, deadline - Date.now())));
  });
  const port = await listen(apps.public.fetch, config.port, config.host, servers, connections);
  if (apps.admin === null) return { port, adminPort: null };
  if (config.adminPort === null) throw new Error('an admin app needs ADMIN_PORT');
  const adminPort = await listen(apps.admin.fetch, config.adminPort, config.adminHost, servers, connections);
  return { port, adminPort };
}

function listen(fetch: Fetch, port: number, hostname: string, servers: ServerType[], connections: { open: number }): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port, hostname }, (info: AddressInfo) => resolve(info.port));
    servers.push(server);
    server.once('error', reject);
    // Counted for the drain, which lets the last answers of a stop go out before it closes them.
    server.on('connection', (socket: Socket) => {
      connections.open++;
      socket.once('close', () => connections.open--);
    });
  });
}

/**
 * Stops accepting and closes the idle connections at once (what http.Server.close does); a
 * connection still finishing an answer (each carries `Connection: close` while draining) closes
 * itself, or is closed when `ms` runs out.
 */
function close(server: ServerType, ms: number): Promise<void> {
  return new Promise<void>((done) => {
    const cut = () => {
      if ('closeAllConnections' in server) server.closeAllConnections();
    };
    const timer = setTimeout(cut, Math.max(0, ms));
    server.close(() => {
      clearTimeout(timer);
      done();
    });
  });
}
