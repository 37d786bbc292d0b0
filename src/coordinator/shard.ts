// One shard's coordinator: creates transfers, drives them with the driver's step(), and keeps
// driving the ones that are not finished through retry timers and a periodic recovery scan.
// It knows nothing of threads; the actor in actors/ hosts it.

import type { AssetCache } from '../db/assets.js';
import { checkAmountRange, checkAssetOpen } from '../db/assets.js';
import type { TransferStore } from '../db/transfers.js';
import { checkNewTransfer } from '../domain/checks.js';
import { isTerminal } from '../domain/fsm.js';
import type { Logger } from '../log.js';
import { backoffMs } from './backoff.js';
import type { DailyLimits } from './daily-limits.js';
import type { StepResult, TransferDriver } from './driver.js';
import type { CoordinatorConfig, NewTransfer, RefusalCode, TransferView } from './types.js';

export type SubmitOutcome =
  | { readonly kind: 'transfer'; readonly view: TransferView }
  | { readonly kind: 'refused'; readonly code: RefusalCode };

export class Shard {
  private readonly inProgress = new Set<string>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** Consecutive exceptions per transfer, for the backoff when the store itself fails. */
  private readonly stepFailures = new Map<string, number>();
  private scanTimer: NodeJS.Timeout | null = null;
  private scanning = false;
  private stopped = false;

  constructor(
    private readonly deps: {
      readonly driver: TransferDriver;
      readonly store: TransferStore;
      readonly assets: AssetCache;
      readonly config: CoordinatorConfig;
      readonly log: Logger;
      /** Whether the FUNDING account exists: it is never created by a transfer (spec 001 §1.5.5). */
      readonly fundingAccountExists: (userId: bigint, asset: string) => Promise<boolean>;
      /** Daily limits (spec 001 §1.5.6); absent when switched off. */
      readonly limits?: DailyLimits;
    },
  ) {}

  /**
   * Re-checks the request in spec 001 §1.5.8 order. A malformed request is refused before any
   * state exists; a business rejection known up front (asset closed, FUNDING target missing)
   * is recorded as a FAILED transfer, so the client gets its req_id. Otherwise the transfer is
   * created in INIT and driven until the deadline.
   */
  async submit(t: NewTransfer): Promise<SubmitOutcome> {
    const invalid = checkNewTransfer(t);
    if (invalid !== null) return { kind: 'refused', code: invalid };
    const asset = await this.deps.assets.get(t.asset);
    if (asset === null) return { kind: 'refused', code: 'INVALID_ASSET' };
    const closed = checkAssetOpen(asset);
    const range = closed === null ? checkAmountRange(asset, t.amount) : null;
    if (range !== null) return { kind: 'refused', code: range };
    const limited = this.deps.limits === undefined ? null : await this.deps.limits.check(t);
    if (limited !== null) return { kind: 'refused', code: limited };
    if (t.clientOrderId !== null) {
      const existing = await this.deps.store.byClientOrderId(t.userId, t.clientOrderId);
      if (existing !== null) return sameRequest(existing, t) ? { kind: 'transfer', view: existing } : { kind: 'refused', code: 'DUPLICATE_REQUEST' };
    }
    const created = await this.deps.store.insert(t);
    if (created === null) return this.submit(t); // lost a client_order_id race: answer the winner
    this.deps.limits?.record(t);
    const rejected = closed ?? (t.to === 'FUNDING' && !(await this.deps.fundingAccountExists(t.userId, t.asset)) ? 'TARGET_ACCOUNT_NOT_FOUND' : null);
    if (rejected !== null) return { kind: 'transfer', view: await this.deps.driver.failBeforeSource(created, rejected) };
    const view = await this.driveUntil(created.reqId, Date.now() + this.deps.config.happyPathDeadlineMs);
    return { kind: 'transfer', view: view ?? created };
  }

  /** Drives one transfer now (an operator's retry, or the scan). */
  async driveNow(reqId: string): Promise<TransferView | null> {
    return this.driveUntil(reqId, Date.now() + this.deps.config.happyPathDeadlineMs);
  }

  start(): void {
    void this.scan(0);
    this.scanTimer = setInterval(() => void this.scan(this.deps.config.staleThresholdMs), this.deps.config.scanIntervalMs);
  }

  stop(): void {
    this.stopped = true;
    if (this.scanTimer !== null) clearInterval(this.scanTimer);
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /**
   * Answers by the deadline with the state then reached; the drive itself carries on in the
   * background. The wait is a race against the drive, not a sleep.
   */
  private async driveUntil(reqId: string, deadline: number): Promise<TransferView | null> {
    const driving = this.drive(reqId);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'deadline'>((resolve) => {
      timer = setTimeout(() => resolve('deadline'), Math.max(0, deadline - Date.now()));
    });
    const first = await Promise.race([driving, timeout]);
    clearTimeout(timer);
    if (first !== 'deadline') return first;
    return this.deps.store.get(reqId);
  }

  /** Steps until terminal or an unknown outcome; then schedules the retry. Never throws. */
  private async drive(reqId: string): Promise<TransferView | null> {
    if (this.inProgress.has(reqId)) return this.deps.store.get(reqId).catch(() => null);
    this.inProgress.add(reqId);
    this.clearTimer(reqId);
    try {
      for (;;) {
        const result = await this.safeStep(reqId);
        if (result.kind !== 'error') this.stepFailures.delete(reqId);
        if (result.kind === 'not_found') return null;
        if (result.kind === 'terminal') return result.view;
        if (result.kind === 'stayed') {
          this.scheduleRetry(reqId, result.view.retryCount);
          return result.view;
        }
        if (result.kind === 'error') {
          this.scheduleRetry(reqId, result.retryCount);
          return this.deps.store.get(reqId).catch(() => null);
        }
        if (this.stopped) return result.view;
      }
    } finally {
      this.inProgress.delete(reqId);
    }
  }

  private async safeStep(reqId: string): Promise<StepResult | { readonly kind: 'error'; readonly retryCount: number }> {
    try {
      return await this.deps.driver.step(reqId);
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
      void this.drive(reqId);
    }, delay);
    this.timers.set(reqId, timer);
  }

  private clearTimer(reqId: string): void {
    const timer = this.timers.get(reqId);
    if (timer === undefined) return;
    clearTimeout(timer);
    this.timers.delete(reqId);
  }

  /** Drives this shard's non-terminal transfers untouched for `staleMs` (spec 001 §6). */
  private async scan(staleMs: number): Promise<void> {
    if (this.scanning || this.stopped) return;
    this.scanning = true;
    try {
      const { shard, shards, scanBatchMax } = this.deps.config;
      const reqIds = await this.deps.store.stale(shard, shards, staleMs, scanBatchMax);
      for (const reqId of reqIds) {
        if (this.stopped) break;
        if (this.timers.has(reqId) || this.inProgress.has(reqId)) continue;
        const view = await this.drive(reqId);
        if (view !== null && !isTerminal(view.state)) this.deps.log.warn('recovery scan left transfer unfinished', { req_id: reqId, state: view.state });
      }
      if (reqIds.length > 0) this.deps.log.info('recovery scan', { shard, transfers: reqIds.length });
    } catch (error) {
      this.deps.log.error('recovery scan failed', { error: String(error) });
    } finally {
      this.scanning = false;
    }
  }
}

function sameRequest(v: TransferView, t: NewTransfer): boolean {
  return v.userId === t.userId && v.from === t.from && v.to === t.to && v.asset === t.asset && v.amount === t.amount;
}
