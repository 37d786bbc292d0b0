// One way to open PostgreSQL: postgres.js with BIGINT read and written as JS bigint, so an
// amount never passes through a JS number.

import postgres from 'postgres';
import {
  PG_CLIENT_KEEPALIVE_S,
  PG_TCP_KEEPALIVES_COUNT_MAX,
  PG_TCP_KEEPALIVES_IDLE_S,
  PG_TCP_KEEPALIVES_INTERVAL_S,
  PG_TCP_USER_TIMEOUT_MS,
  RECONNECT_BACKOFF_BASE_MS,
  RECONNECT_BACKOFF_CAP_MS,
  RECONNECT_BACKOFF_EXPONENT_MAX,
} from '../limits.js';

export type Sql = postgres.Sql<{ bigint: bigint }>;
export type Tx = postgres.TransactionSql<{ bigint: bigint }>;

/**
 * How long any wait on PostgreSQL may last (a wait without a bound would hang a request, and the process, forever), set on every connection of
 * the service's pools. A statement or lock wait cut short is an error of SQLSTATE class 57 or 55:
 * an unknown outcome, retried like a lost connection, never taken as a refusal (src/db/batch.ts).
 */
export type PgTimeouts = {
  readonly statementMs: number;
  readonly lockMs: number;
  readonly idleInTransactionMs: number;
};

/** postgres.js's `backoff` option: seconds to wait after `retries` failed connects. */
export function reconnectBackoffS(retries: number): number {
  return Math.min(RECONNECT_BACKOFF_CAP_MS, RECONNECT_BACKOFF_BASE_MS * 2 ** Math.min(retries, RECONNECT_BACKOFF_EXPONENT_MAX)) / 1000;
}

/**
 * Who a connection writes for. `tag` names the owning process at the front of the
 * connection's application_name, so a standby taking over from a hung owner can end every session
 * of that process; `epoch` is the owner epoch the fence of migration 0010 checks on every write of
 * money (`standby`: a connection that may write nothing).
 */
export type PgOwnerIdentity = { readonly tag: string; readonly epoch: number | 'standby' };

/**
 * The server-side TCP bounds every session carries (startup parameters, as application_name):
 * a process cut off from PostgreSQL loses its sessions, and every lock they hold, within seconds.
 * On a Unix socket the server ignores them.
 */
export const SESSION_TCP_BOUNDS = {
  tcp_keepalives_idle: PG_TCP_KEEPALIVES_IDLE_S,
  tcp_keepalives_interval: PG_TCP_KEEPALIVES_INTERVAL_S,
  tcp_keepalives_count: PG_TCP_KEEPALIVES_COUNT_MAX,
  tcp_user_timeout: PG_TCP_USER_TIMEOUT_MS,
} as const;

/** postgres.js's `keep_alive`: the client's socket keepalive, in seconds. */
export const CLIENT_KEEPALIVE_S = PG_CLIENT_KEEPALIVE_S;

/** application_name is cut by the server at 63 bytes: the tag stays whole in front. */
const APPLICATION_NAME_BYTES_MAX = 63;

export function openSql(url: string, opts: { max: number; application: string; timeouts?: PgTimeouts; owner?: PgOwnerIdentity }): Sql {
  const t = opts.timeouts;
  const owner = opts.owner;
  return postgres(url, {
    max: opts.max,
    types: { bigint: postgres.BigInt },
    onnotice: () => undefined,
    idle_timeout: 0,
    connect_timeout: 10,
    backoff: reconnectBackoffS,
    keep_alive: CLIENT_KEEPALIVE_S,
    connection: {
      ...SESSION_TCP_BOUNDS,
      application_name: (owner === undefined ? opts.application : `${owner.tag} ${opts.application}`).slice(0, APPLICATION_NAME_BYTES_MAX),
      ...(owner === undefined ? {} : { 'transfer.owner_epoch': String(owner.epoch) }),
      ...(t === undefined
        ? {}
        : { statement_timeout: t.statementMs, lock_timeout: t.lockMs, idle_in_transaction_session_timeout: t.idleInTransactionMs }),
    },
  });
}
