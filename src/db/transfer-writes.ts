// Every write of a transfer, batched: creations, compare-and-swaps along a path of the FSM, and
// Funding operations (with the moves they decide, or on their own) travel as items of one
// `transfer_apply` call per batch (src/db/migrations/repeatable/transfer_apply.sql, or its set-based form for large
// batches, src/db/migrations/repeatable/transfer_apply_set.sql): one round trip and one commit for everything a
// shard's drives asked for at the same time.

import type { NewTransfer } from '../domain/transfer.js';
import {
  assertTransition,
  EVENT_CODES,
  isTerminal,
  STATE_IDS,
  stateName,
  type TransferEvent,
  type TransferStateName,
} from '../domain/fsm.js';
import { BALANCE_UNITS_MAX } from '../domain/money.js';
import { mustErrorCode, mustOpRefusalCode, type ErrorCode } from '../domain/errors.js';
import type { AccountKind, OpRefusalCode, TransferOp } from '../domain/types.js';
import { Batcher, type BatchSettings } from './batch.js';
import type { Sql } from './sql.js';
import { SET_BASED_ROWS_MIN } from '../limits.js';

export const ACCOUNT_TYPE: Readonly<Record<AccountKind, number>> = { FUNDING: 1, SPOT: 2 };

/** A Funding operation's code in its record (migration 0015's funding_ops, which names them). */
export const FUNDING_OP_CODES: Readonly<Record<TransferOp, number>> = { WITHDRAW: 1, DEPOSIT: 2, REFUND: 3 };

/** One move of the FSM; a path is the moves one commit makes, each one history row. */
export type PathStep = { readonly event: TransferEvent; readonly to: TransferStateName };

/** Where a transfer goes: `ok` when the operation is applied (or there is none), `ko` when the Funding side refuses it. */
export type Paths = { readonly ok: readonly PathStep[]; readonly ko: readonly PathStep[] };

type FundingOpParams = { readonly reqId: string; readonly userId: bigint; readonly asset: string; readonly amount: bigint };

export type WriteItem =
  /** Creates the transfer (INIT) and moves it along `paths` in the same transaction. */
  | {
      readonly kind: 'create';
      readonly transfer: NewTransfer;
      readonly op: TransferOp | null;
      readonly paths: Paths;
      /** The code recorded when the path ends FAILED without an operation (a closed asset). */
      readonly code: ErrorCode | null;
      /** Take `ko` with TARGET_ACCOUNT_NOT_FOUND when the user has no FUNDING account for the asset. */
      readonly checkFundingTarget: boolean;
      /** Due at once for the recovery scan (no coordinator drives it now). */
      readonly dueNow: boolean;
    }
  /** Moves an existing transfer from `from` along `paths`, applying `op` first if given. */
  | {
      readonly kind: 'move';
      readonly params: FundingOpParams;
      readonly from: TransferStateName;
      readonly op: TransferOp | null;
      readonly paths: Paths;
      readonly code: ErrorCode | null;
    }
  /** A Funding operation on its own, with no transfer state attached. */
  | { readonly kind: 'op'; readonly params: FundingOpParams; readonly op: TransferOp };

/** How the Funding side answered an operation: applied, refused with a code, or recorded with other parameters. */
export type OpAnswer =
  | { readonly outcome: 'APPLIED' }
  | { readonly outcome: 'REJECTED'; readonly code: OpRefusalCode }
  | { readonly outcome: 'CONFLICT' };

export type WriteResult =
  | {
      readonly kind: 'moved';
      readonly state: TransferStateName;
      readonly at: Date;
      readonly transferId: string;
      readonly op: OpAnswer | null;
      readonly code: ErrorCode | null;
    }
  /** The transfer was not in the expected state: another drive moved it. */
  | { readonly kind: 'lost' }
  /** A creation whose req_id or client_order_id already exists. */
  | { readonly kind: 'exists' }
  /** The operation answered without a move (a refused refund, a conflict); nothing changed. */
  | { readonly kind: 'held'; readonly op: OpAnswer }
  | { readonly kind: 'op'; readonly op: OpAnswer };

type RawResult = { k: string; s?: number; at?: number; id?: string; oc?: string | null; code?: string | null };

/**
 * Where a shard's transfer writes go: its own batched writer (TransferWrites), or, with several
 * shards, the one writer every shard shares (actors/coordinator/write-link.ts), so more shards
 * do not split the batches.
 */
export type TransferWriter = { write(item: WriteItem): Promise<WriteResult> };

export class TransferWrites implements TransferWriter {
  private readonly batcher: Batcher<WriteItem, WriteResult>;
  /**
   * Creations in INIT with nothing else (no operation, no client_order_id, no path) take no
   * lock, so they have a batch of their own: a transfer whose debit waits on a locked row and is
   * cut short by lock_timeout can still be recorded in INIT and answered 202, instead of failing
   * again beside the rows that wait.
   */
  private readonly lockFree: Batcher<WriteItem, WriteResult>;

  constructor(
    private readonly sql: Sql,
    batch: BatchSettings,
  ) {
    this.batcher = new Batcher((items) => this.applyMany(items), { ...batch, key: keyOf });
    this.lockFree = new Batcher((items) => this.applyMany(items), { ...batch, key: keyOf, inFlightMax: 1 });
  }

  write(item: WriteItem): Promise<WriteResult> {
    assertPaths(item);
    return (takesNoLock(item) ? this.lockFree : this.batcher).call(item);
  }

