// Backpressure (spec 003 §9.3): when a shard's mailbox is full, the transfer is still created,
// in INIT and due at once, and answered PENDING; the shard's recovery scan drives it. Nothing is
// dropped and nothing waits in memory.

import type { NewTransfer } from '../coordinator/types.js';
import type { TransferStore } from '../db/transfers.js';
import { checkNewTransfer } from '../domain/checks.js';
import type { SubmitReply } from '../http/app.js';
import type { Logger } from '../log.js';

export async function recordForScan(t: NewTransfer, store: TransferStore, log: Logger): Promise<SubmitReply> {
  const invalid = checkNewTransfer(t);
  if (invalid !== null) return { kind: 'refused', code: invalid };
  if (t.clientOrderId !== null) {
    const existing = await store.byClientOrderId(t.userId, t.clientOrderId);
    if (existing !== null) return sameRequest(existing, t) ? { kind: 'transfer', view: existing } : { kind: 'refused', code: 'DUPLICATE_REQUEST' };
  }
  const view = await store.insertDue(t);
  if (view === null) return recordForScan(t, store, log);
  log.warn('coordinator mailbox full: transfer recorded for the recovery scan', { req_id: t.reqId, user_id: t.userId });
  return { kind: 'transfer', view };
}

function sameRequest(v: { userId: bigint; from: string; to: string; asset: string; amount: bigint }, t: NewTransfer): boolean {
  return v.userId === t.userId && v.from === t.from && v.to === t.to && v.asset === t.asset && v.amount === t.amount;
}
