// An open-loop load: requests leave on a fixed schedule (one every 1/rate s) whether or not the
// earlier ones were answered, and each latency runs from the time its request was due to leave,
// so a slow answer delays nothing else and every wait it causes is counted. A closed loop
// (autocannon, N connections each waiting for its answer) sends less when the service slows,
// which hides exactly the waits a p99 is meant to show.
//
// autocannon's own `overallRate` is not used: it gives each connection a quota per second, sent
// back to back at the start of each second, and times each request from when it actually left.
// Like autocannon, the generator writes and frames HTTP/1.1 on its own keep-alive sockets
// (bench/load/http1-wire.ts): Node's http client cost it twice the CPU, taken from the machine the
// service is measured on.

import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { requestBytes, ResponseFramer } from './http1-wire.js';
import { quantile, round1, type LatencyMs } from './closed-loop.js';

/** Connections at most, the largest closed-loop level; beyond them a due request waits in the client, and the wait counts. */
export const FIXED_RATE_SOCKETS_MAX = 256;
/** A request with no answer this long after it was due is abandoned and counted as a timeout. */
export const FIXED_RATE_TIMEOUT_MS = 10_000;
/** How often the scheduler wakes to send what has come due. */
const TICK_MS = 1;
/** How often requests are checked against their timeout. */
const SWEEP_MS = 100;
/**
 * An idle connection is reused only this soon after its last answer. Node's HTTP server closes a
 * keep-alive connection idle for 5 s (keepAliveTimeout, announced as `Keep-Alive: timeout=5`); a
 * request written as that close is under way meets a closed socket (one in 3 million requests of a
 * 30-minute soak). Like undici, which stops reusing a connection 1 s before the server's timeout,
 * the generator closes it instead and opens another.
 */
export const FIXED_RATE_IDLE_REUSE_MS_MAX = 4_000;

export type FixedRateRequest = { readonly path: string; readonly headers: Readonly<Record<string, string>>; readonly body: string };

export type FixedRateSpec = {
  readonly url: string;
  readonly ratePerSecond: number;
  readonly durationS: number;
  /** Builds the next request (called once per request, when it is due). */
  readonly request: () => FixedRateRequest;
  /** Connections at most; FIXED_RATE_SOCKETS_MAX unless told. */
  readonly socketsMax?: number;
  /** How long after its due time a request is given up; FIXED_RATE_TIMEOUT_MS unless told. */
  readonly timeoutMs?: number;
  /** How long an idle connection may wait and still be reused; FIXED_RATE_IDLE_REUSE_MS_MAX unless told. */
  readonly idleReuseMsMax?: number;
  /**
   * Told of every request as it settles, for callers that slice a long run into windows (the
   * soak): when it was due (performance.now() time), its latency from then, and its status, or
   * how it failed. The run's own figures are the same with or without it.
   */
  readonly onSettle?: (dueMs: number, latencyMs: number, outcome: number | 'timeout' | 'error') => void;
};

export type FixedRateFigures = {
  /** The offered rate and span: `scheduled` = ratePerSecond × offeredS requests, evenly spaced. */
  readonly ratePerSecond: number;
  readonly offeredS: number;
  readonly scheduled: number;
  /** From the first request's due time until the last one was answered or given up: longer than `offeredS` when answers lag. */
  readonly durationS: number;
  /** Answers of any status, and of them 2xx. */
  readonly answered: number;
  readonly answered2xx: number;
  /** 2xx answers over `durationS`. */
  readonly achievedPerSecond: number;
  /** Every scheduled request, from when it was due to its answer (or to its failure). */
  readonly latencyMs: LatencyMs;
  /** How late the generator itself sent requests (p99 and max), to show it kept its schedule. */
  readonly sendLagMs: { readonly p99: number; readonly max: number };
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly statusCodes: Readonly<Record<string, number>>;
};

type Outcome = { kind: 'answered'; status: number } | { kind: 'timeout' } | { kind: 'error' };

/** One keep-alive socket, the request it carries (-1 when idle), and when it last became idle. */
type Connection = { readonly socket: net.Socket; readonly framer: ResponseFramer; request: number; idleSince: number };

export function runFixedRate(spec: FixedRateSpec): Promise<FixedRateFigures> {
  const plan = planOf(spec);
  return new Promise((resolve) => new OpenLoop(spec, plan, resolve).run());
}

/** What a spec asks for, checked, with its defaults filled in. */
type Plan = {
  readonly target: URL;
  readonly port: number;
  readonly socketsMax: number;
  readonly timeoutMs: number;
  readonly idleReuseMsMax: number;
  readonly scheduled: number;
  readonly intervalMs: number;
};

