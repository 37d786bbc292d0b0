// One shard's coordinator: creates transfers, drives them with the driver's step(), and keeps
// driving the ones that are not finished through retry timers and a periodic recovery scan.
// It knows nothing of threads; the actor in actors/ hosts it.

import type { AssetCache } from '../db/assets.js';
import { checkAmountRange, checkAssetOpen } from '../domain/asset.js';
import type { TransferStore } from '../db/transfers.js';
import { checkNewTransfer } from '../domain/checks.js';
import { isTerminal } from '../domain/fsm.js';
import type { Logger } from '../log.js';
import { backoffMs } from '../backoff.js';
import type { DailyLimits } from './daily-limits.js';
import type { HaltFlag } from './halt-flag.js';
import type { Watchdog } from './watchdog.js';
import type { StepResult, TransferDriver } from './driver.js';
import type { CoordinatorConfig } from './types.js';
import type { NewTransfer, SubmitReply, TransferView } from '../domain/transfer.js';
import { STOP_DRAIN_MS } from '../limits.js';
import { within } from '../within.js';

const HALTED = { kind: 'refused', code: 'SERVICE_HALTED' } as const;

export class Shard {
  private readonly inProgress = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Consecutive exceptions per transfer, for the backoff when the store itself fails. */
  private readonly stepFailures = new Map<string, number>();
  private scanTimer: NodeJS.Timeout | null = null;
  private scanning = false;
  /** A resume came while a scan ran: one more pass from the start once it ends. */
  private rescan = false;
  private stopped = false;

  constructor(
    private readonly deps: {
      readonly driver: TransferDriver;
      readonly store: TransferStore;
      readonly assets: AssetCache;
      readonly config: CoordinatorConfig;
      readonly log: Logger;
      readonly watchdog: Watchdog;
      /** MON-003: while set, new transfers are refused and none leaves INIT; the others go on. */
      readonly halt: HaltFlag;
      /**
       * Reads the stored halt into `halt` (a read never replaces a newer view). Called before the
       * moves no control message gates, each recovery pass and each retry timer, so a shard that
       * missed the halt's message holds its INIT transfers all the same.
       */
      readonly readHalt?: () => Promise<unknown>;
      /** Daily limits (spec 001 §1.5.6); absent when switched off. */
      readonly limits?: DailyLimits;
    },
  ) {}

  /**
   * Re-checks the request in spec 001 §1.5.8 order. A malformed request is refused before any
   * state exists; a client_order_id already used answers the original transfer (or
   * DUPLICATE_REQUEST naming it) before any limit is charged, halted or not. Otherwise the
   * transfer is created through the halt's gate (MON-003), and driven until the deadline.
   */
  async submit(t: NewTransfer): Promise<Extract<SubmitReply, { kind: 'transfer' | 'refused' | 'duplicate' }>> {
    const invalid = checkNewTransfer(t);
    if (invalid !== null) return { kind: 'refused', code: invalid };
    const repeat = await this.deps.store.repeatOf(t);
    if (repeat !== null) return repeat.kind === 'existing' ? { kind: 'transfer', view: repeat.view } : repeat;
    const created = await this.deps.halt.through(() => this.create(t), HALTED);
    if (created.kind !== 'created') return created;
    const view = await this.driveUntil(created.view.reqId, Date.now() + this.deps.config.happyPathDeadlineMs, created.view);
    return { kind: 'transfer', view: view ?? created.view };
  }