  private async applyMany(items: readonly WriteItem[]): Promise<WriteResult[]> {
    const input = encodeBatch(items);
    const rows =
      writerFunction(items.length) === 'transfer_apply_set'
        ? await this.sql<{ out: RawResult[] }[]>`SELECT transfer_apply_set(${input}::text::jsonb, ${BALANCE_UNITS_MAX}::bigint) AS out`
        : await this.sql<{ out: RawResult[] }[]>`SELECT transfer_apply(${input}::text::jsonb, ${BALANCE_UNITS_MAX}::bigint) AS out`;
    const out = rows[0]?.out;
    if (out === undefined || out.length !== items.length)
      throw new Error(`transfer_apply answered ${out?.length} results for ${items.length} items`);
    return out.map(decode);
  }
}

function takesNoLock(item: WriteItem): boolean {
  return (
    item.kind === 'create' &&
    item.op === null &&
    item.transfer.clientOrderId === null &&
    !item.checkFundingTarget &&
    item.paths.ok.length === 0 &&
    item.paths.ko.length === 0
  );
}

/** One item per req_id per batch: each is decided against what the batch read before it. */
function keyOf(item: WriteItem): string {
  return item.kind === 'create' ? item.transfer.reqId : item.params.reqId;
}

/** Pair assertion: every path is a walk of the FSM from the state the item expects. */
function assertPaths(item: WriteItem): void {
  if (item.kind === 'op') return;
  const start: TransferStateName = item.kind === 'create' ? 'INIT' : item.from;
  for (const path of [item.paths.ok, item.paths.ko]) {
    let at = start;
    for (const step of path) {
      assertTransition(at, step.event, step.to);
      at = step.to;
    }
  }
}

/** A path's steps as [state, event code, terminal]: what each history row stores (src/domain/fsm.ts EVENT_CODES). */
function steps(path: readonly PathStep[]): [number, number, boolean][] {
  return path.map((s) => [STATE_IDS[s.to], EVENT_CODES[s.event], isTerminal(s.to)]);
}

/** Which form of the writer a batch of `items` items goes through: the set-based one for large batches. */
export function writerFunction(items: number): 'transfer_apply' | 'transfer_apply_set' {
  return items >= SET_BASED_ROWS_MIN ? 'transfer_apply_set' : 'transfer_apply';
}

/** A batch as the writer's functions read it: its items, in order, as one JSON array. */
export function encodeBatch(items: readonly WriteItem[]): string {
  return JSON.stringify(items.map(encodeItem));
}

/** An item as `transfer_apply` reads it (src/db/migrations/repeatable/transfer_apply.sql). */
function encodeItem(item: WriteItem): Record<string, unknown> {
  switch (item.kind) {
    case 'create': {
      const t = item.transfer;
      return {
        k: 'c',
        r: t.reqId,
        u: t.userId.toString(),
        a: t.asset,
        m: t.amount.toString(),
        e: STATE_IDS.INIT,
        st: ACCOUNT_TYPE[t.from],
        tt: ACCOUNT_TYPE[t.to],
        coid: t.clientOrderId,
        o: item.op,
        c: item.code,
        p: steps(item.paths.ok),
        q: steps(item.paths.ko),
        ...(item.checkFundingTarget ? { tf: 1 } : {}),
        ...(item.dueNow ? { due: 1 } : {}),
      };
    }
    case 'move': {
      const p = item.params;
      return {
        k: 'm',
        r: p.reqId,
        u: p.userId.toString(),
        a: p.asset,
        m: p.amount.toString(),
        e: STATE_IDS[item.from],
        o: item.op,
        c: item.code,
        p: steps(item.paths.ok),
        q: steps(item.paths.ko),
      };
    }
    case 'op': {
      const p = item.params;
      return { k: 'o', r: p.reqId, u: p.userId.toString(), a: p.asset, m: p.amount.toString(), o: item.op };
    }
  }
}

function decode(raw: RawResult): WriteResult {
  switch (raw.k) {
    case 'moved':
      return {
        kind: 'moved',
        state: mustState(raw.s),
        at: new Date(Number(raw.at)),
        transferId: String(raw.id),
        op: answerOf(raw),
        code: raw.code === undefined || raw.code === null ? null : mustErrorCode(raw.code, 'transfer_apply'),
      };
    case 'lost':
      return { kind: 'lost' };
    case 'exists':
      return { kind: 'exists' };
    case 'held':
    case 'op': {
      const op = answerOf(raw);
      if (op === null) throw new Error(`transfer_apply answered ${raw.k} without an outcome`);
      return { kind: raw.k, op };
    }
    default:
      throw new Error(`transfer_apply answered an unknown result ${JSON.stringify(raw)}`);
  }
}

function answerOf(raw: RawResult): OpAnswer | null {
  if (raw.oc === undefined || raw.oc === null) return null;
  return opAnswer(raw.oc, raw.code ?? null, 'transfer_apply');
}

/**
 * An operation's outcome as PostgreSQL holds it (transfer_apply's answer, a funding_operations
 * row), checked where it is read: an unknown outcome, a refusal without a code or with a code
 * this service never writes is a programmer error and stops here.
 */
export function opAnswer(outcome: string, code: string | null, where: string): OpAnswer {
  switch (outcome) {
    case 'APPLIED':
    case 'CONFLICT':
      return { outcome };
    case 'REJECTED':
      if (code === null) throw new Error(`${where} answered REJECTED without a code`);
      return { outcome, code: mustOpRefusalCode(code, where) };
    default:
      throw new Error(`${where} answered outcome ${outcome}`);
  }
}

function mustState(id: number | undefined): TransferStateName {
  const name = id === undefined ? null : stateName(id);
  if (name === null) throw new Error(`transfer_apply answered unknown state ${id}`);
  return name;
}
