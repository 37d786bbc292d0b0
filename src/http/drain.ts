// Drained shutdown. Once a stop begins, every new request is answered 503 at
// once and /readyz says so, while the requests already in flight run to their answer; the stop
// waits for them, up to a bound. Every answer given while draining, 503 or not, carries
// `Connection: close`, so a keep-alive client sends nothing more on that connection and goes
// elsewhere, instead of sending a request the closing listener would reset.

import type { MiddlewareHandler } from 'hono';
import { errorBody } from './errors.js';

const POLL_MS = 10;

/** What `idle` waits for besides the requests: the connections still open, and how long to wait for them. */
export type Settle = { readonly openConnections: () => number; readonly settleMs: number };

export class Drain {
  private draining = false;
  private startedAt = 0;
  private inFlight = 0;

  get requestsInFlight(): number {
    return this.inFlight;
  }

  /** Counts every request, turns the new ones away once draining, and closes every connection answered while draining. */
  readonly middleware: MiddlewareHandler = async (c, next) => {
    if (this.draining) return c.json({ ...errorBody('SERVICE_UNAVAILABLE'), draining: true }, 503, { connection: 'close' });
    this.inFlight++;
    try {
      await next();
    } finally {
      this.inFlight--;
    }
    if (this.draining) c.header('connection', 'close');
  };

  start(): void {
    this.draining = true;
    this.startedAt = Date.now();
  }

  /**
   * Resolves true once no request is in flight and either no connection is open or
   * `settle.settleMs` has passed since the drain began (a request already on the wire then had
   * the time to be read and answered); false when `ms` passed first.
   */
  async idle(ms: number, settle: Settle): Promise<boolean> {
    const deadline = this.startedAt + ms;
    const settled = this.startedAt + Math.min(settle.settleMs, ms);
    for (;;) {
      const now = Date.now();
      if (this.inFlight === 0 && (settle.openConnections() === 0 || now >= settled)) return true;
      if (now >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  }
}
