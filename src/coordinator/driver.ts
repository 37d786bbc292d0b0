// The FSM driver: one step() for the HTTP path, the retry timers and the recovery scan.
// Persist, then call: each state that announces a call to UBSCore is committed by a
// compare-and-swap before the call is made. A Funding operation is not outside the coordinator's
// PostgreSQL: it commits in one transaction with the moves it decides (spec 003 §4.3), so the
// happy path costs two commits per transfer:
//   FUNDING → SPOT: create + debit + INIT → SOURCE_DONE → TARGET_PENDING; UBSCore credits;
//                   TARGET_PENDING → COMMITTED.
//   SPOT → FUNDING: create as INIT → SOURCE_PENDING; UBSCore debits;
//                   credit + SOURCE_PENDING → SOURCE_DONE → COMMITTED.
//                   (Only when that credit's outcome is unknown: SOURCE_PENDING → SOURCE_DONE →
//                   TARGET_PENDING, a third commit, so the funds that left SPOT are watched.)
// Only an explicit business rejection moves a transfer to FAILED or COMPENSATING; every unknown
// outcome stays where it is and is retried. While the service is halted (MON-003) no transfer
// leaves INIT: the step answers `held` and writes nothing.

import { isLocal, type AccountAdapter, type LocalAccountAdapter, type MovedOutcome, type OpRequest } from '../adapters/types.js';
import type { PathStep, Paths } from '../db/transfer-writes.js';
import { createdView, type CreateOutcome, type TransferStore } from '../db/transfers.js';
import { assertTransition, isTerminal, type TransferEvent, type TransferStateName } from '../domain/fsm.js';
import type { ErrorCode } from '../domain/errors.js';
import { causeText, type AccountKind, type FailureCode, type OpOutcome, type PendingCause, type TransferOp } from '../domain/types.js';
import type { CrashPoint } from '../faults/crash-points.js';
import type { Logger } from '../log.js';
import type { Registry } from '../metrics/registry.js';
import type { HaltFlag } from './halt-flag.js';
import { countRetry, countTransition } from './transfer-metrics.js';
import type { NewTransfer, TransferView } from '../domain/transfer.js';

export type StepResult =
  | { readonly kind: 'moved'; readonly view: TransferView }
  | { readonly kind: 'stayed'; readonly view: TransferView; readonly cause: PendingCause }
  | { readonly kind: 'terminal'; readonly view: TransferView }
  /** MON-003: the service is halted and the transfer is in INIT; nothing was written or called. */
  | { readonly kind: 'held'; readonly view: TransferView }
  | { readonly kind: 'not_found' };

type DriverDeps = {
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
  readonly precheck: (t: TransferView) => Promise<ErrorCode | null>;
  /** Told of every stay, with the transfer as it is now (alerts, escalation). */
  readonly watch: (t: TransferView, cause: PendingCause) => Promise<void>;
  /** Counts each transition (spec 004's fsm_state_count{from,to}), each finished transfer and each retry. */
  readonly metrics: Registry;
  /** The halt's gate (MON-003): a step out of INIT runs through it, and is held while halted. */
  readonly gate: Pick<HaltFlag, 'through'>;
};

const step = (event: TransferEvent, to: TransferStateName): PathStep => ({ event, to });
const FAIL_AT_SOURCE: readonly PathStep[] = [step('SOURCE_FAIL', 'FAILED')];

export class TransferDriver {
  constructor(private readonly deps: DriverDeps) {}

  /**
   * Creates a transfer with its first step in the creating transaction. A FUNDING source is
   * debited in that transaction and the transfer leaves it in TARGET_PENDING (or FAILED); a SPOT
   * source is created already announced, SOURCE_PENDING, or FAILED when the FUNDING target is
   * missing.
   */
  async start(t: NewTransfer): Promise<CreateOutcome> {
    const { store } = this.deps;
    const source = this.deps.adapters[t.from];
    if (isLocal(source)) {
      const moved = await source.applyWithMove('WITHDRAW', opRequest(t), { create: t, from: 'INIT', paths: this.sourcePaths(t) });
      if (moved.kind === 'moved') {
        const view = createdView(t, moved.result);
        this.countPath({ ...view, state: 'INIT' }, moved.result.state === 'FAILED' ? FAIL_AT_SOURCE : this.sourcePaths(t).ok);
        this.deps.crash('created_debited_before_target_call');
        this.deps.crash('coordinator_thread_uncaught');
        return { kind: 'created', view };
      }
      // Not folded into the creation (refused input, an unknown outcome, a creation that
      // committed though its answer was lost): created INIT, or found as it is, and driven on.
      return store.create(t);
    }
    const paths: Paths = { ok: [step('SOURCE_CALL', 'SOURCE_PENDING')], ko: FAIL_AT_SOURCE };
    return this.counted(
      await store.createWith({
        kind: 'create',
        transfer: t,
        op: null,
        paths,
        code: null,
        checkFundingTarget: isLocal(this.deps.adapters[t.to]),
        dueNow: false,
      }),
    );
  }

