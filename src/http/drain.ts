// Drained shutdown (issue 12 item 5). Once a stop begins, every new request is answered 503 at
// once (with `Connection: close`, so keep-alive clients go elsewhere) and /readyz says so, while
// the requests already in flight run to their answer; the stop waits for them, up to a bound.

import type { MiddlewareHandler } from 'hono';
import { errorBody } from './errors.js';

const POLL_MS = 10;

export class Drain {
  private draining = false;
  private inFlight = 0;

  get requestsInFlight(): number {
    return this.inFlight;
  }

  /** Counts every request, and turns the new ones away once draining. */
  readonly middleware: MiddlewareHandler = async (c, next) => {
    if (this.draining) return c.json({ ...errorBody('SERVICE_UNAVAILABLE'), draining: true }, 503, { connection: 'close' });
    this.inFlight++;
    try {
      await next();
    } finally {
      this.inFlight--;
    }
  };

  start(): void {
    this.draining = true;
  }

  /** Resolves true once no request is in flight, or false when `ms` passed first. */
  async idle(ms: number): Promise<boolean> {
    const deadline = Date.now() + ms;
    while (this.inFlight > 0) {
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    return true;
  }
}
