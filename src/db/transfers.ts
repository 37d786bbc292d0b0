// transfers_tb access. Every state change is one statement: a compare-and-swap on the expected
// state joined with the history row it produces, so the history never disagrees with the state.

import type { NewTransfer, TransferView } from '../coordinator/types.js';
import { shardOfUser } from '../domain/shard.js';
import { isTerminal, STATE_IDS, stateName, type TransferEvent, type TransferStateName } from '../domain/fsm.js';
import type { AccountKind } from '../domain/types.js';
import { Batcher, type BatchSettings } from './batch.js';
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

/** A page of due transfers as read, and the req_id the next page starts after (null: the last page). */
export type DuePage = { readonly transfers: readonly TransferView[]; readonly next: string | null };

export type HistoryEntry = {
  readonly from: TransferStateName | null;
  readonly to: TransferStateName;
  readonly event: string;
  readonly detail: string | null;
  readonly at: string;
};

type Swap = { readonly reqId: string; readonly from: TransferStateName; readonly to: TransferStateName; readonly event: TransferEvent; readonly code: string | null };
type Retry = { readonly reqId: string; readonly state: TransferStateName; readonly reason: string; readonly nextRetryAt: Date };

// Batched statements take their rows as one JSON parameter and find the transfers with
// `req_id = ANY (ARRAY(SELECT …))`: PostgreSQL guesses 100 rows for a JSON set and would join
// it to a small or middling table by scanning the whole table; an array keeps it on the index.
export class TransferStore {
  // Reads and state changes made at the same time by many drives travel as one statement each.
  private readonly reads: Batcher<string, Row | null>;
  private readonly swaps: Batcher<Swap, Date | null>;
  private readonly retries: Batcher<Retry, boolean>;

