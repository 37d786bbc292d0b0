// The Trading adapter: SPOT balances held by UBSCore. It re-checks its inputs, sends one
// command and maps the answer to an OpOutcome. No answer within the timeout is "unknown"
// (PENDING), never a failure: UBSCore may have applied it, and a retry is idempotent.

import { checkOpRequest } from '../domain/checks.js';
import { failed, isBusinessCode, pending, SUCCESS, type OpOutcome, type PendingCause, type TransferOp } from '../domain/types.js';
import type { UbsSend } from '../ubscore/control.js';
import type { UbsCommand, UbsResult } from '../domain/spot-commands.js';
import { OperationAdapter, type OpRequest, type QueryOutcome } from './types.js';
import { errorText } from '../error-text.js';

export class TradingAdapter extends OperationAdapter {
  override readonly account = 'SPOT' as const;

  constructor(
    private readonly send: UbsSend,
    private readonly timeoutMs: number,
  ) {
    super();
  }

  async query(reqId: string, op: TransferOp): Promise<QueryOutcome> {
    const called = await this.call({ kind: 'query_op', op, key: reqId }, `UBSCore query ${op}`);
    if (!called.answered) return pending(called.cause);
    const result = called.result;
    if (result.kind === 'not_found') return { kind: 'NOT_FOUND' };
    return toOutcome(op, result);
  }

  protected async apply(op: TransferOp, req: OpRequest): Promise<OpOutcome> {
    const invalid = checkOpRequest(req);
    if (invalid !== null) return failed(invalid);
    const command: UbsCommand = { kind: 'transfer_op', op, reqId: req.reqId, userId: req.userId, asset: req.asset, amount: req.amount };
    const called = await this.call(command, `UBSCore ${op}`);
    return called.answered ? toOutcome(op, called.result) : pending(called.cause);
  }

  /** UBSCore's answer, or why there is none: no answer is an unknown outcome, never a failure. */
  private async call(command: UbsCommand, what: string): Promise<Called> {
    try {
      const result = await this.send(command, this.timeoutMs);
      if (result !== null) return { answered: true, result };
      return { answered: false, cause: { kind: 'timeout', detail: `${what}: no answer within ${this.timeoutMs} ms` } };
    } catch (error) {
      return { answered: false, cause: { kind: 'exception', detail: `${what}: send failed: ${errorText(error)}` } };
    }
  }
}

type Called = { readonly answered: true; readonly result: UbsResult } | { readonly answered: false; readonly cause: PendingCause };

function toOutcome(op: TransferOp, result: UbsResult): OpOutcome {
  switch (result.kind) {
    case 'applied':
      return SUCCESS;
    case 'rejected':
      // A refund UBSCore refuses leaves the transfer COMPENSATING for an operator; it is never final.
      if (op === 'REFUND') return pending({ kind: 'refund_refused', code: result.code, detail: `UBSCore refused ${op}: ${result.code}` });
      if (result.code === 'OVERFLOW') return failed('OVERFLOW');
      if (!isBusinessCode(result.code)) return pending({ kind: 'unexpected_answer', detail: `UBSCore refused ${op}: ${result.code}` });
      return failed(result.code);
    case 'invalid':
      return op === 'REFUND'
        ? pending({ kind: 'refund_refused', code: result.code, detail: `UBSCore refused refund input: ${result.code}` })
        : failed(result.code);
    case 'conflict':
      return pending({ kind: 'idempotency_conflict', detail: result.detail });
    case 'unavailable': {
      // UBSCore could not make the command durable, or refuses commands while its disk fails.
      const detail = `UBSCore unavailable (${result.reason}) for ${op}`;
      return pending(result.reason === 'wal_unwritable' ? { kind: 'wal_unwritable', detail } : { kind: 'ubscore_unavailable', detail });
    }
    case 'not_found':
    case 'balances':
    case 'status_set':
    case 'audit_cut':
    case 'op_seqs':
      return pending({ kind: 'unexpected_answer', detail: `UBSCore answered ${result.kind} to ${op}` });
  }
}
