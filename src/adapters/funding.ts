// The Funding adapter: FUNDING balances in PostgreSQL. Each operation is applied by
// `transfer_apply` (src/db/migrations/repeatable/transfer_apply.sql), which changes the balance and records the
// outcome of (transfer, op) in one transaction, so the effect and its idempotency record commit
// together or not at all; operations asked at the same time by many drives share that
// transaction. Because this store is the coordinator's own database, an operation can also carry
// the state moves it decides (`applyWithMove`), which then need no pending state before the call.

import { checkOpRequest } from '../domain/checks.js';
import { failed, pending, REFUND_WITHOUT_WITHDRAW, SUCCESS, type OpOutcome, type PendingCause, type TransferOp } from '../domain/types.js';
import { Batcher, isConstraintRefusal, type BatchSettings } from '../db/batch.js';
import type { Sql } from '../db/sql.js';
import { FUNDING_OP_CODES, opAnswer, type OpAnswer, type TransferWriter, type WriteItem } from '../db/transfer-writes.js';
import {
  OperationAdapter,
  type LocalAccountAdapter,
  type MovedOutcome,
  type OpRequest,
  type QueryOutcome,
  type TransferMove,
} from './types.js';
import { errorCode, errorText } from '../error-text.js';

type OpRecord = { code: string | null };
type AccountKey = { readonly userId: bigint; readonly asset: string };

export class FundingAdapter extends OperationAdapter implements LocalAccountAdapter {
  override readonly account = 'FUNDING' as const;
  private readonly lookups: Batcher<AccountKey, boolean>;

  constructor(
    private readonly sql: Sql,
    private readonly writes: TransferWriter,
    batch: BatchSettings,
  ) {
    super();
    this.lookups = new Batcher((keys) => this.existing(keys), batch);
  }

  /** Whether the FUNDING account exists; only the external deposit flow creates one. */
  async accountExists(userId: bigint, asset: string): Promise<boolean> {
    return this.lookups.call({ userId, asset });
  }

  async query(reqId: string, op: TransferOp): Promise<QueryOutcome> {
    try {
      const rows = await this.sql<OpRecord[]>`
        SELECT f.code FROM funding_operations AS f JOIN transfers_tb AS t USING (transfer_id)
         WHERE t.req_id = ${reqId} AND f.op = ${FUNDING_OP_CODES[op]}`;
      const row = rows[0];
      if (row === undefined) return { kind: 'NOT_FOUND' };
      return outcomeOf(op, reqId, opAnswer(row.code === null ? 'APPLIED' : 'REJECTED', row.code, 'funding_operations'));
    } catch (error) {
      return pending(databaseCause(`funding query ${op}`, error));
    }
  }

  protected async apply(op: TransferOp, req: OpRequest): Promise<OpOutcome> {
    const invalid = checkOpRequest(req);
    if (invalid !== null) return failed(invalid);
    try {
      const result = await this.writes.write({ kind: 'op', params: req, op });
      if (result.kind === 'op' || result.kind === 'held') return outcomeOf(op, req.reqId, result.op);
      return pending({ kind: 'unexpected_answer', detail: `funding ${op}: answered ${result.kind}` });
    } catch (error) {
      return caught(op, error);
    }
  }

  async applyWithMove(op: TransferOp, req: OpRequest, move: TransferMove): Promise<MovedOutcome> {
    const invalid = checkOpRequest(req);
    if (invalid !== null) return { kind: 'unmoved', outcome: failed(invalid) };
    const item: WriteItem =
      move.create === null
        ? { kind: 'move', params: req, from: move.from, op, paths: move.paths, code: null }
        : { kind: 'create', transfer: move.create, op, paths: move.paths, code: null, checkFundingTarget: false, dueNow: false };
    try {
      const result = await this.writes.write(item);
      switch (result.kind) {
        case 'moved':
          return { kind: 'moved', outcome: result.op === null ? SUCCESS : outcomeOf(op, req.reqId, result.op), result };
        case 'lost':
        case 'exists':
          return { kind: result.kind };
        case 'held':
          return { kind: 'unmoved', outcome: outcomeOf(op, req.reqId, result.op) };
        case 'op':
          return {
            kind: 'unmoved',
            outcome: pending({ kind: 'unexpected_answer', detail: `funding ${op}: answered ${result.kind} to a move` }),
          };
      }
    } catch (error) {
      return { kind: 'unmoved', outcome: caught(op, error) };
    }
  }

  private async existing(keys: readonly AccountKey[]): Promise<boolean[]> {
    const input = JSON.stringify(keys.map((k) => ({ u: k.userId.toString(), a: k.asset })));
    const rows = await this.sql<{ user_id: bigint; asset: string }[]>`
      WITH input AS (SELECT u::bigint AS u, a FROM json_to_recordset(${input}::text::json) AS x(u text, a text))
      SELECT user_id, asset FROM funding_balances
       WHERE user_id = ANY (ARRAY(SELECT u FROM input)) AND (user_id, asset) IN (SELECT u, a FROM input)`;
    const found = new Set(rows.map((r) => accountKey({ userId: r.user_id, asset: r.asset })));
    return keys.map((k) => found.has(accountKey(k)));
  }
}

/**
 * A write that threw. A constraint refusing the operation's own row is an explicit failure (a
 * refund never is: it stays for an operator); anything else may or may not have committed (a
 * lost connection on COMMIT, a timeout): unknown.
 */
function caught(op: TransferOp, error: unknown): OpOutcome {
  if (isConstraintRefusal(error) && op !== 'REFUND') return failed('CONSTRAINT_VIOLATION');
  return pending(databaseCause(`funding ${op}`, error));
}

/**
 * What a failed statement says of the operation: nothing, it may have committed. Why, for the
 * log and the alerts: a timeout (statement or lock timeout, connect timeout), a lost connection
 * (SQLSTATE class 08, a server shutting down, a closed socket), another database error, or an
 * exception that did not come from the database at all.
 */
function databaseCause(what: string, error: unknown): PendingCause {
  const detail = `${what}: ${errorText(error)}`;
  const code = errorCode(error);
  if (code === null) return { kind: 'exception', detail };
  if (code === '57014' || code === '55P03' || code === 'CONNECT_TIMEOUT') return { kind: 'timeout', detail };
  if (/^(08|57P|CONNECTION_|ECONN|EPIPE)/.test(code)) return { kind: 'connection_lost', detail };
  return { kind: 'database_error', detail };
}

function accountKey(k: AccountKey): string {
  return `${k.userId}/${k.asset}`;
}

/**
 * What an answer of the Funding side means to the FSM. A refund that cannot be applied is never a
 * final answer (the transfer stays COMPENSATING for an operator), and an operation asked with
 * other parameters than its transfer's (or for a req_id with no transfer) is a programmer error:
 * never applied, never final.
 */
function outcomeOf(op: TransferOp, reqId: string, answer: OpAnswer): OpOutcome {
  switch (answer.outcome) {
    case 'APPLIED':
      return SUCCESS;
    case 'CONFLICT':
      return pending({
        kind: 'idempotency_conflict',
        detail: `funding ${op} ${reqId} does not match its transfer (other parameters, or no transfer with this req_id)`,
      });
    case 'REJECTED':
      if (op === 'REFUND') return pending({ kind: 'refund_refused', code: answer.code, detail: `funding refund refused: ${answer.code}` });
      if (answer.code === REFUND_WITHOUT_WITHDRAW)
        return pending({ kind: 'unexpected_answer', detail: `funding ${op} refused with ${answer.code}` });
      return failed(answer.code);
  }
}
