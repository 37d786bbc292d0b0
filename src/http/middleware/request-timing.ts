// Times each request once. The outermost middleware reads the clock when a request comes in and
// when its answer is ready, and hands that one duration to every listener the request's
// middlewares registered on the way in: the access-log line, the latency histogram, the
// console's transfer pulse. A listener registered by a middleware the request never reached
// (a drained stop, a refused body) is never told, so each consumer counts the requests it did.

import { performance } from 'node:perf_hooks';
import type { Context, MiddlewareHandler } from 'hono';

type Listener = (durationMs: number) => void;
type TimedEnv = { Variables: { timedListeners?: Listener[] } };

export function requestTiming(): MiddlewareHandler {
  return async function requestTiming(c, next) {
    const started = performance.now();
    const listeners: Listener[] = [];
    (c as unknown as Context<TimedEnv>).set('timedListeners', listeners);
    await next();
    const durationMs = performance.now() - started;
    for (const listener of listeners) listener(durationMs);
  };
}

/** Tells `listener` the request's duration once it is answered; nothing without requestTiming outside. */
export function onTimed(c: Context, listener: Listener): void {
  (c as unknown as Context<TimedEnv>).var.timedListeners?.push(listener);
}
