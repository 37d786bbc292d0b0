// How a transfer is shown to an operator: the client's view plus what only an operator reads
// (user, retries, the last unknown outcome's reason, client_order_id) and the state history.

import type { TransferView } from '../../domain/transfer.js';
import { formatAmount } from '../../domain/money.js';
import type { AppDeps } from '../deps.js';
import { historyJson } from './views.js';
import { UNKNOWN_WAIT_ADVICE, unknownWaitOf } from '../../db/stuck.js';

export async function adminTransfersJson(
  deps: Pick<AppDeps, 'transfers' | 'assets'>,
  views: readonly TransferView[],
): Promise<Record<string, unknown>[]> {
  const notes = await deps.transfers.notes(views.map((v) => v.reqId));
  const items = [];
  for (const v of views) {
    const precision = (await deps.assets.get(v.asset))?.precision ?? 0;
    const note = notes.get(v.reqId);
    items.push({
      req_id: v.reqId,
      transfer_id: v.transferId,
      user_id: v.userId.toString(),
      client_order_id: note?.clientOrderId ?? null,
      from: v.from,
      to: v.to,
      asset: v.asset,
      amount: formatAmount(v.amount, precision),
      amount_units: v.amount.toString(),
      state: v.state,
      retry_count: v.retryCount,
      error_code: v.errorCode,
      last_error: note?.lastError ?? null,
      advice: adviceOf(v),
      created_at: v.createdAt,
      updated_at: v.updatedAt,
      history: historyJson(await deps.transfers.history(v.reqId)),
    });
  }
  return items;
}

/** What an operator does for this transfer, when its state asks for something: one waiting on an unknown outcome. */
function adviceOf(v: TransferView): string | null {
  const wait = unknownWaitOf(v);
  return wait === null ? null : `${v.state} (${wait.direction}), ${wait.waitsOn}'s outcome unknown: ${UNKNOWN_WAIT_ADVICE}`;
}
