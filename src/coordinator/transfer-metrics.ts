// What a coordinator shard counts about its transfers, in one place: every FSM transition (spec
// 004's fsm_state_count{from,to}, exposed as transfer_fsm_transitions_total), every transfer
// reaching a final state with its time from creation, of those the ones a failure of the service
// met on the way (HIGH_FAILURE_RATE's numerator), and every retry. The shard's registry adds its
// `shard` label; the main thread adds `thread`.

import { FINISHED, FINISHED_AFTER_SYSTEM_FAILURE } from '../metrics/finished.js';
import { isRefusal, type ErrorCode } from '../domain/errors.js';
import { isTerminal, STATE_NAMES, type TransferStateName } from '../domain/fsm.js';
import type { Registry } from '../metrics/registry.js';
import type { TransferView } from '../domain/transfer.js';

const FSM_TRANSITIONS = 'transfer_fsm_transitions_total';
const DURATION = 'transfer_duration_seconds';
const RETRIES = 'transfer_retries_total';

/** From creation to a final state: a direct commit takes milliseconds, a retried one up to RETRY_CAP_MS and beyond. */
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

const finishedHelp = 'Transfers this shard moved into each final state since it started';
const retriesHelp = 'Unknown outcomes that left a transfer where it was, to be retried';
const systemFailureHelp =
  "Transfers this shard moved into each final state after a failure of the service: an unknown outcome retried on the way, or an end FAILED or ROLLED_BACK that is not the user's own refusal";

/** Zero series for every final state and retried state, so a rate over them exists before the first count. */
export function declareCounters(metrics: Registry): void {
  for (const state of STATE_NAMES) {
    metrics.inc(isTerminal(state) ? FINISHED : RETRIES, isTerminal(state) ? finishedHelp : retriesHelp, { state }, 0);
    if (isTerminal(state)) metrics.inc(FINISHED_AFTER_SYSTEM_FAILURE, systemFailureHelp, { state }, 0);
  }
}

/**
 * One committed transition; a final one also counts the transfer as finished and times it. `t` is
 * the transfer before the move; `code` the one the move records, if any (a ROLLED_BACK transfer
 * keeps the code its target's rejection recorded on the way into COMPENSATING).
 */
export function countTransition(
  metrics: Registry,
  t: Pick<TransferView, 'createdAt' | 'retryCount' | 'errorCode'>,
  from: TransferStateName,
  to: TransferStateName,
  code: ErrorCode | null = null,
): void {
  metrics.inc(FSM_TRANSITIONS, "State transitions committed, by from and to state (spec 004's fsm_state_count{from,to})", { from, to });
  if (!isTerminal(to)) return;
  metrics.inc(FINISHED, finishedHelp, { state: to });
  if (metSystemFailure(t, to, code ?? t.errorCode)) metrics.inc(FINISHED_AFTER_SYSTEM_FAILURE, systemFailureHelp, { state: to });
  const seconds = Math.max(0, Date.now() - Date.parse(t.createdAt)) / 1000;
  metrics.observe(
    DURATION,
    "Time from a transfer's creation to its final state, by final state",
    DURATION_BUCKETS_S,
    { state: to },
    seconds,
  );
}

export function countRetry(metrics: Registry, state: TransferStateName): void {
  metrics.inc(RETRIES, retriesHelp, { state });
}

/**
 * Whether the service failed a transfer that reached `to` (HIGH_FAILURE_RATE): it met an unknown
 * outcome on the way (an outcome is never compensated here: it is retried, so a retried transfer
 * is how a failure of the service shows among finished ones, whatever its end), or it ended FAILED
 * or ROLLED_BACK with a code that is not the user's own refusal (CONSTRAINT_VIOLATION, or none).
 */
export function metSystemFailure(t: Pick<TransferView, 'retryCount'>, to: TransferStateName, code: ErrorCode | null): boolean {
  if (t.retryCount > 0) return true;
  return to !== 'COMMITTED' && !isRefusal(code);
}
