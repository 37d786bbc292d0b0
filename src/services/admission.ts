// Admission: the one way a new transfer comes in, after the HTTP edge has checked the request
// (src/domain/check-order.ts lists the order). Here the halt is checked (MON-003), the transfer
// goes to its coordinator shard, and when that shard's mailbox is full it is parked for the
// scan (spec 003 §9.3, backpressure): still created, in INIT and due at once, and answered
// PENDING; the shard's recovery scan drives it. Nothing is dropped and nothing waits in memory.
// Parking writes a transfer from the main thread, so it honours the halt itself: no transfer row
// is written while the service is halted.

import type { CoordinatorShards } from '../coordinator/shards.js';
import type { HaltState } from '../db/halt-state.js';
import type { TransferStore } from '../db/transfers.js';
import { checkNewTransfer } from '../domain/checks.js';
import type { NewTransfer, SubmitReply } from '../domain/transfer.js';
import type { Logger } from '../log.js';

type Halt = { readonly current: HaltState };

/** The halt check of a new transfer (MON-003), the one every entry on the main thread asks. */
export function haltRefusal(halt: Halt): 'SERVICE_HALTED' | null {
  return halt.current === null ? null : 'SERVICE_HALTED';
}

export class Admission {
  constructor(
    private readonly deps: {
      readonly halt: Halt;
      readonly shards: Pick<CoordinatorShards, 'submit'>;
      readonly transfers: TransferStore;
      readonly log: Logger;
    },
  ) {}

  /** Admits a new transfer: refused while halted, else its shard's answer, or parked when the shard is busy. */
  async submit(t: NewTransfer): Promise<SubmitReply> {
    const halted = haltRefusal(this.deps.halt);
    if (halted !== null) return { kind: 'refused', code: halted };
    const reply = await this.deps.shards.submit(t);
    return reply.kind === 'busy' ? parkForScan(t, this.deps.transfers, this.deps.log, this.deps.halt) : reply;
  }
}

/** The busy path: the transfer is created in INIT, due at once, for its shard's recovery scan. */
export async function parkForScan(t: NewTransfer, store: TransferStore, log: Logger, halt: Halt): Promise<SubmitReply> {
  const halted = haltRefusal(halt);
  if (halted !== null) return { kind: 'refused', code: halted };
  const invalid = checkNewTransfer(t);
  if (invalid !== null) return { kind: 'refused', code: invalid };
  const created = await store.create(t, true);
  if (created.kind === 'duplicate') return created;
  if (created.kind === 'created')
    log.warn('coordinator mailbox full: transfer parked for the recovery scan', { req_id: t.reqId, user_id: t.userId });
  return { kind: 'transfer', view: created.view };
}
