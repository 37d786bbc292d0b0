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

/** One keep-alive socket and the request it carries (-1 when idle). */
type Connection = { readonly socket: net.Socket; readonly framer: ResponseFramer; request: number };

export function runFixedRate(spec: FixedRateSpec): Promise<FixedRateFigures> {
  if (!(spec.ratePerSecond > 0) || !(spec.durationS > 0))
    throw new Error(`runFixedRate: rate and duration must be positive, got ${spec.ratePerSecond}/s for ${spec.durationS} s`);
  const target = new URL(spec.url);
  if (target.protocol !== 'http:') throw new Error(`runFixedRate: only http: URLs, got ${spec.url}`);
  const port = Number(target.port || 80);
  const socketsMax = spec.socketsMax ?? FIXED_RATE_SOCKETS_MAX;
  const timeoutMs = spec.timeoutMs ?? FIXED_RATE_TIMEOUT_MS;
  const scheduled = Math.max(1, Math.round(spec.ratePerSecond * spec.durationS));
  const intervalMs = 1000 / spec.ratePerSecond;
  // In flight at once is bounded by construction: rate × timeoutMs.
  const latencies = new Float64Array(scheduled);
  const lags = new Float64Array(scheduled);
  const statusCodes: Record<string, number> = {};
  /** Connections open and usable; a dropped one leaves for good. */
  const live = new Set<Connection>();
  /** Connections with no request, the most recently used last (reused first, as Node's agent does). */
  const idle: Connection[] = [];
  /** Requests due while every connection was busy, in due order. */
  const waiting: number[] = [];
  /** Requests sent and not yet settled, with their connection: the sweeper times out each of them, whatever became of it. */
  const sent = new Map<number, Connection>();
  let finished = 0;
  let errors = 0;
  let timeouts = 0;
  let answered2xx = 0;
  return new Promise((resolve) => {
    const start = performance.now();
    const dueAt = (i: number): number => start + i * intervalMs;
    const settle = (i: number, outcome: Outcome): void => {
      sent.delete(i);
      const now = performance.now();
      latencies[i] = now - dueAt(i);
      if (outcome.kind === 'answered') {
        statusCodes[String(outcome.status)] = (statusCodes[String(outcome.status)] ?? 0) + 1;
        if (outcome.status >= 200 && outcome.status < 300) answered2xx++;
      } else if (outcome.kind === 'timeout') {
        errors++;
        timeouts++;
      } else {
        errors++;
      }
      if (++finished === scheduled) {
        clearInterval(sweeper);
        for (const c of live) c.socket.destroy();
        resolve(summarise(spec, scheduled, latencies, lags, statusCodes, { errors, timeouts, answered2xx, elapsedMs: now - start }));
      }
    };
    /** Drops a connection (a socket error, the server closing it, a bad response, a timeout), failing its request. */
    const drop = (c: Connection, outcome: Outcome): void => {
      if (!live.delete(c)) return;
      const at = idle.indexOf(c);
      if (at >= 0) idle.splice(at, 1);
      c.socket.destroy();
      const i = c.request;
      c.request = -1;
      if (i >= 0) settle(i, outcome);
      // A request waiting for a connection may open a new one now.
      while (live.size < socketsMax) {
        const next = takeWaiting();
        if (next === undefined) break;
        carry(open(), next);
      }
    };
    const open = (): Connection => {
      const socket = net.connect({ host: target.hostname, port });
      socket.setNoDelay(true);
      const c: Connection = { socket, framer: new ResponseFramer(), request: -1 };
      live.add(c);
      socket.on('data', (chunk: Buffer) => {
        c.framer.push(chunk);
        let end: ReturnType<ResponseFramer['next']>;
        try {
          end = c.framer.next();
        } catch {
          drop(c, { kind: 'error' });
          return;
        }
        if (end === null) return;
        const i = c.request;
        if (i < 0) {
          drop(c, { kind: 'error' });
          return;
        }
        c.request = -1;
        settle(i, { kind: 'answered', status: end.status });
        if (end.close) drop(c, { kind: 'error' });
        else release(c);
      });
      socket.on('error', () => drop(c, { kind: 'error' }));
      socket.on('close', () => drop(c, { kind: 'error' }));
      return c;
    };
    const carry = (c: Connection, i: number): void => {
      const r = spec.request();
      c.request = i;
      sent.set(i, c);
      c.socket.write(requestBytes(target.host, 'POST', r.path, r.headers, r.body));
    };
    /** Settles as timeouts the waiting requests already past theirs (the oldest wait first). */
    const expireWaiting = (): void => {
      const late = performance.now() - timeoutMs;
      while (waiting.length > 0 && dueAt(waiting[0] as number) < late) settle(waiting.shift() as number, { kind: 'timeout' });
    };
    /** The next request waiting for a connection that is not past its timeout. */
    const takeWaiting = (): number | undefined => {
      expireWaiting();
      return waiting.shift();
    };
    const release = (c: Connection): void => {
      const i = takeWaiting();
      if (i === undefined) idle.push(c);
      else carry(c, i);
    };
    const send = (i: number): void => {
      lags[i] = Math.max(0, performance.now() - dueAt(i));
      const c = idle.pop();
      if (c !== undefined) carry(c, i);
      else if (live.size < socketsMax) carry(open(), i);
      else waiting.push(i);
    };
    const sweeper = setInterval(() => {
      expireWaiting();
      const late = performance.now() - timeoutMs;
      for (const [i, c] of [...sent]) {
        if (dueAt(i) >= late) continue;
        // Dropping a live connection settles its request; one on a connection already gone is settled here.
        if (live.has(c)) drop(c, { kind: 'timeout' });
        else settle(i, { kind: 'timeout' });
      }
    }, SWEEP_MS);
    let next = 0;
    const tick = (): void => {
      const due = Math.min(scheduled, Math.floor((performance.now() - start) / intervalMs) + 1);
      while (next < due) send(next++);
      if (next < scheduled) setTimeout(tick, TICK_MS);
    };
    tick();
  });
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
