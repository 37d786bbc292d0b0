// An open-loop load: requests leave on a fixed schedule (one every 1/rate s) whether or not the
// earlier ones were answered, and each latency runs from the time its request was due to leave,
// so a slow answer delays nothing else and every wait it causes is counted. A closed loop
// (autocannon, N connections each waiting for its answer) sends less when the service slows,
// which hides exactly the waits a p99 is meant to show.
//
// autocannon's own `overallRate` is not used: it gives each connection a quota per second, sent
// back to back at the start of each second, and times each request from when it actually left.

import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { round1, type LatencyMs } from './load.js';

/** Connections at most, the largest closed-loop level; beyond them a due request waits in the client, and the wait counts. */
export const FIXED_RATE_SOCKETS_MAX = 256;
/** A request with no answer this long after it was due is abandoned and counted as a timeout. */
const REQUEST_TIMEOUT_MS = 10_000;
/** How often the scheduler wakes to send what has come due. */
const TICK_MS = 1;

export type FixedRateRequest = { readonly path: string; readonly headers: Readonly<Record<string, string>>; readonly body: string };

export type FixedRateSpec = {
  readonly url: string;
  readonly ratePerSecond: number;
  readonly durationS: number;
  /** Builds the next request (called once per request, when it is due). */
  readonly request: () => FixedRateRequest;
  /** Connections at most; FIXED_RATE_SOCKETS_MAX unless told. */
  readonly socketsMax?: number;
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

/** Value at quantile q of ascending `xs` (nearest rank). */
function quantile(xs: Float64Array, q: number): number {
  if (xs.length === 0) return 0;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))] ?? 0;
}

export function runFixedRate(spec: FixedRateSpec): Promise<FixedRateFigures> {
  if (!(spec.ratePerSecond > 0) || !(spec.durationS > 0))
    throw new Error(`runFixedRate: rate and duration must be positive, got ${spec.ratePerSecond}/s for ${spec.durationS} s`);
  const target = new URL(spec.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: spec.socketsMax ?? FIXED_RATE_SOCKETS_MAX });
  const scheduled = Math.max(1, Math.round(spec.ratePerSecond * spec.durationS));
  const intervalMs = 1000 / spec.ratePerSecond;
  // In flight at once is bounded by construction: rate × REQUEST_TIMEOUT_MS.
  const latencies = new Float64Array(scheduled);
  const lags = new Float64Array(scheduled);
  const statusCodes: Record<string, number> = {};
  let finished = 0;
  let errors = 0;
  let timeouts = 0;
  let answered2xx = 0;
  return new Promise((resolve) => {
    const start = performance.now();
    const settle = (i: number, dueAt: number, outcome: Outcome): void => {
      const now = performance.now();
      latencies[i] = now - dueAt;
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
        agent.destroy();
        resolve(summarise(spec, scheduled, latencies, lags, statusCodes, { errors, timeouts, answered2xx, elapsedMs: now - start }));
      }
    };
    const send = (i: number): void => {
      const dueAt = start + i * intervalMs;
      lags[i] = Math.max(0, performance.now() - dueAt);
      const r = spec.request();
      let done = false;
      const end = (outcome: Outcome): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        settle(i, dueAt, outcome);
      };
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: r.path,
          method: 'POST',
          agent,
          headers: { ...r.headers, 'content-length': String(Buffer.byteLength(r.body)) },
        },
        (res) => {
          res.resume();
          res.once('end', () => end({ kind: 'answered', status: res.statusCode ?? 0 }));
          res.once('error', () => end({ kind: 'error' }));
        },
      );
      const timer = setTimeout(
        () => {
          end({ kind: 'timeout' });
          req.destroy();
        },
        Math.max(0, dueAt + REQUEST_TIMEOUT_MS - performance.now()),
      );
      req.once('error', () => end({ kind: 'error' }));
      req.end(r.body);
    };
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