  /**
   * Takes the transfer one state further. `known` is the view a previous step of the same
   * drive answered, which spares a read; it is safe when stale, because every move is a
   * compare-and-swap and every adapter call is idempotent.
   */
  async step(reqId: string, known?: TransferView): Promise<StepResult> {
    const t = known ?? (await this.deps.store.get(reqId));
    if (t === null) return { kind: 'not_found' };
    switch (t.state) {
      case 'INIT':
        return this.deps.gate.through(() => this.leaveInit(t), { kind: 'held', view: t } as const);
      case 'SOURCE_PENDING':
        return this.callSource(t);
      case 'SOURCE_DONE':
        this.deps.crash('source_done_before_target_pending');
        return this.callTarget(t);
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

  /** From INIT: a business rejection known before the source is called, else the source's call. */
  private async leaveInit(t: TransferView): Promise<StepResult> {
    const rejected = await this.deps.precheck(t);
    if (rejected !== null) return this.settle(t, FAIL_AT_SOURCE, rejected);
    this.deps.crash('init_before_source_pending');
    return this.callSource(t);
  }

  /** Source paths from INIT or SOURCE_PENDING when the source shares the transaction: on to announcing the target. */
  private sourcePaths(t: { readonly to: AccountKind }): Paths {
    const announce = isLocal(this.deps.adapters[t.to]) ? [] : [step('TARGET_CALL', 'TARGET_PENDING')];
    return { ok: [step('SOURCE_OK', 'SOURCE_DONE'), ...announce], ko: FAIL_AT_SOURCE };
  }

  private async callSource(t: TransferView): Promise<StepResult> {
    const source = this.deps.adapters[t.from];
    if (isLocal(source)) {
      this.deps.crash('source_pending_before_call');
      return this.viaLocal(t, source, 'WITHDRAW', this.sourcePaths(t), 'SOURCE_RETRY');
    }
    if (t.state === 'INIT') {
      const moved = await this.move(t, [step('SOURCE_CALL', 'SOURCE_PENDING')]);
      return moved === null ? this.reread(t) : this.callSource(moved);
    }
    this.deps.crash('source_pending_before_call');
    const outcome = await source.withdraw(opRequest(t));
    this.deps.crash('source_pending_after_call');
    switch (outcome.kind) {
      case 'SUCCESS': {
        const target = this.deps.adapters[t.to];
        if (!isLocal(target)) return this.settle(t, [step('SOURCE_OK', 'SOURCE_DONE')]);
        // The debit is durable in UBSCore; the credit and both moves now commit together.
        this.deps.crash('source_debited_before_credit_txn');
        const paths = {
          ok: [step('SOURCE_OK', 'SOURCE_DONE'), step('TARGET_OK', 'COMMITTED')],
          ko: [step('SOURCE_OK', 'SOURCE_DONE'), step('TARGET_FAIL', 'COMPENSATING')],
        };
        return this.viaLocal(t, target, 'DEPOSIT', paths, 'SOURCE_RETRY', (cause) => this.creditUnknown(t, cause));
      }
      case 'FAILED':
        return this.settle(t, FAIL_AT_SOURCE, outcome.code);
      case 'PENDING':
        return this.stay(t, 'SOURCE_RETRY', outcome.cause);
    }
  }

  private async callTarget(t: TransferView): Promise<StepResult> {
    const target = this.deps.adapters[t.to];
    if (isLocal(target)) {
      this.deps.crash('target_pending_before_call');
      const paths = { ok: [step('TARGET_OK', 'COMMITTED')], ko: [step('TARGET_FAIL', 'COMPENSATING')] };
      return this.viaLocal(t, target, 'DEPOSIT', paths, 'TARGET_RETRY');
    }
    if (t.state === 'SOURCE_DONE') {
      const moved = await this.move(t, [step('TARGET_CALL', 'TARGET_PENDING')]);
      return moved === null ? this.reread(t) : this.callTarget(moved);
    }
    this.deps.crash('target_pending_before_call');
    const outcome = await target.deposit(opRequest(t));
    this.deps.crash('target_pending_after_call');
    switch (outcome.kind) {
      case 'SUCCESS':
        this.deps.crash('target_credited_before_committed');
        return this.settle(t, [step('TARGET_OK', 'COMMITTED')]);
      case 'FAILED':
        // Both sources keep a durable record of their withdraw, so the refund is always possible.
        return this.settle(t, [step('TARGET_FAIL', 'COMPENSATING')], outcome.code);
      case 'PENDING':
        return this.stay(t, 'TARGET_RETRY', outcome.cause);
    }
  }

  private async callRefund(t: TransferView): Promise<StepResult> {
    this.deps.crash('compensating_before_call');
    const source = this.deps.adapters[t.from];
    if (isLocal(source)) return this.viaLocal(t, source, 'REFUND', { ok: [step('ROLLBACK_OK', 'ROLLED_BACK')], ko: [] }, 'ROLLBACK_FAIL');
    const outcome = await source.refund(opRequest(t));
    this.deps.crash('compensating_after_call');
    if (outcome.kind === 'SUCCESS') return this.settle(t, [step('ROLLBACK_OK', 'ROLLED_BACK')]);
    return this.stay(t, 'ROLLBACK_FAIL', outcome.kind === 'FAILED' ? refundRefused(outcome.code) : outcome.cause);
  }

  /**
   * SPOT → FUNDING: UBSCore answered the debit, and the transaction that credits FUNDING and
   * moves to COMMITTED has an unknown outcome. The funds have left SPOT, so that is recorded
   * first, SOURCE_PENDING → SOURCE_DONE → TARGET_PENDING (spec 000 §3.2 steps 7b-10b), and the
   * credit is then retried from TARGET_PENDING, where the MON-001 alert and its sweep, the
   * CRITICAL log line, the funds-in-flight gauge and the console already look: exactly the
   * transfers whose debit is known, none whose debit may not have happened. The extra commit is
   * paid on this failure path only; the happy path keeps its two. A SOURCE_PENDING transfer
   * never recorded so (a crash, or this move failing too) asks UBSCore again on its next step,
   * which answers the same debit idempotently. A credit that did commit unseen wins the
   * compare-and-swap, and the re-read reports it.
   */
  private async creditUnknown(t: TransferView, cause: PendingCause): Promise<StepResult> {
    const moved = await this.move(t, [step('SOURCE_OK', 'SOURCE_DONE'), step('TARGET_CALL', 'TARGET_PENDING')]);
    return moved === null ? this.reread(t) : this.stay(moved, 'TARGET_RETRY', cause);
  }

  /**
   * A local operation and the moves it decides, in one transaction. An answer without a move
   * (refused input, an unknown outcome) is handled like a remote adapter's: a definitive answer
   * is recorded by a compare-and-swap, an unknown one goes to `onUnknown` (by default: stay with
   * `stayEvent` and retry).
   */
  private async viaLocal(
    t: TransferView,
    adapter: LocalAccountAdapter,
    op: TransferOp,
    paths: Paths,
    stayEvent: TransferEvent,
    onUnknown: (cause: PendingCause) => Promise<StepResult> = (cause) => this.stay(t, stayEvent, cause),
  ): Promise<StepResult> {
    const moved: MovedOutcome = await adapter.applyWithMove(op, opRequest(t), { create: null, from: t.state, paths });
    this.deps.crash(
      op === 'REFUND'
        ? 'compensating_after_call'
        : t.state === 'INIT' || t.state === 'SOURCE_PENDING'
          ? 'source_pending_after_call'
          : 'target_pending_after_call',
    );
    switch (moved.kind) {
      case 'moved': {
        const path = moved.outcome.kind === 'FAILED' ? paths.ko : paths.ok;
        this.countPath(t, path, moved.result.code);
        const view: TransferView = {
          ...t,
          state: moved.result.state,
          errorCode: moved.result.code ?? t.errorCode,
          attempts: 0,
          updatedAt: moved.result.at.toISOString(),
        };
        return isTerminal(view.state) ? { kind: 'terminal', view } : { kind: 'moved', view };
      }
      case 'lost':
      case 'exists':
        return this.reread(t);
      case 'unmoved':
        return this.onOutcome(t, moved.outcome, paths, onUnknown);
    }
  }

  private onOutcome(
    t: TransferView,
    outcome: OpOutcome,
    paths: Paths,
    onUnknown: (cause: PendingCause) => Promise<StepResult>,
  ): Promise<StepResult> {
    switch (outcome.kind) {
      case 'SUCCESS':
        return this.settle(t, paths.ok);
      case 'FAILED':
        return paths.ko.length > 0 ? this.settle(t, paths.ko, outcome.code) : onUnknown(refundRefused(outcome.code));
      case 'PENDING':
        return onUnknown(outcome.cause);
    }
  }

  /** Records a definitive answer along `path`; a lost race re-reads and reports what won. */
  private async settle(t: TransferView, path: readonly PathStep[], code: ErrorCode | null = null): Promise<StepResult> {
    const moved = await this.move(t, path, code);
    if (moved === null) return this.reread(t);
    return isTerminal(moved.state) ? { kind: 'terminal', view: moved } : { kind: 'moved', view: moved };
  }

  private async move(t: TransferView, path: readonly PathStep[], code: ErrorCode | null = null): Promise<TransferView | null> {
    const updatedAt = await this.deps.store.move(t, path, code);
    if (updatedAt === null) return null;
    this.countPath(t, path, code);
    const to = path[path.length - 1]?.to ?? t.state;
    return { ...t, state: to, errorCode: code ?? t.errorCode, attempts: 0, updatedAt: updatedAt.toISOString() };
  }

  /** Counts each transition of a committed path (spec 004's fsm_state_count{from,to}); logs them at debug. */
  private countPath(t: TransferView, path: readonly PathStep[], code: ErrorCode | null = null): void {
    const from = t.state;
    let at = from;
    for (const s of path) {
      countTransition(this.deps.metrics, t, at, s.to, code);
      at = s.to;
    }
    if (this.deps.log.enabled('debug'))
      this.deps.log.debug('transfer moved', { from_state: from, state: at, path: path.map((s) => s.event).join(',') });
  }

  /** Counts the move a creation made, if any (INIT → SOURCE_PENDING, or INIT → FAILED). */
  private counted(outcome: CreateOutcome): CreateOutcome {
    if (outcome.kind === 'created' && outcome.view.state !== 'INIT')
      countTransition(this.deps.metrics, outcome.view, 'INIT', outcome.view.state);
    return outcome;
  }

  private async stay(t: TransferView, event: TransferEvent, cause: PendingCause): Promise<StepResult> {
    assertTransition(t.state, event, t.state);
    const retryAt = this.deps.nextRetryAt(t.retryCount);
    await this.deps.store.noteRetry(t, cause, retryAt);
    countRetry(this.deps.metrics, t.state);
    const level = t.state === 'SOURCE_PENDING' || t.state === 'INIT' ? 'warn' : 'critical';
    this.deps.log[level]('transfer outcome unknown, will retry', {
      req_id: t.reqId,
      user_id: t.userId,
      state: t.state,
      reason: causeText(cause),
      latency_ms: sinceCreated(t),
    });
    const now = { ...t, retryCount: t.retryCount + 1, attempts: t.attempts + 1 };
    await this.deps.watch(now, cause);
    return { kind: 'stayed', view: now, cause };
  }

  private async reread(t: TransferView): Promise<StepResult> {
    const now = await this.deps.store.get(t.reqId);
    if (now === null) return { kind: 'not_found' };
    return isTerminal(now.state) ? { kind: 'terminal', view: now } : { kind: 'moved', view: now };
  }
}

/** A refund answered FAILED: never final, it waits in COMPENSATING for an operator. */
function refundRefused(code: FailureCode): PendingCause {
  return { kind: 'refund_refused', code, detail: `refund refused: ${code}` };
}

/** Milliseconds since the transfer was created: the latency on every line about it. */
function sinceCreated(t: TransferView): number {
  return Date.now() - Date.parse(t.createdAt);
}

function opRequest(t: OpRequest): OpRequest {
  return { reqId: t.reqId, userId: t.userId, asset: t.asset, amount: t.amount };
}
