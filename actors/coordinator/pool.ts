// The main thread's handle on the coordinator shards: one piscina pool of exactly one thread
// per shard (piscina cannot pin a task to a chosen thread, so pinning is by pool), routed by
// shard = user_id mod N. New transfers go through each shard's TransferMailbox, which bounds
// them by count and sends them in batches on the shard's submit port (SubmitLink), each answered
// as soon as its drive ends; an operator's drive uses the pool's bounded queue.
// Control (metrics, assets, halt, stop) goes through each shard's own comlink port, given to its
// thread in coord.init, so it never waits behind the shard's tasks; every call is bounded in time.
// With several shards, shard 0's batched PostgreSQL writer is every shard's (write-link.ts).

import { shardOfUser } from '../../src/domain/shard.js';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { type Remote, wrap } from 'comlink';
import { Piscina } from 'piscina';
import type { FinishedCounts } from '../../src/alerts/failure-window.js';
import type { CoordinatorShards, CoordinatorStartOptions } from '../../src/coordinator/shards.js';
import type { NewTransfer, SubmitReply } from '../../src/domain/transfer.js';
import type { HaltMiss, VersionedHalt } from '../../src/db/halt-state.js';
import type { Logger } from '../../src/log.js';
import { coordinatorThread, type ShardScrape } from '../../src/metrics/aggregate.js';
import { finishedFrom, systemFailedFrom } from '../../src/metrics/finished.js';
import { LastKnownFamilies } from '../../src/metrics/last-known.js';
import { TransferMailbox } from './mailbox.js';
import { SubmitLink } from './submit-link.js';
import type {
  CoordinatorControlApi,
  CoordinatorControlOutcome,
  CoordinatorMetricsOutcome,
  CoordinatorStopOutcome,
  CoordinatorResult,
  CoordinatorTask,
  CoordinatorWorkerData,
} from '../protocol.js';
import { nodeEndpoint } from '../ubscore/client.js';
import { CONTROL_TASKS_MAX, COORDINATOR_CONTROL_MS_MAX, COORDINATOR_STOP_MS_MAX } from '../../src/limits.js';
import { within } from '../../src/within.js';
import { errorText } from '../../src/error-text.js';

/** One shard's thread: its pool of one thread, its submit port, and the control API on that thread's port. */
type ShardThread = {
  readonly pool: Piscina;
  readonly submit: SubmitLink;
  readonly control: Remote<CoordinatorControlApi>;
  readonly port: MessagePort;
};

type PoolOptions = CoordinatorStartOptions & {
  /** A new port on UBSCore's commands, one per shard. */
  readonly connectUbs: () => MessagePort;
};

export class CoordinatorPools implements CoordinatorShards {
  private readonly pools: readonly Piscina[];
  private readonly mailboxes: readonly TransferMailbox[];
  /** Each shard's last answer to metrics: a busy shard's counters must not seem to reset. */
  private readonly lastFamilies = new LastKnownFamilies();
  private stopping = false;

