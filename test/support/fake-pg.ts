// A PostgreSQL server that is not one, for the driver's multi-host tests: it answers a startup as
// a hot standby would (authenticated, in_hot_standby on, default_transaction_read_only off, the
// reports PostgreSQL 14+ sends) or refuses it as a server starting up does (FATAL 57P03), and
// counts the connections it was asked for. Every query it is sent is refused (ERROR XX000), so a
// client that took it for a read-write server fails. A dying primary answers the startup as a
// primary, then ends the session with the first query in flight (FATAL 57P01, then a close), as a
// leader killed under its clients does.

import net from 'node:net';

export type FakePg = { readonly port: number; readonly connections: () => number; readonly close: () => Promise<void> };

export type FakeKind = 'hot-standby' | 'starting-up' | 'dying-primary';

export function startFakePg(kind: FakeKind): Promise<FakePg> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let startup = true;
    socket.on('data', () => {
      if (!startup && kind === 'dying-primary')
        return void socket.end(error('FATAL', '57P01', 'terminating connection due to administrator command'));
      if (!startup) return void socket.write(Buffer.concat([error('ERROR', 'XX000', 'a fake server serves no query'), ready()]));
      startup = false;
      if (kind === 'starting-up') return void socket.end(error('FATAL', '57P03', 'the database system is starting up'));
      socket.write(startupAs(kind === 'hot-standby'));
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      resolve({
        port,
        connections: () => connections,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy();
            server.close(() => done());
          }),
      });
    }),
  );
}

function message(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

const cstring = (s: string) => Buffer.from(`${s}\0`, 'utf8');

function startupAs(standby: boolean): Buffer {
  const param = (k: string, v: string) => message('S', Buffer.concat([cstring(k), cstring(v)]));
  const authOk = message('R', Buffer.from([0, 0, 0, 0]));
  return Buffer.concat([
    authOk,
    param('server_version', '15.0'),
    param('in_hot_standby', standby ? 'on' : 'off'),
    param('default_transaction_read_only', 'off'),
    param('client_encoding', 'UTF8'),
    ready(),
  ]);
}

const ready = () => message('Z', Buffer.from('I', 'latin1'));

function error(severity: string, code: string, text: string): Buffer {
  return message('E', Buffer.concat([cstring(`S${severity}`), cstring(`C${code}`), cstring(`M${text}`), Buffer.from([0])]));
}
