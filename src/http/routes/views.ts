// How a transfer is shown to a client (spec 001 §8.1, §8.2): amounts as decimal strings.

import type { TransferView } from '../../domain/transfer.js';
import type { HistoryEntry } from '../../db/transfers.js';
import { isTerminal } from '../../domain/fsm.js';
import { formatAmount } from '../../domain/money.js';

const MESSAGE_BY_STATE: Readonly<Record<string, string>> = {
  COMMITTED: 'Transfer successful',
  FAILED: 'Transfer failed; no funds moved',
  ROLLED_BACK: 'Transfer rolled back; funds returned to the source',
};

/** What a client is shown for every state that is not final (spec 001 §8.1). */
export const CLIENT_PENDING = 'PENDING';

/**
 * Spec 001 §8.1: `state` is a final state or "PENDING"; where the transfer is in the machine is
 * `internal_state`, for operators and for clients that want the detail.
 */
export function transferJson(view: TransferView, precision: number): Record<string, unknown> {
  return {
    transfer_id: view.transferId,
    req_id: view.reqId,
    from: view.from,
    to: view.to,
    asset: view.asset,
    amount: formatAmount(view.amount, precision),
    state: isTerminal(view.state) ? view.state : CLIENT_PENDING,
    internal_state: view.state,
    message: MESSAGE_BY_STATE[view.state] ?? (isTerminal(view.state) ? view.state : 'Transfer is processing'),
    created_at: view.createdAt,
    updated_at: view.updatedAt,
  };
}

export function historyJson(history: readonly HistoryEntry[]): Record<string, unknown>[] {
  return history.map((h) => ({ from: h.from, state: h.to, event: h.event, detail: h.detail, at: h.at }));
}
