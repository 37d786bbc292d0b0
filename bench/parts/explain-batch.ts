// One batch of the service's PostgreSQL writer, explained: the plan, time and buffers of every
// statement PostgreSQL ran inside `transfer_apply` for a batch of the size the service writes at
// its main level, as EXPLAIN (ANALYZE, BUFFERS) shows them. EXPLAIN of the call alone would show
// one Result node; auto_explain with nested statements shows what is inside the function.
//
// It runs on the service's own database after the load levels (the tables as large as the run
// made them), the service idle, in a transaction that is rolled back: a creating batch (the
// first commit of each transfer), then the completing batch of the same transfers (the last
// commit), half FUNDING→SPOT and half SPOT→FUNDING, with the items the driver sends
// (bench/baselines/chain-alone.ts). The session carries the owner's epoch, so the fence runs as
// it does for the service. Six batch pairs of other transfers run first, unexplained, as the
// service's long-lived connections have planned and cached every statement.

import postgres from 'postgres';
import { encodeBatch, writerFunction } from '../../src/db/transfer-writes.js';
import type { NewTransfer } from '../../src/domain/transfer.js';
import { BALANCE_UNITS_MAX } from '../../src/domain/money.js';
import { newReqId } from '../../src/http/req-ids.js';
import { itemsOf } from '../baselines/chain-alone.js';
import { OBSERVER_ROLE, pgUrl, type BenchService } from '../support/service-child.js';

/** One statement's plan as auto_explain wrote it: its duration and the whole text. */
type StatementPlan = { readonly ms: number; readonly query: string; readonly text: string };

export type BatchPlans = {
  readonly items: number;
  /** `transfer_apply` (per item) or `transfer_apply_set` (set-based), as the writer picks by size. */
  readonly form: string;
  readonly create: readonly StatementPlan[];
  readonly complete: readonly StatementPlan[];
};

const QUERY_CHARS_MAX = 120;
/** Unexplained batch pairs before the explained one. */
const WARM_UP_BATCHES = 6;

/** Explains one creating and one completing batch of `items` transfers; nothing they write is kept. */
export async function explainBatch(svc: BenchService, items: number): Promise<BatchPlans> {
  const notices: string[] = [];
  const sql = postgres(pgUrl(svc.pgPort, svc.pgPassword, { user: OBSERVER_ROLE }), {
    max: 1,
    types: { bigint: postgres.BigInt },
    onnotice: (notice) => notices.push(notice.message ?? ''),
  });
  try {
    const users = await sql<{ user_id: bigint; asset: string }[]>`
      SELECT user_id, asset FROM funding_balances ORDER BY user_id, asset LIMIT ${items}`;
    if (users.length < items) throw new Error(`explain: ${users.length} FUNDING accounts, ${items} needed`);
    const transfersOf = (): NewTransfer[] =>
      users.map((u, i): NewTransfer => {
        const from = i % 2 === 0 ? 'FUNDING' : 'SPOT';
        return {
          reqId: newReqId(),
          userId: u.user_id,
          from,
          to: from === 'FUNDING' ? 'SPOT' : 'FUNDING',
          asset: u.asset,
          amount: 1n,
          clientOrderId: null,
        };
      });
    const form = writerFunction(items);
    const batch = (transfers: readonly NewTransfer[], which: 'create' | 'complete'): string =>
      encodeBatch(transfers.map((t) => itemsOf(t)[which]));
    const reserved = await sql.reserve();
    try {
      await prepareSession(reserved);
      /** `body` in a transaction of its own, rolled back whatever it did. */
      const rolledBack = async <T>(body: () => Promise<T>): Promise<T> => {
        await reserved`BEGIN`;
        try {
          return await body();
        } finally {
          await reserved`ROLLBACK`;
        }
      };
      // Explaining is on for the call alone. A statement's notice may arrive after its answer;
      // the SET after it (not explained: not a query) answers only once they all came.
      const call = (input: string) => reserved.unsafe(`SELECT ${form}($1::text::jsonb, $2::bigint)`, [input, BALANCE_UNITS_MAX.toString()]);
      const explained = async (input: string): Promise<StatementPlan[]> => {
        await reserved.unsafe('SET LOCAL auto_explain.log_min_duration = 0');
        notices.length = 0;
        await call(input);
        await reserved.unsafe('SET LOCAL auto_explain.log_min_duration = -1');
        return notices.map(planOf);
      };
      // The service's connections are long-lived: its statements are planned and cached, and the
      // pages they read are in memory. Batches of other transfers first, unexplained, so the one
      // explained is too: PL/pgSQL settles on its cached plans after five executions. Each pair
      // in a transaction of its own, as the service commits each batch: a balance row updated
      // earlier in the same transaction makes its next update check the foreign key to assets
      // (`SELECT 1 FROM ONLY assets ... FOR KEY SHARE`), which the service's batches never do.
      for (let i = 0; i < WARM_UP_BATCHES; i++) {
        const warm = transfersOf();
        await rolledBack(async () => {
          await call(batch(warm, 'create'));
          await call(batch(warm, 'complete'));
        });
      }
      // The creating and completing batches touch different balance rows (a FUNDING→SPOT
      // transfer's withdrawal is in the first, a SPOT→FUNDING one's deposit in the second), so
      // sharing one transaction adds no such check.
      const transfers = transfersOf();
      return await rolledBack(async () => {
        const create = await explained(batch(transfers, 'create'));
        const complete = await explained(batch(transfers, 'complete'));
        return { items, form, create, complete };
      });
    } finally {
      reserved.release();
    }
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * auto_explain loaded and set up on the session (explaining stays off until a call turns it on),
 * and the owner's epoch set, so the fence runs as it does for the service.
 */
async function prepareSession(session: postgres.ReservedSql): Promise<void> {
  await session.unsafe("LOAD 'auto_explain'");
  for (const setting of [
    'auto_explain.log_analyze = on',
    'auto_explain.log_buffers = on',
    'auto_explain.log_timing = on',
    'auto_explain.log_nested_statements = on',
    'auto_explain.log_level = notice',
    'client_min_messages = notice',
  ])
    await session.unsafe(`SET ${setting}`);
  const [owner] = await session<{ epoch: string }[]>`SELECT epoch::text AS epoch FROM ledger_owner`;
  if (owner !== undefined) await session`SELECT set_config('transfer.owner_epoch', ${owner.epoch}, false)`;
}

/** auto_explain's message: "duration: 0.123 ms  plan:", "Query Text: ...", then the plan. */
function planOf(message: string): StatementPlan {
  const ms = Number(/duration: ([\d.]+) ms/.exec(message)?.[1] ?? Number.NaN);
  const query = (/Query Text: ([^\n]*)/.exec(message)?.[1] ?? '').replace(/\s+/g, ' ').trim().slice(0, QUERY_CHARS_MAX);
  return { ms, query, text: message };
}