function planOf(spec: FixedRateSpec): Plan {
  if (!(spec.ratePerSecond > 0) || !(spec.durationS > 0))
    throw new Error(`runFixedRate: rate and duration must be positive, got ${spec.ratePerSecond}/s for ${spec.durationS} s`);
  const target = new URL(spec.url);
  if (target.protocol !== 'http:') throw new Error(`runFixedRate: only http: URLs, got ${spec.url}`);
  return {
    target,
    port: Number(target.port || 80),
    socketsMax: spec.socketsMax ?? FIXED_RATE_SOCKETS_MAX,
    timeoutMs: spec.timeoutMs ?? FIXED_RATE_TIMEOUT_MS,
    idleReuseMsMax: spec.idleReuseMsMax ?? FIXED_RATE_IDLE_REUSE_MS_MAX,
    scheduled: Math.max(1, Math.round(spec.ratePerSecond * spec.durationS)),
    intervalMs: 1000 / spec.ratePerSecond,
  };
}

/** One open-loop run: the schedule, the keep-alive connections, and each request's outcome as it settles. */
class OpenLoop {
  // In flight at once is bounded by construction: rate × timeoutMs.
  private readonly latencies: Float64Array;
  private readonly lags: Float64Array;
  private readonly statusCodes: Record<string, number> = {};
  /** Connections open and usable; a dropped one leaves for good. */
  private readonly live = new Set<Connection>();
  /** Connections with no request, the most recently used last (reused first, as Node's agent does). */
  private readonly idle: Connection[] = [];
  /** Requests due while every connection was busy, in due order. */
  private readonly waiting: number[] = [];
  /** Requests sent and not yet settled, with their connection: the sweeper times out each of them, whatever became of it. */
  private readonly sent = new Map<number, Connection>();
  private finished = 0;
  private errors = 0;
  private timeouts = 0;
  private answered2xx = 0;
  private start = 0;
  /** The next request of the schedule to send. */
  private next = 0;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly spec: FixedRateSpec,
    private readonly plan: Plan,
    private readonly resolve: (figures: FixedRateFigures) => void,
  ) {
    this.latencies = new Float64Array(plan.scheduled);
    this.lags = new Float64Array(plan.scheduled);
  }

  run(): void {
    this.start = performance.now();
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.tick();
  }

  private dueAt(i: number): number {
    return this.start + i * this.plan.intervalMs;
  }

  /** Sends what has come due since the last tick, and wakes again until the schedule is spent. */
  private tick(): void {
    const due = Math.min(this.plan.scheduled, Math.floor((performance.now() - this.start) / this.plan.intervalMs) + 1);
    while (this.next < due) this.send(this.next++);
    if (this.next < this.plan.scheduled) setTimeout(() => this.tick(), TICK_MS);
  }

  private send(i: number): void {
    this.lags[i] = Math.max(0, performance.now() - this.dueAt(i));
    const c = this.reusable();
    if (c !== undefined) this.carry(c, i);
    else if (this.live.size < this.plan.socketsMax) this.carry(this.open(), i);
    else this.waiting.push(i);
  }

  private carry(c: Connection, i: number): void {
    const r = this.spec.request();
    c.request = i;
    this.sent.set(i, c);
    c.socket.write(requestBytes(this.plan.target.host, 'POST', r.path, r.headers, r.body));
  }

  /** The most recently used idle connection not idle too long; older ones are closed on the way. */
  private reusable(): Connection | undefined {
    const now = performance.now();
    for (let c = this.idle.pop(); c !== undefined; c = this.idle.pop()) {
      if (now - c.idleSince <= this.plan.idleReuseMsMax) return c;
      this.drop(c, { kind: 'error' }); // it carries no request: nothing settles
    }
    return undefined;
  }

  private open(): Connection {
    const socket = net.connect({ host: this.plan.target.hostname, port: this.plan.port });
    socket.setNoDelay(true);
    const c: Connection = { socket, framer: new ResponseFramer(), request: -1, idleSince: 0 };
    this.live.add(c);
    socket.on('data', (chunk: Buffer) => this.receive(c, chunk));
    socket.on('error', () => this.drop(c, { kind: 'error' }));
    socket.on('close', () => this.drop(c, { kind: 'error' }));
    return c;
  }

  /** Bytes off a connection: settles its request once a whole response is framed. */
  private receive(c: Connection, chunk: Buffer): void {
    c.framer.push(chunk);
    let end: ReturnType<ResponseFramer['next']>;
    try {
      end = c.framer.next();
    } catch {
      this.drop(c, { kind: 'error' });
      return;
    }
    if (end === null) return;
    const i = c.request;
    if (i < 0) {
      this.drop(c, { kind: 'error' });
      return;
    }
    c.request = -1;
    this.settle(i, { kind: 'answered', status: end.status });
    if (end.close) this.drop(c, { kind: 'error' });
    else this.release(c);
  }

  private release(c: Connection): void {
    const i = this.takeWaiting();
    if (i === undefined) {
      c.idleSince = performance.now();
      this.idle.push(c);
    } else this.carry(c, i);
  }

  /** Drops a connection (a socket error, the server closing it, a bad response, a timeout), failing its request. */
  private drop(c: Connection, outcome: Outcome): void {
    if (!this.live.delete(c)) return;
    const at = this.idle.indexOf(c);
    if (at >= 0) this.idle.splice(at, 1);
    c.socket.destroy();
    const i = c.request;
    c.request = -1;
    if (i >= 0) this.settle(i, outcome);
    // A request waiting for a connection may open a new one now.
    while (this.live.size < this.plan.socketsMax) {
      const next = this.takeWaiting();
      if (next === undefined) break;
      this.carry(this.open(), next);
    }
  }

  /** The next request waiting for a connection that is not past its timeout. */
  private takeWaiting(): number | undefined {
    this.expireWaiting();
    return this.waiting.shift();
  }

  /** Settles as timeouts the waiting requests already past theirs (the oldest wait first). */
  private expireWaiting(): void {
    const late = performance.now() - this.plan.timeoutMs;
    while (this.waiting.length > 0 && this.dueAt(this.waiting[0] as number) < late)
      this.settle(this.waiting.shift() as number, { kind: 'timeout' });
  }

  private sweep(): void {
    this.expireWaiting();
    const late = performance.now() - this.plan.timeoutMs;
    for (const [i, c] of [...this.sent]) {
      if (this.dueAt(i) >= late) continue;
      // Dropping a live connection settles its request; one on a connection already gone is settled here.
      if (this.live.has(c)) this.drop(c, { kind: 'timeout' });
      else this.settle(i, { kind: 'timeout' });
    }
  }

  private settle(i: number, outcome: Outcome): void {
    this.sent.delete(i);
    const now = performance.now();
    this.latencies[i] = now - this.dueAt(i);
    this.spec.onSettle?.(this.dueAt(i), now - this.dueAt(i), outcome.kind === 'answered' ? outcome.status : outcome.kind);
    if (outcome.kind === 'answered') {
      this.statusCodes[String(outcome.status)] = (this.statusCodes[String(outcome.status)] ?? 0) + 1;
      if (outcome.status >= 200 && outcome.status < 300) this.answered2xx++;
    } else if (outcome.kind === 'timeout') {
      this.errors++;
      this.timeouts++;
    } else {
      this.errors++;
    }
    if (++this.finished === this.plan.scheduled) this.finish(now);
  }

  private finish(now: number): void {
    clearInterval(this.sweeper);
    for (const c of this.live) c.socket.destroy();
    const { errors, timeouts, answered2xx } = this;
    this.resolve(
      summarise(this.spec, this.plan.scheduled, this.latencies, this.lags, this.statusCodes, {
        errors,
        timeouts,
        answered2xx,
        elapsedMs: now - this.start,
      }),
    );
  }
}