  private constructor(
    private readonly threads: readonly ShardThread[],
    private readonly mailboxMax: number,
    concurrencyMax: number,
    private readonly log: Logger,
  ) {
    this.pools = threads.map((t) => t.pool);
    this.mailboxes = threads.map(
      (thread) => new TransferMailbox({ mailboxMax, concurrencyMax, send: (transfers, answer) => thread.submit.send(transfers, answer) }),
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
        filename: new URL('./worker.js', import.meta.url).href,
        minThreads: 1,
        maxThreads: 1,
        idleTimeout: Infinity,
        concurrentTasksPerWorker: opts.concurrencyMax + CONTROL_TASKS_MAX,
        maxQueue: opts.mailboxMax,
        // The shard keeps timers, a UBSCore port and its control port alive between tasks.
        atomics: 'disabled',
        workerData: data,
      });
      pool.on('error', (error: unknown) => opts.onFatal(error instanceof Error ? error : new Error(String(error))));
      pools.push(pool);
    }
    // Shard 0's batched writer is every shard's: one channel to it from each other shard.
    const writeChannels = pools.slice(1).map(() => new MessageChannel());
    const writePortsOf = (shard: number): WritePorts =>
      shard === 0
        ? { serve: writeChannels.map((c) => c.port1), link: null }
        : { serve: [], link: (writeChannels[shard - 1] as MessageChannel).port2 };
    const threads = await Promise.all(pools.map((pool, shard) => initShard(pool, shard, opts.connectUbs(), writePortsOf(shard), opts.log)));
    const self = new CoordinatorPools(threads, opts.mailboxMax, opts.concurrencyMax, opts.log);
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
      case 'coord.drove':
        return result.reply;
      case 'busy':
        return { kind: 'busy' };
      default:
        return { kind: 'error', message: result.kind === 'coord.error' ? result.message : `unexpected coordinator answer ${result.kind}` };
    }
  }

  /**
   * Every shard's registry and mailbox depth, asked on its control port, so a shard whose tasks
   * wait still answers. A shard that does not answer in time (stuck, failing) is given with the
   * families it gave last, marked not fresh: its series stay, at their last values, instead of
   * vanishing or dropping to zero.
   */
  async metrics(): Promise<ShardScrape[]> {
    return Promise.all(
      this.threads.map(async ({ pool }, shard) => {
        const depth = (this.mailboxes[shard]?.depth ?? 0) + pool.queueSize;
        const answer = await this.control<CoordinatorMetricsOutcome>(shard, COORDINATOR_CONTROL_MS_MAX, (c) => c.metrics());
        if (answer.kind !== 'metrics')
          this.log.warn('a coordinator shard is missing from this metrics scrape', { shard, reason: reasonOf(answer) });
        const thread = coordinatorThread(shard);
        const scrape = this.lastFamilies.take(thread, answer.kind === 'metrics' ? answer.families : null);
        return { shard, depth, ...(scrape ?? { thread, families: [], fresh: false }) };
      }),
    );
  }

  /**
   * Transfers the shards moved into a final state since they started, and of those the ones a
   * failure of the service met (spec 002's failure rate, never the users' own refusals); null
   * when a shard did not answer.
   */
  async finishedCounts(): Promise<FinishedCounts | null> {
    const scrapes = await this.metrics();
    if (scrapes.some((s) => !s.fresh)) return null;
    const families = scrapes.flatMap((s) => s.families);
    const sum = (totals: Map<string, number>) => [...totals.values()].reduce((a, n) => a + n, 0);
    return { finished: sum(finishedFrom(families)), systemFailed: sum(systemFailedFrom(families)) };
  }

  /**
   * Makes every shard forget its cached assets; resolves once all have, or were given up on
   * after COORDINATOR_CONTROL_MS_MAX (logged).
   */
  async assetsChanged(): Promise<void> {
    await Promise.all(
      this.threads.map(async (_thread, shard) => {
        const answer = await this.control<CoordinatorControlOutcome>(shard, COORDINATOR_CONTROL_MS_MAX, (c) => c.assetsChanged());
        if (answer.kind !== 'done') this.log.warn('a coordinator shard did not take an asset change', { shard, reason: reasonOf(answer) });
      }),
    );
  }

  /**
   * Tells every shard (or `only` these) the service was halted or resumed; resolves once each has
   * taken it or was given up on, answering the ones that did not. It goes on each shard's control
   * port: a halt must reach a shard under load. The halt switch tells a shard that missed it again.
   */
  async haltChanged(halt: VersionedHalt, only: readonly number[] | null): Promise<readonly HaltMiss[]> {
    const shards = only ?? this.threads.map((_thread, shard) => shard);
    const answers = await Promise.all(
      shards.map(async (shard): Promise<HaltMiss | null> => {
        const answer = await this.control<CoordinatorControlOutcome>(shard, COORDINATOR_CONTROL_MS_MAX, (c) => c.haltChanged(halt));
        return answer.kind === 'done' ? null : { shard, reason: reasonOf(answer) };
      }),
    );
    return answers.filter((miss) => miss !== null);
  }

  /**
   * Stops every shard, each given COORDINATOR_STOP_MS_MAX before its thread is terminated: every
   * other shard first, then shard 0, whose writer the others share, so their last writes land.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    const stopShard = async (shard: number): Promise<void> => {
      const answer = await this.control<CoordinatorStopOutcome>(shard, COORDINATOR_STOP_MS_MAX, (c) => c.stop());
      if (answer.kind !== 'stopped')
        this.log.error('a coordinator shard did not stop cleanly; terminating it', { shard, reason: reasonOf(answer) });
    };
    await Promise.all(this.threads.slice(1).map((_thread, i) => stopShard(i + 1)));
    await stopShard(0);
    for (const t of this.threads) t.submit.close('the coordinator shard stopped');
    await Promise.all(this.threads.map((t) => t.pool.destroy()));
    for (const t of this.threads) t.port.close();
  }

  /**
   * One call on a shard's control port, bounded by `ms` since comlink has none: a shard that does
   * not answer in time is `late`, and a call that fails to cross is `failed`, never an exception.
   */
  private async control<T>(shard: number, ms: number, call: (api: Remote<CoordinatorControlApi>) => Promise<T>): Promise<T | ControlMiss> {
    const thread = this.threads[shard];
    if (thread === undefined) return { kind: 'failed', message: `no shard ${shard}` };
    const answer = call(thread.control).catch((error: unknown): ControlMiss => ({ kind: 'failed', message: String(error) }));
    return within<T | ControlMiss, ControlMiss>(answer, ms, { kind: 'late', ms });
  }

  private async run(shard: number, task: CoordinatorTask): Promise<CoordinatorResult | { kind: 'busy' }> {
    const pool = this.pools[shard];
    if (pool === undefined) throw new Error(`no shard ${shard}`);
    // A full mailbox is backpressure, answered at once rather than queued without bound.
    if (pool.queueSize >= this.mailboxMax) return { kind: 'busy' };
    try {
      return (await pool.run(task)) as CoordinatorResult;
    } catch (error) {
      return { kind: 'coord.error', message: errorText(error) };
    }
  }
}

