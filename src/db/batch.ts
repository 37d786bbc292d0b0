// Coalesces concurrent calls into one statement (or one transaction) for many rows. While a batch
// is in flight, new calls wait in the queue; when it ends, the next batch takes all of them, so
// the batch grows with the load the way a group commit does, and a lone call goes at once.
// Each caller still gets its own answer. A batch that PostgreSQL refused because of one row's
// data is split in halves and each half re-run, one after the other, until the bad row fails
// alone: about 2·log2(rows) statements, never one per row at once. Any other failure (a lost
// connection, a timeout, a deadlock, the server shutting down) says nothing about one row: every
// caller gets that error at once and retries with its own backoff, so a database blip never
// turns into a storm of re-runs. Re-runs are safe because every batched statement here is
// idempotent (a compare-and-swap, or an operation recorded per (req_id, op)).

import { errorCode } from '../error-text.js';
import { BATCH_IN_FLIGHT_MAX_DEFAULT } from '../limits.js';
import { oncePerTurn } from '../turn-flush.js';

type BatchRun<I, O> = (inputs: readonly I[]) => Promise<readonly O[]>;

/** What the owner of a store or adapter decides for all of its batches (PG_BATCH_MAX, logging). */
export type BatchSettings = {
  /** Rows per batch. */
  readonly batchMax: number;
  /** Told when a batch failed because of its data and is split to find the row. */
  readonly onIsolate?: (rows: number, error: unknown) => void;
};

type BatcherOptions<I> = BatchSettings & {
  /** Batches in flight at once (each holds a connection); BATCH_IN_FLIGHT_MAX_DEFAULT if absent. */
  readonly inFlightMax?: number;
  /** Rows with the same key never share a batch: a second one waits for the next. */
  readonly key?: (input: I) => string;
};

type Call<I, O> = { readonly input: I; readonly resolve: (output: O) => void; readonly reject: (error: unknown) => void };

export class Batcher<I, O> {
  private queue: Call<I, O>[] = [];
  private inFlight = 0;
  private readonly inFlightMax: number;
  private readonly pumpAfterTurn = oncePerTurn(() => this.pump());

  constructor(
    private readonly run: BatchRun<I, O>,
    private readonly opts: BatcherOptions<I>,
  ) {
    this.inFlightMax = opts.inFlightMax ?? BATCH_IN_FLIGHT_MAX_DEFAULT;
    if (!Number.isSafeInteger(opts.batchMax) || opts.batchMax < 1)
      throw new Error(`Batcher: batchMax must be a positive integer, got ${opts.batchMax}`);
    if (!Number.isSafeInteger(this.inFlightMax) || this.inFlightMax < 1)
      throw new Error(`Batcher: inFlightMax must be a positive integer, got ${this.inFlightMax}`);
  }

  call(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ input, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.inFlight >= this.inFlightMax) return;
    // Calls made in the same turn share a batch.
    this.pumpAfterTurn();
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < this.inFlightMax) {
      const batch = this.take();
      this.inFlight += 1;
      void this.execute(batch).finally(() => {
        this.inFlight -= 1;
        if (this.queue.length > 0) this.schedule();
      });
    }
  }

  /** The next batch, in arrival order, skipping (and keeping queued) a key already taken. */
  private take(): Call<I, O>[] {
    const key = this.opts.key;
    if (key === undefined) return this.queue.splice(0, this.opts.batchMax);
    const batch: Call<I, O>[] = [];
    const rest: Call<I, O>[] = [];
    const keys = new Set<string>();
    for (const call of this.queue) {
      const k = key(call.input);
      if (batch.length < this.opts.batchMax && !keys.has(k)) {
        keys.add(k);
        batch.push(call);
      } else {
        rest.push(call);
      }
    }
    this.queue = rest;
    return batch;
  }

  private async execute(batch: readonly Call<I, O>[]): Promise<void> {
    try {
      settle(batch, await this.runChecked(batch.map((c) => c.input)));
    } catch (error) {
      if (batch.length === 1 || !isDataError(error)) {
        for (const call of batch) call.reject(error);
        return;
      }
      this.opts.onIsolate?.(batch.length, error);
      const half = Math.ceil(batch.length / 2);
      await this.execute(batch.slice(0, half));
      await this.execute(batch.slice(half));
    }
  }

  private async runChecked(inputs: readonly I[]): Promise<readonly O[]> {
    const outputs = await this.run(inputs);
    if (outputs.length !== inputs.length) throw new Error(`Batcher: ${inputs.length} rows in, ${outputs.length} answers out`);
    return outputs;
  }
}

function settle<I, O>(batch: readonly Call<I, O>[], outputs: readonly O[]): void {
  for (const [i, call] of batch.entries()) call.resolve(outputs[i] as O);
}

/**
 * Whether PostgreSQL refused the statement because of the data it was given (SQLSTATE classes
 * 22 data exception, 23 integrity violation, P0 raised by a function): splitting the batch
 * finds the row. Everything else (class 08 connection, 40 deadlock or serialization, 53
 * resources, 57 shutdown or statement timeout, a driver error without a code) is unknown.
 */
function isDataError(error: unknown): boolean {
  const code = errorCode(error);
  return code !== null && /^(22|23|P0)/.test(code);
}

/**
 * Whether PostgreSQL refused one operation's own row with a constraint: a CHECK or NOT NULL
 * violation (23514, 23502) or a value out of range (22003, 22001). Only a batch of one row sees
 * such an error (a larger one is split first), so it names that row: its transaction rolled back
 * and nothing was applied, and spec 001 §4.1 makes it an explicit failure. A unique or foreign-key
 * violation (23505, 23503) is not one of them: it can be a race with a twin that did apply the
 * operation, so it stays unknown and is retried. So do errors raised by our own functions (P0).
 */
export function isConstraintRefusal(error: unknown): boolean {
  const code = errorCode(error);
  return code !== null && CONSTRAINT_REFUSALS.has(code);
}

const CONSTRAINT_REFUSALS: ReadonlySet<string> = new Set(['23514', '23502', '22003', '22001']);
