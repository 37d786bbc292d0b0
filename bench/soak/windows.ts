// The soak's answers, cut into the sampling windows: each window's latencies (of 2xx answers) for
// its p50 and p99, and its errors, counted apart when they belong to the restart. A request
// belongs to the restart when it was due, or settled, between the kill and the first /readyz 200:
// the ones in flight at the kill fail then, and the ones due while the service is down fail at
// once. Everything else is the steady state, where the issue wants no error at all.

import { quantile, round1 } from '../load/closed-loop.js';

export type WindowFigures = {
  /** 2xx answers settled in the window, and their latency from when each was due. */
  readonly answered2xx: number;
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** Non-2xx answers, timeouts and failed connections, outside the restart and during it. */
  readonly errors: number;
  readonly restartErrors: number;
};

type Span = { readonly fromMs: number; toMs: number };

export class SoakWindows {
  private current: number[] = [];
  private errors = 0;
  private restartErrors = 0;
  /** Every closed window's sorted latencies, kept for the quarters' p99. */
  private readonly closed: Float64Array[] = [];
  private restart: Span | null = null;
  /** Statuses (and `timeout`, `error`) over the whole run, steady state and restart together. */
  readonly outcomes: Record<string, number> = {};

  /** The open loop's hook (FixedRateSpec.onSettle). */
  readonly onSettle = (dueMs: number, latencyMs: number, outcome: number | 'timeout' | 'error'): void => {
    const key = String(outcome);
    this.outcomes[key] = (this.outcomes[key] ?? 0) + 1;
    if (typeof outcome === 'number' && outcome >= 200 && outcome < 300) {
      this.current.push(latencyMs);
      return;
    }
    if (this.inRestart(dueMs) || this.inRestart(dueMs + latencyMs)) this.restartErrors++;
    else this.errors++;
  };

  /** The kill is about to be sent (performance.now() time). */
  restartBegins(atMs: number): void {
    this.restart = { fromMs: atMs, toMs: Number.POSITIVE_INFINITY };
  }

  /** The restarted service answered /readyz 200. */
  restartEnds(atMs: number): void {
    if (this.restart !== null) this.restart.toMs = atMs;
  }

  private inRestart(atMs: number): boolean {
    return this.restart !== null && atMs >= this.restart.fromMs && atMs <= this.restart.toMs;
  }

  /** Closes the window: its figures, and its latencies kept for `p99Over`. */
  take(): WindowFigures {
    const latencies = Float64Array.from(this.current).sort();
    this.closed.push(latencies);
    const figures: WindowFigures = {
      answered2xx: latencies.length,
      p50Ms: latencies.length === 0 ? null : round1(quantile(latencies, 0.5)),
      p99Ms: latencies.length === 0 ? null : round1(quantile(latencies, 0.99)),
      errors: this.errors,
      restartErrors: this.restartErrors,
    };
    this.current = [];
    this.errors = 0;
    this.restartErrors = 0;
    return figures;
  }

  /** The p99 of every answer in the windows [from, to) (indices of `take`'s calls), or null when none. */
  p99Over(from: number, to: number): number | null {
    const parts = this.closed.slice(from, to);
    const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    return all.length === 0 ? null : round1(quantile(all.sort(), 0.99));
  }
}