  /**
   * The asset's checks and the daily limits, then the creation with its first step. A missing
   * FUNDING target is recorded as FAILED, so the client still gets its req_id.
   */
  private async create(
    t: NewTransfer,
  ): Promise<
    { readonly kind: 'created'; readonly view: TransferView } | Extract<SubmitReply, { kind: 'transfer' | 'refused' | 'duplicate' }>
  > {
    const asset = await this.deps.assets.get(t.asset);
    if (asset === null) return { kind: 'refused', code: 'INVALID_ASSET' };
    const closed = checkAssetOpen(asset);
    if (closed !== null) return { kind: 'refused', code: closed };
    const range = checkAmountRange(asset, t.amount);
    if (range !== null) return { kind: 'refused', code: range };
    const limits = this.deps.limits;
    const limited = limits === undefined ? null : await limits.reserve(t);
    if (limited !== null) return { kind: 'refused', code: limited };
    // A creation whose outcome is unknown (a throw) keeps its place: counting one too many is
    // the safe side, and the transfer, if it exists, is found held when it leaves INIT. One that
    // ends FAILED or ROLLED_BACK gives its place back when the drive sees it final.
    const created = await this.deps.driver.start(t);
    if (created.kind === 'created') return created;
    // A twin with the same client_order_id was created between the repeat check and this one.
    limits?.release(t);
    return created.kind === 'existing' ? { kind: 'transfer', view: created.view } : created;
  }

  /** Drives one transfer now (an operator's retry, or the scan). */
  async driveNow(reqId: string): Promise<TransferView | null> {
    return this.driveUntil(reqId, Date.now() + this.deps.config.happyPathDeadlineMs);
  }

  /** MON-003, resume: the transfers held in INIT are driven now, not at the next scan. */
  resumed(): void {
    if (this.scanning) this.rescan = true;
    else void this.scan(0);
  }

  start(): void {
    void this.scan(0);
    this.scanTimer = setInterval(() => void this.scan(this.deps.config.staleThresholdMs), this.deps.config.scanIntervalMs);
  }

  /**
   * Stops taking work and waits, at most STOP_DRAIN_MS, for the drives in progress to reach
   * their next recorded state, so none is cut off by the connections closing after it. A drive
   * still running then is simply unknown, and the next start resumes it.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.scanTimer !== null) clearInterval(this.scanTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    const deadline = Date.now() + STOP_DRAIN_MS;
    while (this.inProgress.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /**
   * Answers by the deadline with the state then reached; the drive itself carries on in the
   * background. The wait is a race against the drive, not a sleep.
   */
  private async driveUntil(reqId: string, deadline: number, known?: TransferView): Promise<TransferView | null> {
    const first = await within(this.drive(reqId, known), Math.max(0, deadline - Date.now()), 'deadline' as const);
    if (first !== 'deadline') return first;
    return this.deps.store.get(reqId);
  }

  /** Steps until terminal or an unknown outcome; then schedules the retry. Never throws. */
  private async drive(reqId: string, read?: TransferView): Promise<TransferView | null> {
    if (this.inProgress.has(reqId)) return this.deps.store.get(reqId).catch(() => null);
    this.inProgress.add(reqId);
    this.clearTimer(reqId);
    try {
      let known = read;
      for (;;) {
        const result = await this.safeStep(reqId, known);
        if (result.kind !== 'error') this.stepFailures.delete(reqId);
        if (result.kind === 'not_found') return null;
        // MON-003: held in INIT while halted; the resume's scan drives it, no timer holds it.
        if (result.kind === 'held') return result.view;
        if (result.kind === 'terminal') {
          this.deps.limits?.settled(result.view);
          return result.view;
        }
        if (result.kind === 'stayed') {
          this.scheduleRetry(reqId, result.view.retryCount);
          return result.view;
        }
        if (result.kind === 'error') {
          this.scheduleRetry(reqId, result.retryCount);
          return this.deps.store.get(reqId).catch(() => null);
        }
        if (this.stopped) return result.view;
        known = result.view;
      }
    } finally {
      this.inProgress.delete(reqId);
    }
  }

  private async safeStep(
    reqId: string,
    known: TransferView | undefined,
  ): Promise<StepResult | { readonly kind: 'error'; readonly retryCount: number }> {
    try {
      return await this.deps.driver.step(reqId, known);
    } catch (error) {
      // A store error mid-step leaves the transfer wherever the last committed CAS put it:
      // unknown, so retry with backoff like any other unknown outcome.
      const failures = (this.stepFailures.get(reqId) ?? 0) + 1;
      this.stepFailures.set(reqId, failures);
      this.deps.log.error('step failed, will retry', { req_id: reqId, error: String(error), failures });
      return { kind: 'error', retryCount: failures };
    }
  }

