// The failure rate's window: samples of the coordinators' counters of transfers moved into each
// final state (since they started), kept for `windowMs`; the rate is over the difference between
// the newest sample and the newest one at least `windowMs` old (or the oldest kept). In memory,
// so after a restart the window starts again from the restart.

import { SAMPLES_MAX } from '../limits.js';

/** Transfers moved into a final state, and of those the ones a failure of the service met (never a user's own refusal). */
export type FinishedCounts = { readonly finished: number; readonly systemFailed: number };

type Sample = FinishedCounts & { readonly at: number };

export class FailureWindow {
  private samples: Sample[] = [];

  constructor(private readonly windowMs: number) {}

  /** Adds a sample and answers the counts of the window ending with it. */
  add(at: number, counts: FinishedCounts): FinishedCounts {
    const newest = this.samples[this.samples.length - 1];
    // A counter that went down is a restarted counter: start the window again.
    if (newest !== undefined && (counts.finished < newest.finished || counts.systemFailed < newest.systemFailed)) this.samples = [];
    this.samples.push({ at, ...counts });
    // Keep one sample at or before the window's start, as its baseline.
    while (this.samples.length > 1 && (this.samples[1] as Sample).at <= at - this.windowMs) this.samples.shift();
    if (this.samples.length > SAMPLES_MAX) this.samples.shift();
    const base = this.samples[0] as Sample;
    return { finished: counts.finished - base.finished, systemFailed: counts.systemFailed - base.systemFailed };
  }
}
