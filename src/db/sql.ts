// One way to open PostgreSQL: postgres.js with BIGINT read and written as JS bigint, so an
// amount never passes through a JS number.

import postgres from 'postgres';

export type Sql = postgres.Sql<{ bigint: bigint }>;
export type Tx = postgres.TransactionSql<{ bigint: bigint }>;

/**
 * How long any wait on PostgreSQL may last (issue 12: bounded waits), set on every connection of
 * the service's pools. A statement or lock wait cut short is an error of SQLSTATE class 57 or 55:
 * an unknown outcome, retried like a lost connection, never taken as a refusal (src/db/batch.ts).
 */
export type PgTimeouts = {
  readonly statementMs: number;
  readonly lockMs: number;
  readonly idleInTransactionMs: number;
};

/**
 * How long a pool waits, at most, before it tries to connect again after failed attempts.
 * postgres.js waits 3^n / 100 s after n failed connects, up to 20 s, and every query waits with
 * it: after a long outage a pool would come back up to 20 s after the server. Here the wait
 * doubles from RECONNECT_BACKOFF_BASE_MS and stops at this cap, so every pool reconnects within
 * about a second of the server answering again (a refused connect costs the server nothing).
 */
export const RECONNECT_BACKOFF_CAP_MS = 1_000;
const RECONNECT_BACKOFF_BASE_MS = 50;

/** postgres.js's `backoff` option: seconds to wait after `retries` failed connects. */
export function reconnectBackoffS(retries: number): number {
  return Math.min(RECONNECT_BACKOFF_CAP_MS, RECONNECT_BACKOFF_BASE_MS * 2 ** Math.min(retries, 20)) / 1000;
}

export function openSql(url: string, opts: { max: number; application: string; timeouts?: PgTimeouts }): Sql {
  const t = opts.timeouts;
  return postgres(url, {
    max: opts.max,
    types: { bigint: postgres.BigInt },
    onnotice: () => undefined,
    idle_timeout: 0,
    connect_timeout: 10,
    backoff: reconnectBackoffS,
    connection: {
      application_name: opts.application,
      ...(t === undefined
        ? {}
        : { statement_timeout: t.statementMs, lock_timeout: t.lockMs, idle_in_transaction_session_timeout: t.idleInTransactionMs }),
    },
  });
}
