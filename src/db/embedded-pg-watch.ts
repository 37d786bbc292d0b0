// Keeps the embedded PostgreSQL running. pg_ctl starts the postmaster in its
// own session, so it is not our child and its death sends us no event. The watcher learns of it
// two ways: an event when one is available (the owner connection closed: `check()`), and
// otherwise a poll of the postmaster's pid every POSTMASTER_POLL_INTERVAL_MS. A postmaster that is
// gone is started again through the same steps as the first start, with capped exponential
// backoff between attempts (its orphaned backends may hold the shared memory for a moment, and
// PostgreSQL then refuses to start), each attempt logged, until it runs or the watcher stops.
// A stop on purpose stops the watcher first, and waits for an attempt under way: nothing is
// restarted once a stop has begun.

import { setTimeout as delay } from 'node:timers/promises';
import type { EmbeddedPg } from './embedded-pg.js';
import { RESTART_BACKOFF_BASE_MS } from '../limits.js';

/** How often the postmaster's pid is checked when no event says it died. */
const POSTMASTER_POLL_INTERVAL_MS = 500;

type PgWatchEvents = {
  /** The postmaster is gone; a restart follows. */
  readonly onDown: () => void;
  /** It runs again after `attempts` attempts. */
  readonly onUp: (attempts: number) => void;
  readonly log: {
    readonly info: (message: string, fields?: Record<string, unknown>) => void;
    readonly error: (message: string, fields?: Record<string, unknown>) => void;
  };
};

export type PgWatch = {
  /** Checks now, as after an event that hints the server died (a connection closed). */
  readonly check: () => void;
  /** Stops watching; resolves once no restart attempt is under way. */
  readonly stop: () => Promise<void>;
};

export function watchEmbeddedPg(
  pg: Pick<EmbeddedPg, 'postmasterPid' | 'restart'>,
  opts: { readonly backoffCapMs: number } & PgWatchEvents,
): PgWatch {
  let stopped = false;
  let checking: Promise<void> | null = null;
  const abort = new AbortController();

  const restartUntilUp = async (): Promise<void> => {
    opts.onDown();
    for (let attempt = 1; !stopped; attempt++) {
      opts.log.info('restarting the embedded PostgreSQL', { attempt });
      const error = await pg.restart().then(
        () => null,
        (e: unknown) => e,
      );
      if (error === null) {
        opts.log.info('the embedded PostgreSQL runs again', { attempt });
        opts.onUp(attempt);
        return;
      }
      const waitMs = Math.min(opts.backoffCapMs, RESTART_BACKOFF_BASE_MS * 2 ** Math.min(attempt - 1, 20));
      opts.log.error('the embedded PostgreSQL did not start; trying again', {
        attempt,
        wait_ms: waitMs,
        error: String(error).split('\n').slice(0, 4).join(' | '),
      });
      await delay(waitMs, undefined, { signal: abort.signal }).catch(() => undefined);
    }
  };

  const check = (): void => {
    if (stopped || checking !== null) return;
    checking = (async () => {
      if ((await pg.postmasterPid()) !== null || stopped) return;
      opts.log.error('the embedded PostgreSQL server is gone (its postmaster exited): restarting it');
      await restartUntilUp();
    })()
      .catch((error: unknown) => opts.log.error('watching the embedded PostgreSQL failed', { error: String(error) }))
      .finally(() => {
        checking = null;
      });
  };

  const timer = setInterval(check, POSTMASTER_POLL_INTERVAL_MS);
  timer.unref();
  return {
    check,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      abort.abort();
      await checking;
    },
  };
}
