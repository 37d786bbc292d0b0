// The Funding adapter: FUNDING balances in PostgreSQL. Each operation is one transaction that
// locks the balance row, checks the (req_id, op) record, changes the balance and records the
// outcome, so the effect and its idempotency record commit together or not at all.

import { checkOpRequest } from '../domain/checks.js';
import { BALANCE_UNITS_MAX } from '../domain/money.js';
import { failed, pending, SUCCESS, type OpOutcome, type TransferOp } from '../domain/types.js';
import { Batcher, type BatchSettings } from '../db/batch.js';
import type { Sql, Tx } from '../db/sql.js';
import { describeError, OperationAdapter, type OpRequest, type QueryOutcome } from './types.js';

type Account = { available: bigint; status: string };
type OpRecord = { user_id: bigint; asset: string; amount: bigint; outcome: 'APPLIED' | 'REJECTED'; code: string | null };

/** What one operation does to the balance: a signed delta and the outcome to record. */
type Decision = { readonly delta: bigint; readonly outcome: 'APPLIED' | 'REJECTED'; readonly code: string | null };

type Operation = { readonly op: TransferOp; readonly req: OpRequest };
type AccountKey = { readonly userId: bigint; readonly asset: string };

export class FundingAdapter extends OperationAdapter {
  override readonly account = 'FUNDING' as const;
  // Operations asked at the same time by many drives share one transaction; one (req_id, op)
  // is never twice in the same one.
  private readonly operations: Batcher<Operation, OpOutcome>;
  private readonly lookups: Batcher<AccountKey, boolean>;

  constructor(
    private readonly sql: Sql,
    batch: BatchSettings,
  ) {
    super();
    this.operations = new Batcher((ops) => this.applyMany(ops), { ...batch, key: (o) => opKey(o.req.reqId, o.op) });
    this.lookups = new Batcher((keys) => this.existing(keys), batch);
  }

  /** Whether the FUNDING account exists; only the external deposit flow creates one. */
  async accountExists(userId: bigint, asset: string): Promise<boolean> {
    return this.lookups.call({ userId, asset });
  }

  async query(reqId: string, op: TransferOp): Promise<QueryOutcome> {
    try {
      const rows = await this.sql<OpRecord[]>`SELECT * FROM funding_operations WHERE req_id = ${reqId} AND op = ${op}`;
      const row = rows[0];
      return row === undefined ? { kind: 'NOT_FOUND' } : recordedOutcome(op, row);
    } catch (error) {
      return pending(`funding query: ${describeError(error)}`);
    }
  }

  protected async apply(op: TransferOp, req: OpRequest): Promise<OpOutcome> {
    const invalid = checkOpRequest(req);
    if (invalid !== null) return failed(invalid);
    try {
      return await this.operations.call({ op, req });
    } catch (error) {
      // The transaction may or may not have committed (a lost connection on COMMIT): unknown.
      return pending(`funding ${op}: ${describeError(error)}`);
    }
  }

