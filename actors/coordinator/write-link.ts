// With several coordinator shards, every shard's transfer writes share one
// batched writer, shard 0's, so more shards do not split PostgreSQL's batches (each batch is one
// transaction with a fixed cost). This is shard i's end: a TransferWriter whose writes cross to
// shard 0 on a MessagePort, those of one turn in one message, each answered with its own outcome.
// An error crosses as a value and is thrown here again with its code, so the adapters tell a
// refusal from an unknown outcome exactly as with a writer of their own. Once the port closes
// (shard 0's thread stopped or died), every write still waiting, and every later one, fails as a
// lost connection: its outcome is unknown, and the transfer stays for the retry or the recovery scan.

import type { MessagePort } from 'node:worker_threads';
import type { TransferWriter, WriteItem, WriteResult } from '../../src/db/transfer-writes.js';
import type { SharedWriteAnswers, SharedWriteOutcome, SharedWrites } from '../protocol.js';
import { sendPerTurn, WaitingById } from './port-answers.js';

/** A shared write that failed: the writer's message and, when it had one, its error code. */
export class SharedWriteError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
    this.name = 'SharedWriteError';
  }
}

/** The code a closed link fails with: funding.ts reads it as a lost connection (unknown outcome). */
export const LINK_CLOSED_CODE = 'CONNECTION_CLOSED';

type Waiter = { readonly resolve: (result: WriteResult) => void; readonly reject: (error: Error) => void };

export class WriteLink implements TransferWriter {
  private readonly waiting = new WaitingById<Waiter>();
  private closedReason: string | null = null;
  /** This turn's writes leave in one message; one that cannot be posted fails its writes. */
  private readonly send: (id: number, item: WriteItem) => void;

  constructor(
    private readonly port: MessagePort,
    /** Told of a message that is not a well-formed batch of outcomes (a programmer's error). */
    private readonly onMalformed: (detail: string) => void,
  ) {
    this.send = sendPerTurn(
      port,
      (ids, items: WriteItem[]): SharedWrites => ({ kind: 'writes.request', ids, items }),
      (ids, error) => {
        // Not sent (a value that cannot cross): none of these writes reached the writer.
        for (const id of ids) {
          this.waiting
            .take(id)
            ?.reject(new SharedWriteError(`the write could not be sent to the shared writer: ${String(error)}`, undefined));
        }
      },
    );
    port.on('message', (message: SharedWriteAnswers) => this.answered(message));
    port.on('close', () => this.close("shard 0's shared writer closed its port"));
  }

  write(item: WriteItem): Promise<WriteResult> {
    if (this.closedReason !== null) return Promise.reject(new SharedWriteError(this.closedReason, LINK_CLOSED_CODE));
    return new Promise<WriteResult>((resolve, reject) => this.send(this.waiting.add({ resolve, reject }), item));
  }

  /**
   * Fails every write still waiting, sent or not, and every later one, as a lost connection. A
   * message of this turn still to leave goes to the closed port, which drops it.
   */
  close(reason: string): void {
    if (this.closedReason !== null) return;
    this.closedReason = reason;
    for (const w of this.waiting.takeAll()) w.reject(new SharedWriteError(reason, LINK_CLOSED_CODE));
    this.port.close();
  }

  private answered(message: SharedWriteAnswers): void {
    this.waiting.answered(message, 'writes.answers', message.outcomes, { value: 'outcome', waiter: 'write' }, settle, this.onMalformed);
  }
}

function settle(w: Waiter, outcome: SharedWriteOutcome): void {
  if (outcome.kind === 'result') w.resolve(outcome.result);
  else w.reject(new SharedWriteError(outcome.message, outcome.code ?? undefined));
}
