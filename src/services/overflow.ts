// Backpressure (spec 003 §9.3): when a shard's mailbox is full, the transfer is still created,
// in INIT and due at once, and answered PENDING; the shard's recovery scan drives it. Nothing is
// dropped and nothing waits in memory. This path creates a transfer on the main thread, so it
// honours the halt itself (MON-003): no transfer row is written while the service is halted.

import type { NewTransfer, SubmitReply } from '../domain/transfer.js';
import type { HaltState } from '../db/halt-state.js';
import type { TransferStore } from '../db/transfers.js';
import { checkNewTransfer } from '../domain/checks.js';
import type { Logger } from '../log.js';

export async function recordForScan(
  t: NewTransfer,
  store: TransferStore,
  log: Logger,
  halt: { readonly current: HaltState },
): Promise<SubmitReply> {
  if (halt.current !== null) return { kind: 'refused', code: 'SERVICE_HALTED' };
  const invalid = checkNewTransfer(t);
  if (invalid !== null) return { kind: 'refused', code: invalid };
  const created = await store.create(t, true);
  if (created.kind === 'duplicate') return created;
  if (created.kind === 'created')
    log.warn('coordinator mailbox full: transfer recorded for the recovery scan', { req_id: t.reqId, user_id: t.userId });
  return { kind: 'transfer', view: created.view };
}
