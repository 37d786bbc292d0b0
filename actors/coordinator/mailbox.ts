// One shard's mailbox of new transfers, on the main thread. It counts transfers, not tasks: at
// most `concurrencyMax` are in the shard at once and at most `mailboxMax` wait behind them; one
// more is answered `busy` at once (admission then parks it for the recovery scan). The transfers
// that arrive in one event-loop turn leave together, in batches of at most SUBMIT_BATCH_MAX, so
// the shard gets one message per batch rather than one per transfer; each comes back on its own,
// and frees its place in the shard, as soon as its drive ends.

import type { NewTransfer, SubmitReply } from '../../src/domain/transfer.js';
import { SUBMIT_BATCH_MAX } from '../../src/limits.js';
import { oncePerTurn } from '../../src/turn-flush.js';

type MailboxOptions = {
  readonly mailboxMax: number;
  readonly concurrencyMax: number;
  /** Sends one batch to the shard; calls `answer` once per transfer, by its index in the batch, and never throws. */
  readonly send: (transfers: readonly NewTransfer[], answer: (index: number, reply: SubmitReply) => void) => void;
};

type Waiting = { readonly transfer: NewTransfer; readonly resolve: (reply: SubmitReply) => void };

const BUSY: SubmitReply = { kind: 'busy' };

export class TransferMailbox {
  private waiting: Waiting[] = [];
  private inShard = 0;
  /** Sends once the current event-loop turn has run, so the transfers of that turn leave together. */
  private readonly queueFlush = oncePerTurn(() => this.flush());

  constructor(private readonly opts: MailboxOptions) {
    if (!Number.isInteger(opts.mailboxMax) || opts.mailboxMax < 1)
      throw new Error(`mailboxMax must be a positive integer, got ${opts.mailboxMax}`);
    if (!Number.isInteger(opts.concurrencyMax) || opts.concurrencyMax < 1)
      throw new Error(`concurrencyMax must be a positive integer, got ${opts.concurrencyMax}`);
  }

  /** Transfers waiting for the shard, not yet sent. */
  get depth(): number {
    return this.waiting.length;
  }

  /** Transfers sent to the shard and not yet answered. */
  get inFlight(): number {
    return this.inShard;
  }

  submit(transfer: NewTransfer): Promise<SubmitReply> {
    // A full mailbox is backpressure, answered at once rather than queued without bound. The
    // transfers gathered this turn count as waiting only for what the shard cannot take now.
    if (this.waiting.length + this.inShard >= this.opts.concurrencyMax + this.opts.mailboxMax) return Promise.resolve(BUSY);
    return new Promise((resolve) => {
      this.waiting.push({ transfer, resolve });
      this.queueFlush();
    });
  }

  private flush(): void {
    while (this.waiting.length > 0 && this.inShard < this.opts.concurrencyMax) {
      const count = Math.min(SUBMIT_BATCH_MAX, this.opts.concurrencyMax - this.inShard, this.waiting.length);
      const batch = this.waiting.splice(0, count);
      this.inShard += batch.length;
      this.send(batch);
    }
  }

  private send(batch: readonly Waiting[]): void {
    // `send` calls this exactly once per transfer, and never throws (SubmitLink's promise).
    const answer = (index: number, reply: SubmitReply) => {
      const w = batch[index];
      if (w === undefined) throw new Error(`an answer for transfer ${index} of a batch of ${batch.length}`);
      this.inShard -= 1;
      w.resolve(reply);
      // The places freed in this turn are filled together, with one batch.
      if (this.waiting.length > 0) this.queueFlush();
    };
    this.opts.send(
      batch.map((w) => w.transfer),
      answer,
    );
  }
}