  constructor(
    private readonly sql: Sql,
    batch: BatchSettings,
  ) {
    this.reads = new Batcher((ids) => this.readMany(ids), batch);
    // One change per transfer per statement: two for the same req_id wait for separate ones.
    this.swaps = new Batcher((swaps) => this.swapMany(swaps), { ...batch, key: (s) => s.reqId });
    this.retries = new Batcher((retries) => this.noteRetryMany(retries), { ...batch, key: (r) => r.reqId });
  }

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
        SELECT req_id, NULL, ${STATE_IDS.INIT}, 'CREATED' FROM created),
      active AS (
        INSERT INTO transfers_active (req_id, user_id) SELECT req_id, user_id FROM created)
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
    const row = await this.reads.call(reqId);
    return row === null ? null : toView(row);
  }

  private async readMany(reqIds: readonly string[]): Promise<(Row | null)[]> {
    const rows = await this.sql<Row[]>`
      SELECT * FROM transfers_tb WHERE req_id = ANY (ARRAY(SELECT json_array_elements_text(${JSON.stringify(reqIds)}::text::json)))`;
    const byId = new Map(rows.map((r) => [r.req_id, r]));
    return reqIds.map((id) => byId.get(id) ?? null);
  }

  /**
   * Moves `reqId` from `from` to `to` only if it is still in `from`, and answers the new
   * updated_at. Answers null when another driver moved it first; the caller re-reads and
   * continues from what it finds.
   */
  async compareAndSwap(
    reqId: string,
    from: TransferStateName,
    to: TransferStateName,
    event: TransferEvent,
    errorCode: string | null = null,
  ): Promise<Date | null> {
    return this.swaps.call({ reqId, from, to, event, code: errorCode });
  }

  /** Many compare-and-swaps, each with its history row, in one statement. */
  private async swapMany(swaps: readonly Swap[]): Promise<(Date | null)[]> {
    // `d`: the move finishes the transfer, so it leaves the unfinished list (the FSM says which).
    const input = JSON.stringify(swaps.map((s) => ({ r: s.reqId, f: STATE_IDS[s.from], t: STATE_IDS[s.to], e: s.event, c: s.code, d: isTerminal(s.to) })));
    // One row back, not one per transfer: every row moved by one statement has the same
    // updated_at (the transaction's now()), and the moved req_ids come as one text.
    const rows = await this.sql<{ at: Date; ids: string | null }[]>`
      WITH input AS (
        SELECT * FROM json_to_recordset(${input}::text::json) AS x(r text, f smallint, t smallint, e text, c text, d boolean)),
      moved AS (
        UPDATE transfers_tb AS tr
           SET state = i.t, updated_at = now(), next_retry_at = NULL, attempts = 0, error_code = COALESCE(i.c, tr.error_code)
          FROM input AS i
         WHERE tr.req_id = ANY (ARRAY(SELECT r FROM input)) AND tr.req_id = i.r AND tr.state = i.f
        RETURNING tr.req_id, i.f, i.t, i.e, i.c, i.d),
      finished AS (
        DELETE FROM transfers_active WHERE req_id IN (SELECT req_id FROM moved WHERE d)),
      history AS (
        INSERT INTO transfer_state_history (req_id, from_state, to_state, event, detail)
        SELECT req_id, f, t, e, c FROM moved)
      SELECT now() AS at, string_agg(req_id, ',') AS ids FROM moved`;
    const { at, ids } = only(rows);
    const moved = new Set(ids === null ? [] : ids.split(','));
    return swaps.map((s) => (moved.has(s.reqId) ? at : null));
  }

  /** Records an unknown outcome: the transfer stays where it is and is retried later. */
  async noteRetry(reqId: string, state: TransferStateName, reason: string, nextRetryAt: Date): Promise<void> {
    await this.retries.call({ reqId, state, reason, nextRetryAt });
  }

  private async noteRetryMany(retries: readonly Retry[]): Promise<boolean[]> {
    const input = JSON.stringify(retries.map((r) => ({ r: r.reqId, s: STATE_IDS[r.state], m: r.reason.slice(0, 500), n: r.nextRetryAt.toISOString() })));
    const rows = await this.sql<{ req_id: string }[]>`
      WITH input AS (
        SELECT * FROM json_to_recordset(${input}::text::json) AS x(r text, s smallint, m text, n timestamptz))
      UPDATE transfers_tb AS tr
         SET retry_count = tr.retry_count + 1, attempts = tr.attempts + 1, error_message = i.m, next_retry_at = i.n
        FROM input AS i
       WHERE tr.req_id = ANY (ARRAY(SELECT r FROM input)) AND tr.req_id = i.r AND tr.state = i.s
      RETURNING tr.req_id`;
    const noted = new Set(rows.map((r) => r.req_id));
    return retries.map((r) => noted.has(r.reqId));
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

  /** The database's clock now, as text that keeps its microseconds: where a scan pass begins. */
  async clock(): Promise<string> {
    const rows = await this.sql<{ at: string }[]>`SELECT now()::text AS at`;
    return only(rows).at;
  }

  /**
   * One page of this shard's due transfers (spec 001 §6): unfinished and untouched for
   * `staleMs` before `passAt`, or whose next retry time came by `passAt` (a retry no timer
   * holds, a transfer created while the shard's mailbox was full). The page walks the
   * unfinished transfers in req_id order, which is creation order, after `after`; a transfer
   * moved since the pass began is past its cut-off.
   */
  async due(q: { readonly shard: number; readonly shards: number; readonly passAt: string; readonly staleMs: number; readonly after: string | null; readonly limit: number }): Promise<DuePage> {
    // Two plain statements, not a join: with a table just filled (stale statistics) the
    // planner would sort every unfinished transfer for each page.
    const candidates = await this.sql<{ req_id: string; user_id: bigint }[]>`
      SELECT req_id, user_id FROM transfers_active ${q.after === null ? this.sql`` : this.sql`WHERE req_id > ${q.after}`}
       ORDER BY req_id LIMIT ${q.limit}`;
    const mine = candidates.filter((c) => shardOfUser(c.user_id, q.shards) === q.shard).map((c) => c.req_id);
    const due =
      mine.length === 0
        ? []
        : await this.sql<Row[]>`
            SELECT * FROM transfers_tb
             WHERE req_id = ANY (ARRAY(SELECT json_array_elements_text(${JSON.stringify(mine)}::text::json)))
               AND (updated_at < ${q.passAt}::timestamptz - make_interval(secs => ${q.staleMs / 1000}) OR next_retry_at <= ${q.passAt}::timestamptz)
             ORDER BY req_id`;
    return { transfers: due.map(toView), next: candidates.length < q.limit ? null : (candidates.at(-1)?.req_id ?? null) };
  }

  /** Transfers an operator must look at: not finished after `retriesMax` retries or `ageMs`. */
  async stuck(retriesMax: number, ageMs: number, limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT t.* FROM transfers_active AS a JOIN transfers_tb AS t ON t.req_id = a.req_id
       WHERE t.retry_count >= ${retriesMax} OR t.created_at < now() - make_interval(secs => ${ageMs / 1000})
       ORDER BY t.created_at LIMIT ${limit}`;
    return rows.map(toView);
  }

  /** Unfinished transfers, oldest first. */
  async unfinished(limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT t.* FROM transfers_active AS a JOIN transfers_tb AS t ON t.req_id = a.req_id ORDER BY t.created_at LIMIT ${limit}`;
    return rows.map(toView);
  }

  /** TARGET_PENDING transfers that entered that state more than `ageMs` ago (MON-001). */
  async targetPendingOlderThan(ageMs: number, limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT t.* FROM transfers_active AS a JOIN transfers_tb AS t ON t.req_id = a.req_id
       WHERE t.state = ${STATE_IDS.TARGET_PENDING} AND t.updated_at < now() - make_interval(secs => ${ageMs / 1000})
       ORDER BY t.updated_at LIMIT ${limit}`;
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
