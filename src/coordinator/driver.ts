// The FSM driver: one step() for the HTTP path, the retry timers and the recovery scan.
// Persist, then call: each state that announces an adapter call is committed by a
// compare-and-swap before the call is made. Only an explicit business rejection moves a
// transfer to FAILED or COMPENSATING; every unknown outcome stays where it is and is retried.

import type { AccountAdapter, OpRequest } from '../adapters/types.js';
import type { TransferStore } from '../db/transfers.js';
import { assertTransition, isTerminal, type TransferEvent, type TransferStateName } from '../domain/fsm.js';
import type { AccountKind } from '../domain/types.js';
import type { CrashPoint } from '../faults/crash-points.js';
import type { Logger } from '../log.js';
import type { Registry } from '../metrics/registry.js';
import type { TransferView } from './types.js';

export type StepResult =
  | { readonly kind: 'moved'; readonly view: TransferView }
  | { readonly kind: 'stayed'; readonly view: TransferView; readonly reason: string }
  | { readonly kind: 'terminal'; readonly view: TransferView }
  | { readonly kind: 'not_found' };

export type DriverDeps = {
  readonly store: TransferStore;
  readonly adapters: Readonly<Record<AccountKind, AccountAdapter>>;
  readonly log: Logger;
  /** When an unknown outcome is retried next; the driver records it on the transfer. */
  readonly nextRetryAt: (retryCount: number) => Date;
  /** Named crash points for recovery tests; a no-op in every real deployment. */
  readonly crash: (point: CrashPoint) => void;
  /**
   * Business rejections known before the source is called (asset closed, FUNDING target
   * missing): the transfer ends FAILED with no adapter touched.
   */
  readonly precheck: (t: TransferView) => Promise<string | null>;
  /** Told of every stay, with the transfer as it is now (alerts, escalation). */
  readonly watch: (t: TransferView, reason: string) => Promise<void>;
  /** Counts each transition (spec 004's fsm_state_count{from,to}) and each retry. */
  readonly metrics: Registry;
};

/**
 * Both sources are reversible: each adapter keeps a durable record of the withdraw it applied
 * for a req_id and can credit exactly that amount back (REFUND checks the record).
 */
const REVERSIBLE_SOURCES: ReadonlySet<AccountKind> = new Set(['FUNDING', 'SPOT']);

export class TransferDriver {
  constructor(private readonly deps: DriverDeps) {}

  /**
   * Takes the transfer one state further. `known` is the view a previous step of the same
   * drive answered, which spares a read; it is safe when stale, because every move is a
   * compare-and-swap and every adapter call is idempotent.
   */
  async step(reqId: string, known?: TransferView): Promise<StepResult> {
    const t = known ?? (await this.deps.store.get(reqId));
    if (t === null) return { kind: 'not_found' };
    switch (t.state) {
      case 'INIT': {
        const rejected = await this.deps.precheck(t);
        if (rejected !== null) return this.settle(t, 'SOURCE_FAIL', 'FAILED', rejected);
        this.deps.crash('init_before_source_pending');
        return this.persistThenCall(t, 'SOURCE_CALL', 'SOURCE_PENDING', (v) => this.callSource(v));
      }
      case 'SOURCE_PENDING':
        return this.callSource(t);
      case 'SOURCE_DONE':
        this.deps.crash('source_done_before_target_pending');
        return this.persistThenCall(t, 'TARGET_CALL', 'TARGET_PENDING', (v) => this.callTarget(v));
      case 'TARGET_PENDING':
        return this.callTarget(t);
      case 'COMPENSATING':
        return this.callRefund(t);
      case 'COMMITTED':
      case 'FAILED':
      case 'ROLLED_BACK':
        return { kind: 'terminal', view: t };
    }
  }

  private async persistThenCall(
    t: TransferView,
    event: TransferEvent,
    to: TransferStateName,
    call: (v: TransferView) => Promise<StepResult>,
  ): Promise<StepResult> {
    const moved = await this.move(t, event, to);
    return moved === null ? this.reread(t) : call(moved);
  }

  private async callSource(t: TransferView): Promise<StepResult> {
    this.deps.crash('source_pending_before_call');
    const outcome = await this.deps.adapters[t.from].withdraw(opRequest(t));
    this.deps.crash('source_pending_after_call');
    switch (outcome.kind) {
      case 'SUCCESS':
        return this.settle(t, 'SOURCE_OK', 'SOURCE_DONE');
      case 'FAILED':
        return this.settle(t, 'SOURCE_FAIL', 'FAILED', outcome.code);
      case 'PENDING':
        return this.stay(t, 'SOURCE_RETRY', outcome.reason);
    }
  }

