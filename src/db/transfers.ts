// transfers_tb access. Every state change is one statement: a compare-and-swap on the expected
// state joined with the history row it produces, so the history never disagrees with the state.

import type { NewTransfer, TransferView } from '../coordinator/types.js';
import { STATE_IDS, stateName, type TransferEvent, type TransferStateName } from '../domain/fsm.js';
import type { AccountKind } from '../domain/types.js';
import type { Sql } from './sql.js';

const SOURCE_TYPE: Readonly<Record<AccountKind, number>> = { FUNDING: 1, SPOT: 2 };
const KIND_BY_TYPE: ReadonlyMap<number, AccountKind> = new Map([
  [1, 'FUNDING'],
  [2, 'SPOT'],
]);

export type NewTransferRow = NewTransfer;

type Row = {
  transfer_id: bigint;
  req_id: string;
  user_id: bigint;
  asset: string;
  amount: bigint;
  source_type: number;
  target_type: number;
  state: number;
  error_code: string | null;
  retry_count: number;
  attempts: number;
  created_at: Date;
  updated_at: Date;
};

export type ListQuery = {
  readonly userId: bigint;
  readonly beforeId: bigint | null;
  readonly asset: string | null;
  readonly state: TransferStateName | null;
  readonly fromTime: Date | null;
  readonly toTime: Date | null;
  readonly limit: number;
};

export type CreateOutcome =
  | { readonly kind: 'created'; readonly view: TransferView }
  | { readonly kind: 'existing'; readonly view: TransferView }
  | { readonly kind: 'duplicate' };

export type HistoryEntry = {
  readonly from: TransferStateName | null;
  readonly to: TransferStateName;
  readonly event: string;
  readonly detail: string | null;
  readonly at: string;
};

export class TransferStore {
  constructor(private readonly sql: Sql) {}

  /**
   * Creates the transfer in INIT with its first history row, in one statement. `dueNow` marks it
   * due at once for the recovery scan (no coordinator took it). Answers null when the user's
   * client_order_id is already taken (a concurrent twin won the race).
   */
  async insert(t: NewTransferRow, dueNow = false): Promise<TransferView | null> {
    const rows = await this.sql<Row[]>`
      WITH created AS (
        INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state, client_order_id, next_retry_at)
        VALUES (${t.reqId}, ${t.userId}, ${t.asset}, ${t.amount}, ${t.from === 'FUNDING' ? 1 : 2},
                ${SOURCE_TYPE[t.from]}, ${SOURCE_TYPE[t.to]}, ${STATE_IDS.INIT}, ${t.clientOrderId}, ${dueNow ? new Date() : null})
        RETURNING *),
      history AS (
        INSERT INTO transfer_state_history (req_id, from_state, to_state, event)
        SELECT req_id, NULL, ${STATE_IDS.INIT}, 'CREATED' FROM created)
      SELECT * FROM created`.catch((error: unknown) => {
      if (isUniqueViolation(error, CLIENT_ORDER_ID_CONSTRAINT)) return null;
      throw error;
    });
    return rows === null ? null : toView(only(rows));
  }

  /**
   * Client idempotency (spec 001 §1.5.7): a transfer with a client_order_id the user already
   * used answers the original when the request is the same, DUPLICATE otherwise; else creates.
   */
  async create(t: NewTransferRow, dueNow = false): Promise<CreateOutcome> {
    for (;;) {
      if (t.clientOrderId !== null) {
        const existing = await this.byClientOrderId(t.userId, t.clientOrderId);
        if (existing !== null) return sameRequest(existing, t) ? { kind: 'existing', view: existing } : { kind: 'duplicate' };
      }
      const view = await this.insert(t, dueNow);
      if (view !== null) return { kind: 'created', view };
      // Lost a client_order_id race: the next turn finds the winner.
    }
  }

  async byClientOrderId(userId: bigint, clientOrderId: string): Promise<TransferView | null> {
    const rows = await this.sql<Row[]>`SELECT * FROM transfers_tb WHERE user_id = ${userId} AND client_order_id = ${clientOrderId}`;
    return rows.length === 0 ? null : toView(only(rows));
  }

  async get(reqId: string): Promise<TransferView | null> {
    const rows = await this.sql<Row[]>`SELECT * FROM transfers_tb WHERE req_id = ${reqId}`;
    return rows.length === 0 ? null : toView(only(rows));
  }

  /**
   * Moves `reqId` from `from` to `to` only if it is still in `from`. Returns false when another
   * driver moved it first; the caller re-reads and continues from what it finds.
   */
  async compareAndSwap(
    reqId: string,
    from: TransferStateName,
    to: TransferStateName,
    event: TransferEvent,
    errorCode: string | null = null,
  ): Promise<boolean> {
    const rows = await this.sql`
      WITH moved AS (
        UPDATE transfers_tb
           SET state = ${STATE_IDS[to]}, updated_at = now(), next_retry_at = NULL, attempts = 0,
               error_code = COALESCE(${errorCode}, error_code)
         WHERE req_id = ${reqId} AND state = ${STATE_IDS[from]}
        RETURNING req_id)
      INSERT INTO transfer_state_history (req_id, from_state, to_state, event, detail)
      SELECT req_id, ${STATE_IDS[from]}, ${STATE_IDS[to]}, ${event}, ${errorCode} FROM moved
      RETURNING req_id`;
    return rows.length === 1;
  }

