// autocannon as a promise, and the figures the report keeps from each run. The load generator
// runs in the benchmark's own process for every target, so the service and the HTTP ceiling
// share the machine with the same client.

import autocannon from 'autocannon';

export type LatencyMs = { readonly p50: number; readonly p99: number; readonly p99_9: number; readonly mean: number; readonly max: number };

export type LoadFigures = {
  readonly connections: number;
  readonly durationS: number;
  /** Answers of any status received within the run. */
  readonly responses: number;
  readonly responsesPerSecond: number;
  /** autocannon records latency for 2xx answers only. */
  readonly latencyMs: LatencyMs;
  readonly errors: number;
  readonly timeouts: number;
  readonly non2xx: number;
  readonly statusCodes: Readonly<Record<string, number>>;
};

export type LoadSpec = {
  readonly url: string;
  readonly connections: number;
  readonly durationS: number;
  readonly requests: readonly autocannon.RequestSpec[];
};

/** A client with no answer in this long counts as a timeout, not a latency sample. */
const REQUEST_TIMEOUT_S = 10;

export function runLoad(spec: LoadSpec): Promise<LoadFigures> {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: spec.url, connections: spec.connections, duration: spec.durationS, timeout: REQUEST_TIMEOUT_S, requests: spec.requests },
      (error, result) => (error !== null ? reject(error) : resolve(figures(spec, result))),
    );
  });
}

function figures(spec: LoadSpec, r: autocannon.Result): LoadFigures {
  const statusCodes: Record<string, number> = {};
  for (const [code, stat] of Object.entries(r.statusCodeStats)) statusCodes[code] = Number(stat.count);
  const responses = Object.values(statusCodes).reduce((a, b) => a + b, 0);
  return {
    connections: spec.connections,
    durationS: r.duration,
    responses,
    responsesPerSecond: round1(responses / Math.max(r.duration, 0.001)),
    latencyMs: { p50: r.latency.p50, p99: r.latency.p99, p99_9: r.latency.p99_9, mean: round1(r.latency.average), max: r.latency.max },
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
    statusCodes,
  };
}

export function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** Value at quantile q of ascending `xs` (nearest rank). */
export function quantile(xs: ArrayLike<number>, q: number): number {
  if (xs.length === 0) return 0;
  return xs[Math.min(xs.length - 1, Math.max(0, Math.ceil(q * xs.length) - 1))] ?? 0;
}
