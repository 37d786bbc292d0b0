// transfers_tb access. Every write goes through a TransferWriter (one batched `transfer_apply` per
// batch): a creation, or a compare-and-swap on the expected state along a path of the FSM, each
// with one history row per step in the same statement, so the history never disagrees with the
// state. Reads and retry notes are batched statements of their own.

import type { NewTransfer, TransferView } from '../domain/transfer.js';
import { shardOfUser } from '../domain/shard.js';
import { eventName, STATE_IDS, stateName, type TransferStateName } from '../domain/fsm.js';
import { mustErrorCode, type ErrorCode } from '../domain/errors.js';
import { causeText, type AccountKind, type PendingCause } from '../domain/types.js';
import { Batcher, type BatchSettings } from './batch.js';
import type { Sql } from './sql.js';
import { stuckCondition, type StuckRule, unknownWaitCondition } from './stuck.js';
import type { PathStep, TransferWriter, WriteItem, WriteResult } from './transfer-writes.js';

const KIND_BY_TYPE: ReadonlyMap<number, AccountKind> = new Map([
  [1, 'FUNDING'],
  [2, 'SPOT'],
]);

type NewTransferRow = NewTransfer;

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
  /** Only transfers in one of these states (a client's PENDING is every unfinished one). */
  readonly state: readonly TransferStateName[] | null;
  readonly fromTime: Date | null;
  readonly toTime: Date | null;
  readonly limit: number;
};

export type CreateOutcome =
  | { readonly kind: 'created'; readonly view: TransferView }
  | { readonly kind: 'existing'; readonly view: TransferView }
  /** The client_order_id names another request: `originalReqId` is the transfer that holds it. */
  | { readonly kind: 'duplicate'; readonly originalReqId: string };

type CreateItem = Extract<WriteItem, { kind: 'create' }>;

/** A page of due transfers as read, and the req_id the next page starts after (null: the last page). */
type DuePage = { readonly transfers: readonly TransferView[]; readonly next: string | null };

export type HistoryEntry = {
  readonly from: TransferStateName | null;
  readonly to: TransferStateName;
  readonly event: string;
  readonly detail: string | null;
  readonly at: string;
};

type TransferNotes = { readonly clientOrderId: string | null; readonly lastError: string | null };

type Retry = {
  readonly reqId: string;
  readonly state: TransferStateName;
  readonly retryCount: number;
  readonly reason: string;
  readonly nextRetryAt: Date;
};

// Batched statements take their rows as one JSON parameter and find the transfers with
// `req_id = ANY (ARRAY(SELECT …))`: PostgreSQL guesses 100 rows for a JSON set and would join
// it to a small or middling table by scanning the whole table; an array keeps it on the index.
export class TransferStore {
  // Reads and retry notes made at the same time by many drives travel as one statement each.
  private readonly reads: Batcher<string, Row | null>;
  private readonly retries: Batcher<Retry, boolean>;

  constructor(
    private readonly sql: Sql,
    readonly writes: TransferWriter,
    batch: BatchSettings,
  ) {
    this.reads = new Batcher((ids) => this.readMany(ids), batch);
    this.retries = new Batcher((retries) => this.noteRetryMany(retries), { ...batch, key: (r) => r.reqId });
  }

  /**
   * Creates a transfer and moves it along the item's path in one transaction. Client idempotency
   * (spec 001 §1.5.7): a client_order_id the user already used answers the original transfer when
   * the request is the same, DUPLICATE otherwise.
   */
  async createWith(item: CreateItem): Promise<CreateOutcome> {
    const t = item.transfer;
    for (;;) {
      const result = await this.writes.write(item);
      if (result.kind === 'moved') return { kind: 'created', view: createdView(t, result) };
      if (result.kind !== 'exists') throw new Error(`creating ${t.reqId} answered ${result.kind}`);
      // This very req_id: an earlier attempt committed though its answer was lost.
      const own = await this.get(t.reqId);
      if (own !== null) return { kind: 'created', view: own };
      // Found neither: the twin that held the client_order_id is gone; try again.
      const repeat = await this.repeatOf(t);
      if (repeat !== null) return repeat;
    }
  }