  /** Records an unknown outcome: the transfer stays where it is and is retried later. */
  async noteRetry(reqId: string, state: TransferStateName, reason: string, nextRetryAt: Date): Promise<void> {
    await this.sql`
      UPDATE transfers_tb
         SET retry_count = retry_count + 1, attempts = attempts + 1, error_message = ${reason.slice(0, 500)}, next_retry_at = ${nextRetryAt}
       WHERE req_id = ${reqId} AND state = ${STATE_IDS[state]}`;
  }

  /**
   * One user's transfers, newest first, after the keyset cursor `beforeId`. New transfers get
   * higher ids, so they never shift the pages a client is walking through.
   */
  async list(q: ListQuery): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT * FROM transfers_tb
       WHERE user_id = ${q.userId}
         ${q.beforeId === null ? this.sql`` : this.sql`AND transfer_id < ${q.beforeId}`}
         ${q.asset === null ? this.sql`` : this.sql`AND asset = ${q.asset}`}
         ${q.state === null ? this.sql`` : this.sql`AND state = ${STATE_IDS[q.state]}`}
         ${q.fromTime === null ? this.sql`` : this.sql`AND created_at >= ${q.fromTime}`}
         ${q.toTime === null ? this.sql`` : this.sql`AND created_at < ${q.toTime}`}
       ORDER BY transfer_id DESC
       LIMIT ${q.limit}`;
    return rows.map(toView);
  }

  async history(reqId: string): Promise<HistoryEntry[]> {
    const rows = await this.sql<{ from_state: number | null; to_state: number; event: string; detail: string | null; at: Date }[]>`
      SELECT from_state, to_state, event, detail, at FROM transfer_state_history WHERE req_id = ${reqId} ORDER BY id`;
    return rows.map((r) => ({
      from: r.from_state === null ? null : mustState(r.from_state),
      to: mustState(r.to_state),
      event: r.event,
      detail: r.detail,
      at: r.at.toISOString(),
    }));
  }

  /**
   * Non-terminal transfers of one shard that are due: untouched for `staleMs` (spec 001 §6.2),
   * or whose next retry time has come (a retry no timer holds, a transfer created while the
   * shard's mailbox was full). Oldest first.
   */
  async due(shard: number, shards: number, staleMs: number, limit: number): Promise<string[]> {
    const rows = await this.sql<{ req_id: string }[]>`
      SELECT req_id FROM (
        SELECT req_id, updated_at FROM transfers_tb
         WHERE state NOT IN (40, -10, -30) AND updated_at < now() - make_interval(secs => ${staleMs / 1000})
           AND user_id % ${shards} = ${shard}
        UNION
        SELECT req_id, updated_at FROM transfers_tb
         WHERE state NOT IN (40, -10, -30) AND next_retry_at <= now() AND user_id % ${shards} = ${shard}
      ) AS due ORDER BY updated_at LIMIT ${limit}`;
    return rows.map((r) => r.req_id);
  }

  /** Transfers an operator must look at: not finished after `retriesMax` retries or `ageMs`. */
  async stuck(retriesMax: number, ageMs: number, limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT * FROM transfers_tb
       WHERE state NOT IN (40, -10, -30)
         AND (retry_count >= ${retriesMax} OR created_at < now() - make_interval(secs => ${ageMs / 1000}))
       ORDER BY created_at LIMIT ${limit}`;
    return rows.map(toView);
  }

  /** Non-terminal transfers, oldest first. */
  async unfinished(limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`SELECT * FROM transfers_tb WHERE state NOT IN (40, -10, -30) ORDER BY created_at LIMIT ${limit}`;
    return rows.map(toView);
  }

  /** TARGET_PENDING transfers that entered that state more than `ageMs` ago (MON-001). */
  async targetPendingOlderThan(ageMs: number, limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT * FROM transfers_tb WHERE state = ${STATE_IDS.TARGET_PENDING} AND updated_at < now() - make_interval(secs => ${ageMs / 1000})
       ORDER BY updated_at LIMIT ${limit}`;
    return rows.map(toView);
  }
}

const CLIENT_ORDER_ID_CONSTRAINT = 'transfers_tb_user_id_client_order_id_key';

function isUniqueViolation(error: unknown, constraint: string): boolean {
  const e = error as { code?: unknown; constraint_name?: unknown };
  return e.code === '23505' && e.constraint_name === constraint;
}

function sameRequest(v: TransferView, t: NewTransferRow): boolean {
  return v.userId === t.userId && v.from === t.from && v.to === t.to && v.asset === t.asset && v.amount === t.amount;
}

function only<T>(rows: readonly T[]): T {
  const row = rows[0];
  if (rows.length !== 1 || row === undefined) throw new Error(`expected one row, got ${rows.length}`);
  return row;
}

function mustState(id: number): TransferStateName {
  const name = stateName(id);
  if (name === null) throw new Error(`unknown state id ${id} in the database`);
  return name;
}

function mustKind(type: number): AccountKind {
  const kind = KIND_BY_TYPE.get(type);
  if (kind === undefined) throw new Error(`unknown account type ${type} in the database`);
  return kind;
}

export function toView(row: Row): TransferView {
  return {
    transferId: row.transfer_id.toString(),
    reqId: row.req_id,
    userId: row.user_id,
    from: mustKind(row.source_type),
    to: mustKind(row.target_type),
    asset: row.asset,
    amount: row.amount,
    state: mustState(row.state),
    errorCode: row.error_code,
    retryCount: row.retry_count,
    attempts: row.attempts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
