// What a coordinator shard counts about its transfers, in one place: every FSM transition (spec
// 004's fsm_state_count{from,to}, exposed as transfer_fsm_transitions_total), every transfer
// reaching a final state with its time from creation, and every retry. The shard's registry adds
// its `shard` label; the main thread adds `thread`.

import { isTerminal, STATE_NAMES, type TransferStateName } from '../domain/fsm.js';
import type { Registry } from '../metrics/registry.js';
import type { TransferView } from './types.js';

const FSM_TRANSITIONS = 'transfer_fsm_transitions_total';
export const FINISHED = 'transfer_finished_total';
const DURATION = 'transfer_duration_seconds';
const RETRIES = 'transfer_retries_total';

/** From creation to a final state: a direct commit takes milliseconds, a retried one up to RETRY_CAP_MS and beyond. */
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

const finishedHelp = 'Transfers this shard moved into each final state since it started';
const retriesHelp = 'Unknown outcomes that left a transfer where it was, to be retried';

/** Zero series for every final state and retried state, so a rate over them exists before the first count. */
export function declareCounters(metrics: Registry): void {
  for (const state of STATE_NAMES)
    metrics.inc(isTerminal(state) ? FINISHED : RETRIES, isTerminal(state) ? finishedHelp : retriesHelp, { state }, 0);
}

/** One committed transition; a final one also counts the transfer as finished and times it. */
export function countTransition(
  metrics: Registry,
  t: Pick<TransferView, 'createdAt'>,
  from: TransferStateName,
  to: TransferStateName,
): void {
  metrics.inc(FSM_TRANSITIONS, "State transitions committed, by from and to state (spec 004's fsm_state_count{from,to})", { from, to });
  if (!isTerminal(to)) return;
  metrics.inc(FINISHED, finishedHelp, { state: to });
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
