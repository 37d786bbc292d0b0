// The listeners: the public one (HOST:PORT) and, with ADMIN_PORT, the admin one
// (ADMIN_HOST:ADMIN_PORT). Listening registers the first step of every stop, for both at once:
// new requests on either are answered 503 while the ones in flight on either finish (one Drain
// counts both), for at most SHUTDOWN_DRAIN_MS; then both listeners and every connection close.
// A listener stays open while draining, so a new connection gets a 503, not a refusal.

import type { AddressInfo } from 'node:net';
import { serve, type ServerType } from '@hono/node-server';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Apps } from './app.js';
import type { Drain } from './drain.js';

type Fetch = (req: Request) => Response | Promise<Response>;

type Listening = { readonly port: number; readonly adminPort: number | null };

export async function listenAll(apps: Apps, config: Config, stack: (() => Promise<void>)[], drain: Drain, log: Logger): Promise<Listening> {
  const servers: ServerType[] = [];
  stack.push(async () => {
    drain.start();
    const idle = await drain.idle(config.shutdownDrainMs);
    if (!idle)
      log.error('requests still in flight when the drain time ran out: their connections are closed', {
        in_flight: drain.requestsInFlight,
        shutdown_drain_ms: config.shutdownDrainMs,
      });
    await Promise.all(servers.map(close));
  });
  const port = await listen(apps.public.fetch, config.port, config.host, servers);
  if (apps.admin === null) return { port, adminPort: null };
  if (config.adminPort === null) throw new Error('an admin app needs ADMIN_PORT');
  const adminPort = await listen(apps.admin.fetch, config.adminPort, config.adminHost, servers);
  return { port, adminPort };
}

function listen(fetch: Fetch, port: number, hostname: string, servers: ServerType[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch, port, hostname }, (info: AddressInfo) => resolve(info.port));
    servers.push(server);
    server.once('error', reject);
  });
}

function close(server: ServerType): Promise<void> {
  return new Promise<void>((done) => {
    server.close(() => done());
    if ('closeAllConnections' in server) server.closeAllConnections();
  });
}
