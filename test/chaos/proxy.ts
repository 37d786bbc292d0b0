// The link between one service process and PostgreSQL, as the nemesis controls it: one TCP
// listener per PostgreSQL node (node:net), forwarding every connection to that node. Three modes:
//   pass      bytes forwarded as they come;
//   blackhole new connections are accepted but nothing is forwarded either way, and the sockets
//             already open stall: what arrives is held (as a peer's kernel would keep
//             retransmitting it) and a close is held too; on heal everything held goes through;
//   delay     every chunk is forwarded `ms` later, in order (a slow link).
// The service's DATABASE_URL names the proxy's ports, so a partition is between that process and
// PostgreSQL only: the other process and Patroni still reach it.

import net from 'node:net';

export type LinkMode = { readonly kind: 'pass' } | { readonly kind: 'blackhole' } | { readonly kind: 'delay'; readonly ms: number };

/** One direction of one connection: forwards chunks to `to`, holding them while blackholed, late while delayed. */
type Pipe = { readonly to: net.Socket; held: Buffer[]; endHeld: boolean; lastAt: number };

type Link = { readonly client: net.Socket; readonly server: net.Socket; readonly up: Pipe; readonly down: Pipe; connected: boolean };

export class LinkProxy {
  private mode: LinkMode = { kind: 'pass' };
  private readonly servers: net.Server[] = [];
  private readonly links = new Set<Link>();
  private readonly waiting = new Set<() => void>();

  private constructor(readonly name: string) {}

  /** Listens on a free loopback port for each of `targets` (PostgreSQL ports); `ports` are the listeners' ports, in the same order. */
  static async open(name: string, targets: readonly number[]): Promise<{ proxy: LinkProxy; ports: number[] }> {
    const proxy = new LinkProxy(name);
    const ports: number[] = [];
    for (const target of targets) ports.push(await proxy.listen(target));
    return { proxy, ports };
  }

  get current(): LinkMode {
    return this.mode;
  }

  /** Sets the link's mode; leaving a blackhole forwards everything held, in order. */
  set(mode: LinkMode): void {
    this.mode = mode;
    if (mode.kind === 'blackhole') return;
    for (const release of [...this.waiting]) release();
    this.waiting.clear();
    for (const link of this.links) {
      flush(link.up);
      flush(link.down);
    }
  }

  async close(): Promise<void> {
    this.set({ kind: 'pass' });
    for (const link of this.links) {
      link.client.destroy();
      link.server.destroy();
    }
    await Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }

  private listen(target: number): Promise<number> {
    const server = net.createServer((client) => this.accept(client, target));
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
    });
  }

  private accept(client: net.Socket, target: number): void {
    const server = new net.Socket();
    const link: Link = { client, server, up: newPipe(server), down: newPipe(client), connected: false };
    this.links.add(link);
    const drop = () => {
      this.links.delete(link);
      client.destroy();
      server.destroy();
    };
    client.on('error', () => undefined);
    server.on('error', () => undefined);
    client.on('data', (chunk) => this.forward(link.up, chunk));
    server.on('data', (chunk) => this.forward(link.down, chunk));
    // A close travels like data: held while blackholed, late while delayed.
    client.on('close', () => this.forwardEnd(link.up, drop));
    server.on('close', () => this.forwardEnd(link.down, drop));
    const connect = () => server.connect(target, '127.0.0.1', () => (link.connected = true));
    if (this.mode.kind === 'blackhole') this.waiting.add(connect);
    else connect();
  }

  private forward(pipe: Pipe, chunk: Buffer): void {
    const mode = this.mode;
    if (mode.kind === 'blackhole' || pipe.held.length > 0) {
      pipe.held.push(chunk);
      if (mode.kind !== 'blackhole') flush(pipe);
      return;
    }
    if (mode.kind === 'pass') {
      pipe.to.write(chunk);
      return;
    }
    // Later, but never before a chunk sent earlier on the same pipe.
    const at = Math.max(Date.now() + mode.ms, pipe.lastAt);
    pipe.lastAt = at;
    setTimeout(() => pipe.to.write(chunk), at - Date.now());
  }

  private forwardEnd(pipe: Pipe, drop: () => void): void {
    if (this.mode.kind === 'blackhole') {
      pipe.endHeld = true;
      this.waiting.add(drop);
      return;
    }
    const at = Math.max(Date.now() + (this.mode.kind === 'delay' ? this.mode.ms : 0), pipe.lastAt);
    setTimeout(drop, at - Date.now());
  }
}

function newPipe(to: net.Socket): Pipe {
  return { to, held: [], endHeld: false, lastAt: 0 };
}

function flush(pipe: Pipe): void {
  const held = pipe.held;
  pipe.held = [];
  for (const chunk of held) pipe.to.write(chunk);
}
