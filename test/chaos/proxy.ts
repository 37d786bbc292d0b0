// The link between one service process and PostgreSQL, as the nemesis controls it: one TCP
// listener per PostgreSQL node (node:net), forwarding every connection to that node. Three modes:
//   pass      bytes forwarded as they come;
//   blackhole new connections are accepted but nothing is forwarded either way, and the sockets
//             already open stall: what arrives is held (as a peer's kernel would keep
//             retransmitting it) and a close is held too; on heal everything held goes through;
//   delay     every chunk is forwarded `ms` later (a slow link).
// Whatever the mode and its changes, each direction of a connection keeps its bytes in order, as
// TCP does: a chunk never overtakes one still delayed (a link healed while chunks were delayed
// once let the next ones through first, and a query read an empty result).
// The service's DATABASE_URL names the proxy's ports, so a partition is between that process and
// PostgreSQL only: the other process and Patroni still reach it.

import net from 'node:net';

export type LinkMode = { readonly kind: 'pass' } | { readonly kind: 'blackhole' } | { readonly kind: 'delay'; readonly ms: number };

/** A chunk to write at `at` (epoch ms), or the end of the direction (`drop`). */
type Due = { readonly at: number; readonly chunk: Buffer | null; readonly drop?: () => void };

/**
 * One direction of one connection: forwards chunks to `to`, holding them while blackholed, late
 * while delayed; `queue` is what is due, in arrival order, written by one timer at a time.
 */
type Pipe = { readonly to: net.Socket; held: Buffer[]; endHeld: (() => void) | null; queue: Due[]; timer: NodeJS.Timeout | null };

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
    // Later while delayed, and never before a chunk that came earlier on the same pipe.
    enqueue(pipe, { at: Date.now() + (mode.kind === 'delay' ? mode.ms : 0), chunk });
  }

  private forwardEnd(pipe: Pipe, drop: () => void): void {
    if (this.mode.kind === 'blackhole') {
      pipe.endHeld = drop;
      return;
    }
    enqueue(pipe, { at: Date.now() + (this.mode.kind === 'delay' ? this.mode.ms : 0), chunk: null, drop });
  }
}

function newPipe(to: net.Socket): Pipe {
  return { to, held: [], endHeld: null, queue: [], timer: null };
}

function enqueue(pipe: Pipe, due: Due): void {
  pipe.queue.push(due);
  pump(pipe);
}

/** Writes what is due, in order: the first thing not due yet waits, and everything behind it. */
function pump(pipe: Pipe): void {
  if (pipe.timer !== null) return;
  for (let head = pipe.queue[0]; head !== undefined; head = pipe.queue[0]) {
    const wait = head.at - Date.now();
    if (wait > 0) {
      pipe.timer = setTimeout(() => {
        pipe.timer = null;
        pump(pipe);
      }, wait);
      return;
    }
    pipe.queue.shift();
    if (head.chunk !== null) pipe.to.write(head.chunk);
    else head.drop?.();
  }
}

/** What a blackhole held goes through, in order, its end (a close held) last. */
function flush(pipe: Pipe): void {
  const held = pipe.held;
  pipe.held = [];
  for (const chunk of held) enqueue(pipe, { at: Date.now(), chunk });
  const drop = pipe.endHeld;
  pipe.endHeld = null;
  if (drop !== null) enqueue(pipe, { at: Date.now(), chunk: null, drop });
}