/** A control call that got no outcome from the shard: no answer in time, or a failure to cross. */
type ControlMiss = { readonly kind: 'late'; readonly ms: number } | { readonly kind: 'failed'; readonly message: string };

function reasonOf(miss: ControlMiss | { readonly kind: string }): string {
  if ('ms' in miss) return `no answer within ${miss.ms} ms`;
  return 'message' in miss && typeof miss.message === 'string' ? miss.message : `unexpected answer ${miss.kind}`;
}

/** A shard's ends of the shared writer's channels: shard 0 serves the others' ports, each other shard links to it. */
type WritePorts = { readonly serve: readonly MessagePort[]; readonly link: MessagePort | null };

/**
 * Starts one shard's thread: its UBSCore port, its ends of the shared writer's channels, and one
 * end of two new MessageChannels (submit and control) travel in coord.init, the pool's first
 * task, which its only thread runs, so every port is pinned to that shard's thread. The main
 * thread keeps the other ends of submit and control.
 */
async function initShard(pool: Piscina, shard: number, ubsPort: MessagePort, writes: WritePorts, log: Logger): Promise<ShardThread> {
  const control = new MessageChannel();
  const submit = new MessageChannel();
  const task: CoordinatorTask = {
    kind: 'coord.init',
    ubsPort,
    submitPort: submit.port2,
    controlPort: control.port2,
    writeServePorts: writes.serve,
    writeLinkPort: writes.link,
  };
  const transferList = [ubsPort, submit.port2, control.port2, ...writes.serve, ...(writes.link === null ? [] : [writes.link])];
  const result = (await pool.run(task, { transferList })) as CoordinatorResult;
  if (result.kind !== 'coord.ready') {
    control.port1.close();
    submit.port1.close();
    throw new Error(`coordinator ${shard} did not start: ${JSON.stringify(result)}`);
  }
  const link = new SubmitLink(submit.port1, (detail) => log.error('a coordinator shard sent a malformed answer', { shard, detail }));
  return { pool, submit: link, control: wrap<CoordinatorControlApi>(nodeEndpoint(control.port1)), port: control.port1 };
}