  /**
   * Many operations in one transaction. The balance rows are locked first, in key order (so two
   * batches never deadlock), and a concurrent call for the same (req_id, op) then waits and sees
   * the record this one commits. Each operation is decided in order against the running
   * balances, and every balance change commits with its (req_id, op) record or not at all.
   */
  private async applyMany(ops: readonly Operation[]): Promise<OpOutcome[]> {
    return this.sql.begin(async (tx) => {
      const accounts = await lockAccounts(tx, ops);
      const records = await priorRecords(tx, ops);
      const deltas = new Map<string, { readonly account: AccountKey; delta: bigint }>();
      const writes: (OpRecord & { readonly req_id: string; readonly op: TransferOp })[] = [];
      const outcomes = ops.map(({ op, req }) => {
        const seen = records.get(opKey(req.reqId, op));
        if (seen !== undefined) return repeatOutcome(op, seen, req);
        const account = accounts.get(accountKey(req)) ?? null;
        const decision = decide(op, account, req, op === 'REFUND' ? (records.get(opKey(req.reqId, 'WITHDRAW')) ?? null) : null);
        if (decision.delta !== 0n && account !== null) {
          account.available += decision.delta;
          const entry = deltas.get(accountKey(req)) ?? { account: req, delta: 0n };
          entry.delta += decision.delta;
          deltas.set(accountKey(req), entry);
        }
        const record: OpRecord = { user_id: req.userId, asset: req.asset, amount: req.amount, outcome: decision.outcome, code: decision.code };
        records.set(opKey(req.reqId, op), record);
        writes.push({ ...record, req_id: req.reqId, op });
        return recordedOutcome(op, decision);
      });
      if (writes.length > 0) await writeAll(tx, [...deltas.values()], writes);
      return outcomes;
    });
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

async function lockAccounts(tx: Tx, ops: readonly Operation[]): Promise<Map<string, Account>> {
  const keys = new Map(ops.map(({ req }) => [accountKey(req), { u: req.userId.toString(), a: req.asset }]));
  const rows = await tx<(Account & { user_id: bigint; asset: string })[]>`
    WITH input AS (SELECT u::bigint AS u, a FROM json_to_recordset(${JSON.stringify([...keys.values()])}::text::json) AS x(u text, a text))
    SELECT user_id, asset, available, status FROM funding_balances
     WHERE user_id = ANY (ARRAY(SELECT u FROM input)) AND (user_id, asset) IN (SELECT u, a FROM input)
     ORDER BY user_id, asset
       FOR UPDATE`;
  return new Map(rows.map((r) => [accountKey({ userId: r.user_id, asset: r.asset }), { available: r.available, status: r.status }]));
}

/** The recorded (req_id, op) of each operation, and the WITHDRAW behind each REFUND. */
async function priorRecords(tx: Tx, ops: readonly Operation[]): Promise<Map<string, OpRecord>> {
  const pairs = ops.flatMap(({ op, req }) => (op === 'REFUND' ? [{ r: req.reqId, o: op }, { r: req.reqId, o: 'WITHDRAW' }] : [{ r: req.reqId, o: op }]));
  const rows = await tx<(OpRecord & { req_id: string; op: TransferOp })[]>`
    WITH input AS (SELECT * FROM json_to_recordset(${JSON.stringify(pairs)}::text::json) AS x(r text, o text))
    SELECT req_id, op, user_id, asset, amount, outcome, code FROM funding_operations
     WHERE req_id = ANY (ARRAY(SELECT r FROM input)) AND (req_id, op) IN (SELECT r, o FROM input)`;
  return new Map(rows.map((r) => [opKey(r.req_id, r.op), r]));
}

/** The balance changes, one per account, and the records, in one statement; both counts checked. */
async function writeAll(tx: Tx, deltas: readonly { readonly account: AccountKey; readonly delta: bigint }[], writes: readonly (OpRecord & { readonly req_id: string; readonly op: TransferOp })[]): Promise<void> {
  const balances = JSON.stringify(deltas.map((d) => ({ u: d.account.userId.toString(), a: d.account.asset, d: d.delta.toString() })));
  const records = JSON.stringify(writes.map((w) => ({ r: w.req_id, o: w.op, u: w.user_id.toString(), a: w.asset, m: w.amount.toString(), x: w.outcome, c: w.code })));
  const rows = await tx<{ balances: number; records: number }[]>`
    WITH input AS (SELECT u::bigint AS u, a, d::bigint AS d FROM json_to_recordset(${balances}::text::json) AS x(u text, a text, d text)),
    changed AS (
      UPDATE funding_balances AS f SET available = f.available + i.d, updated_at = now()
        FROM input AS i
       WHERE f.user_id = ANY (ARRAY(SELECT u FROM input)) AND f.user_id = i.u AND f.asset = i.a
      RETURNING 1),
    recorded AS (
      INSERT INTO funding_operations (req_id, op, user_id, asset, amount, outcome, code)
      SELECT r, o, u::bigint, a, m::bigint, x, c FROM json_to_recordset(${records}::text::json) AS w(r text, o text, u text, a text, m text, x text, c text)
      RETURNING 1)
    SELECT (SELECT count(*) FROM changed)::int AS balances, (SELECT count(*) FROM recorded)::int AS records`;
  const counts = rows[0];
  // Every changed balance was locked above, so each must be found; anything else rolls back.
  if (counts?.balances !== deltas.length || counts.records !== writes.length) {
    throw new Error(`funding batch wrote ${counts?.balances} balances and ${counts?.records} records, expected ${deltas.length} and ${writes.length}`);
  }
}

function opKey(reqId: string, op: TransferOp): string {
  return `${reqId}/${op}`;
}

function accountKey(k: AccountKey): string {
  return `${k.userId}/${k.asset}`;
}

/** The rules, with the row locked. Pure. */
function decide(op: TransferOp, account: Account | null, req: OpRequest, withdrawal: OpRecord | null): Decision {
  const reject = (code: string): Decision => ({ delta: 0n, outcome: 'REJECTED', code });
  switch (op) {
    case 'WITHDRAW':
      if (account === null) return reject('SOURCE_ACCOUNT_NOT_FOUND');
      if (account.status === 'FROZEN') return reject('ACCOUNT_FROZEN');
      if (account.status === 'DISABLED') return reject('ACCOUNT_DISABLED');
      if (account.available < req.amount) return reject('INSUFFICIENT_BALANCE');
      return { delta: -req.amount, outcome: 'APPLIED', code: null };
    case 'DEPOSIT':
      if (account === null) return reject('TARGET_ACCOUNT_NOT_FOUND');
      if (account.available + req.amount > BALANCE_UNITS_MAX) return reject('OVERFLOW');
      return { delta: req.amount, outcome: 'APPLIED', code: null };
    case 'REFUND':
      // Only a withdraw this adapter applied, with the same parameters, may be refunded.
      if (withdrawal === null || withdrawal.outcome !== 'APPLIED' || !sameParams(withdrawal, req) || account === null) {
        return reject('REFUND_WITHOUT_WITHDRAW');
      }
      return { delta: req.amount, outcome: 'APPLIED', code: null };
  }
}

function sameParams(row: OpRecord, req: OpRequest): boolean {
  return row.user_id === req.userId && row.asset === req.asset && row.amount === req.amount;
}

function repeatOutcome(op: TransferOp, row: OpRecord, req: OpRequest): OpOutcome {
  if (!sameParams(row, req)) {
    // The same (req_id, op) with other parameters is a programmer error: never apply, never
    // answer a definitive result, and let an operator look.
    return pending(`IDEMPOTENCY_CONFLICT: funding ${op} ${req.reqId} was recorded with other parameters`);
  }
  return recordedOutcome(op, row);
}

/** A refund that cannot be applied is never a final answer: the transfer stays COMPENSATING. */
function recordedOutcome(op: TransferOp, row: Pick<OpRecord, 'outcome' | 'code'>): OpOutcome {
  if (row.outcome === 'APPLIED') return SUCCESS;
  if (op === 'REFUND') return pending(`funding refund refused: ${row.code ?? 'unknown'}`);
  return failed((row.code ?? 'INVALID_REQUEST') as Parameters<typeof failed>[0]);
}
