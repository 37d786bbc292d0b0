// Spec 002's monitoring table (§10) as pure rules: each measured value against its threshold,
// firing only when strictly above it, as the spec writes every condition ("> 100"). Compared
// in integers, so a rate of exactly the threshold never fires through a rounding.

export type Measures = {
  /** Unfinished transfers (transfers_active): spec 002's pending_tasks. */
  readonly backlog: number;
  /** Unfinished transfers read for the per-row measures (at most a bound, oldest first). */
  readonly sampled: number;
  /** Of those, transfers whose last attempt had an unknown outcome and are retrying: failed_tasks. */
  readonly retrying: number;
  /** Of those, transfers escalated to an operator (STUCK_RETRIES or STUCK_AGE_MS): dead letters. */
  readonly escalated: number;
  /** Their retry counts summed: avg_retry_count = retriesSum / sampled. */
  readonly retriesSum: number;
  /** Transfers that reached a final state within the window. */
  readonly finished: number;
  /**
   * Of those, the ones a failure of the service met: an unknown outcome retried on the way, or an
   * end FAILED or ROLLED_BACK that is not the user's own refusal (transfer-metrics.ts,
   * metSystemFailure). A burst of INSUFFICIENT_BALANCE or ACCOUNT_FROZEN is not one.
   */
  readonly systemFailed: number;
};

export type Thresholds = {
  readonly backlogMax: number;
  readonly retryingMax: number;
  readonly deadLettersMax: number;
  readonly failureRatePercent: number;
  readonly avgRetriesMax: number;
};

export const CONDITION_KINDS = ['TRANSFER_BACKLOG', 'TRANSFERS_RETRYING', 'DEAD_LETTERS', 'HIGH_FAILURE_RATE', 'HIGH_AVG_RETRIES'] as const;
export type ConditionKind = (typeof CONDITION_KINDS)[number];

export type Judgement = {
  readonly kind: ConditionKind;
  readonly firing: boolean;
  /** What was measured, in the unit of its threshold (a count, a percent, a mean). */
  readonly value: number;
  readonly threshold: number;
  readonly message: string;
};

export function judge(m: Measures, t: Thresholds): Judgement[] {
  const failurePercent = m.finished === 0 ? 0 : (m.systemFailed * 100) / m.finished;
  const avgRetries = m.sampled === 0 ? 0 : m.retriesSum / m.sampled;
  return [
    rule('TRANSFER_BACKLOG', m.backlog > t.backlogMax, m.backlog, t.backlogMax, `${m.backlog} unfinished transfers, above ${t.backlogMax}`),
    rule(
      'TRANSFERS_RETRYING',
      m.retrying > t.retryingMax,
      m.retrying,
      t.retryingMax,
      `${m.retrying} transfers retrying an unknown outcome, above ${t.retryingMax}`,
    ),
    rule(
      'DEAD_LETTERS',
      m.escalated > t.deadLettersMax,
      m.escalated,
      t.deadLettersMax,
      `${m.escalated} transfers escalated to an operator (retries go on), above ${t.deadLettersMax}`,
    ),
    rule(
      'HIGH_FAILURE_RATE',
      m.systemFailed * 100 > m.finished * t.failureRatePercent,
      failurePercent,
      t.failureRatePercent,
      `${m.systemFailed} of ${m.finished} transfers finished in the window met a failure of the service (an unknown outcome, or an end that is not the user's own refusal), above ${t.failureRatePercent}%`,
    ),
    rule(
      'HIGH_AVG_RETRIES',
      m.retriesSum > m.sampled * t.avgRetriesMax,
      avgRetries,
      t.avgRetriesMax,
      `unfinished transfers average ${avgRetries.toFixed(2)} retries, above ${t.avgRetriesMax}`,
    ),
  ];
}

function rule(kind: ConditionKind, firing: boolean, value: number, threshold: number, message: string): Judgement {
  return { kind, firing, value, threshold, message };
}
