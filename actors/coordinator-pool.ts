// The main thread's handle on the coordinator shards: one piscina pool of exactly one thread
// per shard (piscina cannot pin a task to a chosen thread, so pinning is by pool), routed by
// shard = user_id mod N. New transfers go through each shard's TransferMailbox, which bounds
// them by count and sends them in batches; other tasks use the pool's bounded queue.

import { shardOfUser } from '../src/domain/shard.js';
import type { MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { CoordinatorConfig, NewTransfer } from '../src/coordinator/types.js';
import type { HaltState } from '../src/db/halt-state.js';
import type { SubmitReply } from '../src/http/app.js';
import type { Logger } from '../src/log.js';
import { coordinatorThread, type ShardScrape } from '../src/metrics/aggregate.js';
import { finishedFrom } from '../src/metrics/finished.js';
import { LastKnownFamilies } from '../src/metrics/last-known.js';
import { TransferMailbox } from './coordinator-mailbox.js';
import type { CoordinatorResult, CoordinatorTask, CoordinatorWorkerData, SubmitAnswer } from './protocol.js';
import { CONTROL_TASKS_MAX } from '../src/limits.js';

export type PoolOptions = {
  readonly shards: number;
  readonly base: Omit<CoordinatorConfig, 'shard' | 'shards'>;
  readonly mailboxMax: number;
  readonly concurrencyMax: number;
  readonly logLevel: CoordinatorWorkerData['logLevel'];
  readonly logFormat: CoordinatorWorkerData['logFormat'];
  readonly connectUbs: () => MessagePort;
  readonly log: Logger;
  /** A coordinator thread died: the process must stop and recover from its stores. */
  readonly onFatal: (error: Error) => void;
};

export class CoordinatorPools {
  private readonly mailboxes: readonly TransferMailbox[];
  /** Each shard's last answer to coord.metrics: a busy shard's counters must not seem to reset. */
  private readonly lastFamilies = new LastKnownFamilies();
  private stopping = false;

  private constructor(
    private readonly pools: readonly Piscina[],
    private readonly mailboxMax: number,
    concurrencyMax: number,
  ) {
    this.mailboxes = pools.map(
      (_pool, shard) => new TransferMailbox({ mailboxMax, concurrencyMax, send: (transfers) => this.submitMany(shard, transfers) }),
    );
  }

  static async start(opts: PoolOptions): Promise<CoordinatorPools> {
    const pools: Piscina[] = [];
    for (let shard = 0; shard < opts.shards; shard += 1) {
      const data: CoordinatorWorkerData = {
        config: { ...opts.base, shard, shards: opts.shards },
        logLevel: opts.logLevel,
        logFormat: opts.logFormat,
      };
      const pool = new Piscina({
        filename: new URL('./coordinator-worker.js', import.meta.url).href,
        minThreads: 1,
        maxThreads: 1,
        idleTimeout: Infinity,
        concurrentTasksPerWorker: opts.concurrencyMax + CONTROL_TASKS_MAX,
        maxQueue: opts.mailboxMax,
        // The shard keeps timers and a UBSCore port alive between tasks.
        atomics: 'disabled',
        workerData: data,
      });
      pool.on('error', (error: unknown) => opts.onFatal(error instanceof Error ? error : new Error(String(error))));
      pools.push(pool);
    }
    const self = new CoordinatorPools(pools, opts.mailboxMax, opts.concurrencyMax);
    await Promise.all(
      pools.map(async (pool, shard) => {
        const port = opts.connectUbs();
        const task: CoordinatorTask = { kind: 'coord.init', ubsPort: port };
        const result = (await pool.run(task, { transferList: [port] })) as CoordinatorResult;
        if (result.kind !== 'coord.ready') throw new Error(`coordinator ${shard} did not start: ${JSON.stringify(result)}`);
      }),
    );
    // A thread that dies (an uncaught exception, memory) is replaced by piscina with a fresh one
    // that never got coord.init: every transfer of the shard would answer 500 from then on.
    // A shard's thread is its state (timers, retry schedule, UBSCore port), so the process
    // stops instead, and a supervisor restarts it: start-up recovery finishes every transfer.
    pools.forEach((pool, shard) => {
      pool.on('workerDestroy', () => {
        if (!self.stopping) opts.onFatal(new Error(`the thread of coordinator shard ${shard} exited`));
      });
    });
    opts.log.info('coordinators ready', { shards: opts.shards });
    return self;
  }

  shardOf(userId: bigint): number {
    return shardOfUser(userId, this.pools.length);
  }

  /** Answers `busy` at once when the shard's mailbox is full. */
  submit(transfer: NewTransfer): Promise<SubmitReply> {
    const mailbox = this.mailboxes[this.shardOf(transfer.userId)];
    if (mailbox === undefined) throw new Error(`no shard for user ${transfer.userId}`);
    return mailbox.submit(transfer);
  }

  async drive(userId: bigint, reqId: string): Promise<SubmitReply> {
    const result = await this.run(this.shardOf(userId), { kind: 'coord.drive', reqId });
    switch (result.kind) {
      case 'coord.transfer':
        return { kind: 'transfer', view: result.view };
      case 'busy':
        return { kind: 'busy' };
      case 'coord.not_found':
        return { kind: 'refused', code: 'NOT_FOUND' };
      default:
        return { kind: 'error', message: result.kind === 'coord.error' ? result.message : `unexpected coordinator answer ${result.kind}` };
    }
  }

  /**
   * Every shard's registry and mailbox depth, read without waiting behind the mailbox. A shard
   * that does not answer now (busy, failing) is given with the families it gave last, marked not
   * fresh: its series stay, at their last values, instead of vanishing or dropping to zero.
   */
  async metrics(): Promise<ShardScrape[]> {
    return Promise.all(
      this.pools.map(async (pool, shard) => {
        const depth = (this.mailboxes[shard]?.depth ?? 0) + pool.queueSize;
        const result = await this.run(shard, { kind: 'coord.metrics' });
        const thread = coordinatorThread(shard);
        const scrape = this.lastFamilies.take(thread, result.kind === 'coord.metrics' ? result.families : null);
        return { shard, depth, ...(scrape ?? { thread, families: [], fresh: false }) };
      }),
    );
  }

  /**
   * Transfers the shards moved into a final state since they started, and of those FAILED or
   * ROLLED_BACK (spec 002's failure rate); null when a shard did not answer.
   */
  async finishedCounts(): Promise<{ finished: number; failed: number } | null> {
    const scrapes = await this.metrics();
    if (scrapes.some((s) => !s.fresh)) return null;
    let finished = 0;
    let failed = 0;
    for (const [state, n] of finishedFrom(scrapes.flatMap((s) => s.families))) {
      finished += n;
      if (state !== 'COMMITTED') failed += n;
    }
    return { finished, failed };
  }

  /** Makes every shard forget its cached assets; resolves once all have. */
  async assetsChanged(): Promise<void> {
    await Promise.all(this.pools.map((_pool, shard) => this.run(shard, { kind: 'coord.assets_changed' })));
  }

  /**
   * Tells every shard the service was halted or resumed; resolves once all have taken it. It
   * skips the busy check of other control tasks: a halt must reach a shard under load. A shard
   * it cannot reach re-reads the stored halt on its own timer.
   */
  async haltChanged(state: HaltState): Promise<void> {
    const failed: string[] = [];
    await Promise.all(
      this.pools.map(async (pool, shard) => {
        const task: CoordinatorTask = { kind: 'coord.halt', state };
        const result = (await pool
          .run(task)
          .catch((error: unknown) => ({ kind: 'coord.error', message: String(error) }))) as CoordinatorResult;
        if (result.kind !== 'coord.done') failed.push(`shard ${shard}: ${result.kind === 'coord.error' ? result.message : result.kind}`);
      }),
    );
    if (failed.length > 0) throw new Error(`halt not delivered to ${failed.join('; ')}`);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.pools.map((pool) => this.run(this.pools.indexOf(pool), { kind: 'coord.stop' })));
    await Promise.all(this.pools.map((pool) => pool.destroy()));
  }

  /** One batch of new transfers to the shard: one answer per transfer, in order, never an exception. */
  private async submitMany(shard: number, transfers: readonly NewTransfer[]): Promise<readonly SubmitAnswer[]> {
    const pool = this.pools[shard];
    if (pool === undefined) throw new Error(`no shard ${shard}`);
    const task: CoordinatorTask = { kind: 'coord.submit_many', transfers };
    let result: CoordinatorResult;
    try {
      result = (await pool.run(task)) as CoordinatorResult;
    } catch (error) {
      result = { kind: 'coord.error', message: error instanceof Error ? error.message : String(error) };
    }
    if (result.kind === 'coord.submitted') return result.answers;
    const message = result.kind === 'coord.error' ? result.message : `unexpected coordinator answer ${result.kind}`;
    return transfers.map(() => ({ kind: 'error', message }));
  }

  private async run(shard: number, task: CoordinatorTask): Promise<CoordinatorResult | { kind: 'busy' }> {
    const pool = this.pools[shard];
    if (pool === undefined) throw new Error(`no shard ${shard}`);
    // A full mailbox is backpressure, answered at once rather than queued without bound.
    if (pool.queueSize >= this.mailboxMax) return { kind: 'busy' };
    try {
      return (await pool.run(task)) as CoordinatorResult;
    } catch (error) {
      return { kind: 'coord.error', message: error instanceof Error ? error.message : String(error) };
    }
  }
}