  private async callTarget(t: TransferView): Promise<StepResult> {
    this.deps.crash('target_pending_before_call');
    const outcome = await this.deps.adapters[t.to].deposit(opRequest(t));
    this.deps.crash('target_pending_after_call');
    switch (outcome.kind) {
      case 'SUCCESS':
        return this.settle(t, 'TARGET_OK', 'COMMITTED');
      case 'FAILED':
        if (REVERSIBLE_SOURCES.has(t.from)) return this.settle(t, 'TARGET_FAIL', 'COMPENSATING', outcome.code);
        return this.stay(t, 'TARGET_RETRY', `target refused (${outcome.code}) and the source is not reversible`);
      case 'PENDING':
        return this.stay(t, 'TARGET_RETRY', outcome.reason);
    }
  }

  private async callRefund(t: TransferView): Promise<StepResult> {
    this.deps.crash('compensating_before_call');
    const outcome = await this.deps.adapters[t.from].refund(opRequest(t));
    this.deps.crash('compensating_after_call');
    if (outcome.kind === 'SUCCESS') return this.settle(t, 'ROLLBACK_OK', 'ROLLED_BACK');
    const reason = outcome.kind === 'FAILED' ? `refund refused: ${outcome.code}` : outcome.reason;
    return this.stay(t, 'ROLLBACK_FAIL', reason);
  }

  /** Records an adapter's definitive answer; a lost race re-reads and reports what won. */
  private async settle(t: TransferView, event: TransferEvent, to: TransferStateName, code: string | null = null): Promise<StepResult> {
    const moved = await this.move(t, event, to, code);
    if (moved === null) return this.reread(t);
    return isTerminal(to) ? { kind: 'terminal', view: moved } : { kind: 'moved', view: moved };
  }

  private async move(t: TransferView, event: TransferEvent, to: TransferStateName, code: string | null = null): Promise<TransferView | null> {
    assertTransition(t.state, event, to);
    const updatedAt = await this.deps.store.compareAndSwap(t.reqId, t.state, to, event, code);
    if (updatedAt === null) return null;
    this.deps.metrics.inc('fsm_state_count', 'State transitions made, by from and to state', { from: t.state, to });
    // Every move is in transfer_state_history; the log shows them only at debug level.
    if (this.deps.log.enabled('debug')) {
      this.deps.log.debug('transfer moved', { req_id: t.reqId, user_id: t.userId, from_state: t.state, state: to, event, latency_ms: sinceCreated(t) });
    }
    return { ...t, state: to, errorCode: code ?? t.errorCode, attempts: 0, updatedAt: updatedAt.toISOString() };
  }

  private async stay(t: TransferView, event: TransferEvent, reason: string): Promise<StepResult> {
    assertTransition(t.state, event, t.state);
    const retryAt = this.deps.nextRetryAt(t.retryCount);
    await this.deps.store.noteRetry(t.reqId, t.state, reason, retryAt);
    this.deps.metrics.inc('transfer_retries_total', 'Unknown outcomes that left a transfer where it was, to be retried', { state: t.state });
    const level = t.state === 'SOURCE_PENDING' ? 'warn' : 'critical';
    this.deps.log[level]('transfer outcome unknown, will retry', { req_id: t.reqId, user_id: t.userId, state: t.state, reason, latency_ms: sinceCreated(t) });
    const now = { ...t, retryCount: t.retryCount + 1, attempts: t.attempts + 1 };
    await this.deps.watch(now, reason);
    return { kind: 'stayed', view: now, reason };
  }

  private async reread(t: TransferView): Promise<StepResult> {
    const now = await this.deps.store.get(t.reqId);
    if (now === null) return { kind: 'not_found' };
    return isTerminal(now.state) ? { kind: 'terminal', view: now } : { kind: 'moved', view: now };
  }
}

/** Milliseconds since the transfer was created: the latency on every line about it. */
function sinceCreated(t: TransferView): number {
  return Date.now() - Date.parse(t.createdAt);
}

function opRequest(t: TransferView): OpRequest {
  return { reqId: t.reqId, userId: t.userId, asset: t.asset, amount: t.amount };
}