  private scheduleRetry(reqId: string, retryCount: number): void {
    if (this.stopped || this.timers.has(reqId)) return;
    // Beyond the bound the recovery scan picks the transfer up: memory stays bounded.
    if (this.timers.size >= this.deps.config.retryTimersMax) return;
    const delay = backoffMs({ baseMs: this.deps.config.retryBaseMs, capMs: this.deps.config.retryCapMs }, retryCount);
    const timer = setTimeout(() => {
      this.timers.delete(reqId);
      // A failed read leaves the view as it is; one too old to trust counts as halted (halt-flag.ts).
      const read = this.deps.readHalt?.().catch(() => undefined) ?? Promise.resolve();
      void read.then(() => this.drive(reqId));
    }, delay);
    this.timers.set(reqId, timer);
  }

  private clearTimer(reqId: string): void {
    const timer = this.timers.get(reqId);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(reqId);
  }

  /**
   * Drives this shard's due transfers (spec 001 §6): untouched for `staleMs`, or with a retry
   * time that has come. One pass walks them in pages, reading the next page while up to
   * scanConcurrencyMax drives run, so the drives never wait for the slowest of a page.
   */
  private async scan(staleMs: number): Promise<void> {
    if (this.scanning || this.stopped) return;
    this.scanning = true;
    const started = Date.now();
    try {
      const { driven, held } = await this.drivePass(staleMs);
      await this.deps.watchdog.sweep();
      if (driven > 0)
        this.deps.log.info('recovery scan', {
          shard: this.deps.config.shard,
          transfers: driven,
          held_while_halted: held,
          ms: Date.now() - started,
        });
    } catch (error) {
      this.deps.log.error('recovery scan failed', { error: String(error) });
    } finally {
      this.scanning = false;
    }
    if (this.rescan) {
      this.rescan = false;
      await this.scan(0);
    }
  }

  private async drivePass(staleMs: number): Promise<{ readonly driven: number; readonly held: number }> {
    const { shard, shards, scanBatchMax, scanConcurrencyMax } = this.deps.config;
    // The stored halt first: a pass drives parked INIT transfers, and its read fails the pass.
    await this.deps.readHalt?.();
    const passAt = await this.deps.store.clock();
    const pass = {
      queue: [] as TransferView[],
      next: 0,
      after: null as string | null,
      exhausted: false,
      failure: null as unknown,
      driven: 0,
      held: 0,
    };
    let reading: Promise<void> | null = null;
    // One page read at a time; a failed read ends the pass, and the next pass starts over.
    const read = (): Promise<void> => {
      reading ??= this.deps.store
        .due({ shard, shards, passAt, staleMs, after: pass.after, limit: scanBatchMax })
        .then(
          (page) => {
            pass.after = page.next;
            pass.exhausted = page.next === null;
            pass.queue = pass.queue
              .slice(pass.next)
              .concat(page.transfers.filter((t) => !this.timers.has(t.reqId) && !this.inProgress.has(t.reqId)));
            pass.next = 0;
          },
          (error: unknown) => {
            pass.failure = error;
            pass.exhausted = true;
          },
        )
        .finally(() => {
          reading = null;
        });
      return reading;
    };
    const lane = async (): Promise<void> => {
      while (!this.stopped) {
        const waiting = pass.queue.length - pass.next;
        if (waiting <= scanConcurrencyMax && !pass.exhausted) void read();
        const due = pass.queue[pass.next];
        if (due === undefined) {
          if (pass.exhausted) return;
          await read();
          continue;
        }
        pass.next += 1;
        pass.driven += 1;
        // The page's row spares the drive its first read; a stale one only loses a CAS.
        const view = await this.drive(due.reqId, due);
        if (view === null || isTerminal(view.state)) continue;
        if (view.state === 'INIT' && this.deps.halt.current !== null) pass.held += 1;
        else this.deps.log.warn('recovery left transfer unfinished', { req_id: due.reqId, state: view.state });
      }
    };
    await Promise.all(Array.from({ length: scanConcurrencyMax }, lane));
    if (pass.failure !== null) throw pass.failure;
    return { driven: pass.driven, held: pass.held };
  }
}