  /**
   * A request whose client_order_id the user already used (spec 001 §1.5.7): the original
   * transfer when the request is the same, DUPLICATE otherwise; null when the id is new.
   */
  async repeatOf(t: NewTransferRow): Promise<Exclude<CreateOutcome, { kind: 'created' }> | null> {
    if (t.clientOrderId === null) return null;
    const existing = await this.byClientOrderId(t.userId, t.clientOrderId);
    if (existing === null) return null;
    return sameRequest(existing, t) ? { kind: 'existing', view: existing } : { kind: 'duplicate', originalReqId: existing.reqId };
  }

  /** Creates the transfer in INIT; `dueNow` marks it due at once for the recovery scan. */
  async create(t: NewTransferRow, dueNow = false): Promise<CreateOutcome> {
    return this.createWith(initItem(t, dueNow));
  }

  /** Creates the transfer in INIT, or answers null when its req_id or client_order_id is taken. */
  async insert(t: NewTransferRow, dueNow = false): Promise<TransferView | null> {
    const result = await this.writes.write(initItem(t, dueNow));
    return result.kind === 'moved' ? createdView(t, result) : null;
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
   * Moves the transfer from its state along `path` only if it is still in that state, and
   * answers the new updated_at. Answers null when another driver moved it first; the caller
   * re-reads and continues from what it finds.
   */
  async move(t: TransferView, path: readonly PathStep[], code: ErrorCode | null = null): Promise<Date | null> {
    const result = await this.writes.write({ kind: 'move', params: t, from: t.state, op: null, paths: { ok: path, ko: [] }, code });
    return result.kind === 'moved' ? result.at : null;
  }

  /**
   * Records an unknown outcome: the transfer stays where it is and is retried later. It counts
   * once even when re-run after a commit whose answer was lost: the note applies only while the
   * retry count is still the one the caller saw. The cause is recorded as the last error's text.
   */
  async noteRetry(t: TransferView, cause: PendingCause, nextRetryAt: Date): Promise<boolean> {
    return this.retries.call({ reqId: t.reqId, state: t.state, retryCount: t.retryCount, reason: causeText(cause), nextRetryAt });
  }

  private async noteRetryMany(retries: readonly Retry[]): Promise<boolean[]> {
    const input = JSON.stringify(
      retries.map((r) => ({
        r: r.reqId,
        s: STATE_IDS[r.state],
        n: r.retryCount,
        m: r.reason.slice(0, 500),
        t: r.nextRetryAt.toISOString(),
      })),
    );
    const rows = await this.sql<{ req_id: string }[]>`
      WITH input AS (
        SELECT * FROM json_to_recordset(${input}::text::json) AS x(r text, s smallint, n integer, m text, t timestamptz))
      UPDATE transfers_tb AS tr
         SET retry_count = i.n + 1, attempts = tr.attempts + 1, error_message = i.m, next_retry_at = i.t
        FROM input AS i
       WHERE tr.req_id = ANY (ARRAY(SELECT r FROM input)) AND tr.req_id = i.r AND tr.state = i.s AND tr.retry_count = i.n
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
         ${q.state === null ? this.sql`` : this.sql`AND state = ANY (${this.sql.array(q.state.map((name) => STATE_IDS[name]))}::smallint[])`}
         ${q.fromTime === null ? this.sql`` : this.sql`AND created_at >= ${q.fromTime}`}
         ${q.toTime === null ? this.sql`` : this.sql`AND created_at < ${q.toTime}`}
       ORDER BY transfer_id DESC
       LIMIT ${q.limit}`;
    return rows.map(toView);
  }

  async history(reqId: string): Promise<HistoryEntry[]> {
    const rows = await this.sql<{ from_state: number | null; to_state: number; event: number; detail: string | null; at: Date }[]>`
      SELECT from_state, to_state, event, detail, at FROM transfer_state_history
       WHERE transfer_id = (SELECT transfer_id FROM transfers_tb WHERE req_id = ${reqId}) ORDER BY id`;
    return rows.map((r) => ({
      from: r.from_state === null ? null : mustState(r.from_state),
      to: mustState(r.to_state),
      event: mustEvent(r.event),
      detail: r.detail,
      at: r.at.toISOString(),
    }));
  }

  /**
   * What an operator reads beside the view: the client_order_id and the last unknown outcome's
   * reason (error_message), for at most `reqIds.length` transfers found by their primary key.
   */
  async notes(reqIds: readonly string[]): Promise<Map<string, TransferNotes>> {
    if (reqIds.length === 0) return new Map();
    const rows = await this.sql<{ req_id: string; client_order_id: string | null; error_message: string | null }[]>`
      SELECT req_id, client_order_id, error_message FROM transfers_tb
       WHERE req_id = ANY (ARRAY(SELECT json_array_elements_text(${JSON.stringify(reqIds)}::text::json)))`;
    return new Map(rows.map((r) => [r.req_id, { clientOrderId: r.client_order_id, lastError: r.error_message }]));
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
  async due(q: {
    readonly shard: number;
    readonly shards: number;
    readonly passAt: string;
    readonly staleMs: number;
    readonly after: string | null;
    readonly limit: number;
  }): Promise<DuePage> {
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

  /**
   * Transfers an operator must look at (src/db/stuck.ts): escalated ones, and those waiting on an
   * unknown outcome longer than `unknownWaitMs` (TARGET_PENDING, a SPOT debit's SOURCE_PENDING).
   */
  async stuck(rule: StuckRule & { readonly unknownWaitMs: number }, limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT t.* FROM transfers_active AS a JOIN transfers_tb AS t ON t.req_id = a.req_id
       WHERE ${stuckCondition(this.sql, rule)} OR ${unknownWaitCondition(this.sql, rule.unknownWaitMs)}
       ORDER BY t.created_at LIMIT ${limit}`;
    return rows.map(toView);
  }

  /** Unfinished transfers, oldest first. */
  async unfinished(limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT t.* FROM transfers_active AS a JOIN transfers_tb AS t ON t.req_id = a.req_id ORDER BY t.created_at LIMIT ${limit}`;
    return rows.map(toView);
  }

  /** Transfers waiting on an unknown outcome (src/db/stuck.ts) that entered their state more than `ageMs` ago (MON-001). */
  async unknownWaitOlderThan(ageMs: number, limit: number): Promise<TransferView[]> {
    const rows = await this.sql<Row[]>`
      SELECT t.* FROM transfers_active AS a JOIN transfers_tb AS t ON t.req_id = a.req_id
       WHERE ${unknownWaitCondition(this.sql, ageMs)}
       ORDER BY t.updated_at LIMIT ${limit}`;
    return rows.map(toView);
  }
}

function sameRequest(v: TransferView, t: NewTransferRow): boolean {
  return v.userId === t.userId && v.from === t.from && v.to === t.to && v.asset === t.asset && v.amount === t.amount;
}

/** A creation that leaves the transfer in INIT, with no operation and no move. */
function initItem(t: NewTransferRow, dueNow: boolean): CreateItem {
  return { kind: 'create', transfer: t, op: null, paths: { ok: [], ko: [] }, code: null, checkFundingTarget: false, dueNow };
}

/** The view of a transfer this process just created, from what the creating statement answered. */
export function createdView(t: NewTransferRow, r: Extract<WriteResult, { kind: 'moved' }>): TransferView {
  const at = r.at.toISOString();
  return {
    transferId: r.transferId,
    reqId: t.reqId,
    userId: t.userId,
    from: t.from,
    to: t.to,
    asset: t.asset,
    amount: t.amount,
    state: r.state,
    errorCode: r.code,
    retryCount: 0,
    attempts: 0,
    createdAt: at,
    updatedAt: at,
  };
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

function mustEvent(code: number): string {
  const name = eventName(code);
  if (name === null) throw new Error(`unknown event code ${code} in the database`);
  return name;
}

function mustKind(type: number): AccountKind {
  const kind = KIND_BY_TYPE.get(type);
  if (kind === undefined) throw new Error(`unknown account type ${type} in the database`);
  return kind;
}

function toView(row: Row): TransferView {
  return {
    transferId: row.transfer_id.toString(),
    reqId: row.req_id,
    userId: row.user_id,
    from: mustKind(row.source_type),
    to: mustKind(row.target_type),
    asset: row.asset,
    amount: row.amount,
    state: mustState(row.state),
    errorCode: row.error_code === null ? null : mustErrorCode(row.error_code, 'transfers_tb.error_code'),
    retryCount: row.retry_count,
    attempts: row.attempts,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}