function summarise(
  spec: FixedRateSpec,
  scheduled: number,
  latencies: Float64Array,
  lags: Float64Array,
  statusCodes: Record<string, number>,
  n: { errors: number; timeouts: number; answered2xx: number; elapsedMs: number },
): FixedRateFigures {
  const ms = (x: number): number => Math.round(x * 10) / 10;
  latencies.sort();
  lags.sort();
  const answered = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  const mean = latencies.reduce((a, b) => a + b, 0) / Math.max(latencies.length, 1);
  const durationS = Math.max(n.elapsedMs / 1000, 0.001);
  return {
    ratePerSecond: spec.ratePerSecond,
    offeredS: spec.durationS,
    scheduled,
    durationS: Math.round(durationS * 100) / 100,
    answered,
    answered2xx: n.answered2xx,
    achievedPerSecond: round1(n.answered2xx / durationS),
    latencyMs: {
      p50: ms(quantile(latencies, 0.5)),
      p99: ms(quantile(latencies, 0.99)),
      p99_9: ms(quantile(latencies, 0.999)),
      mean: ms(mean),
      max: ms(quantile(latencies, 1)),
    },
    sendLagMs: { p99: ms(quantile(lags, 0.99)), max: ms(quantile(lags, 1)) },
    errors: n.errors,
    timeouts: n.timeouts,
    non2xx: answered - n.answered2xx,
    statusCodes,
  };
}
