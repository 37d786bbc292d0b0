// Whether UBSCore's WAL takes writes, as the main thread knows it: set by UBSCore's reports
// (ubs.degraded, ubs.recovered), read by GET /readyz, and announced once per episode as a
// CRITICAL alert. Two causes, told apart by the event's `cause`, meet commands differently: an
// LMDB write that failed (docs/operations.md, "A full disk") answers them unavailable; PostgreSQL's
// log append retried (SPOT_LOG=postgres) keeps them waiting, unanswered, until it commits.

import type { AlertSink } from '../alerts/alerts.js';
import type { Logger } from '../log.js';
import type { UbsDegradedCause } from '../ubscore/control.js';

/** UBSCore's reports, as plain values (the protocol's ubs.degraded and ubs.recovered). */
type WalHealthReport =
  | { readonly kind: 'degraded'; readonly cause: UbsDegradedCause; readonly reason: string; readonly since: number }
  | { readonly kind: 'recovered'; readonly since: number; readonly degradedMs: number; readonly attempts: number };

type WalHealthState =
  | { readonly writable: true }
  | { readonly writable: false; readonly cause: UbsDegradedCause; readonly reason: string; readonly since: number };

/** What is true for each cause: the log line, and the alert's message. */
const SAYS: Readonly<Record<UbsDegradedCause, { readonly line: string; readonly alert: string }>> = {
  wal: {
    line: 'UBSCore cannot write its WAL: spot commands are answered unavailable and transfers stay pending until the disk takes writes',
    alert: 'UBSCore cannot write its WAL (a full disk?): spot commands are refused and transfers wait until it can',
  },
  'pg-log': {
    line: "UBSCore's log append to PostgreSQL failed and is retried: spot commands wait unanswered, and transfers stay pending, until PostgreSQL commits it",
    alert: "PostgreSQL does not take UBSCore's log (retried): spot commands wait unanswered, and transfers stay pending, until it does",
  },
};

export class WalHealth {
  private state: WalHealthState = { writable: true };
  private alerts: AlertSink | null = null;

  constructor(private readonly log: Logger) {}

  get current(): WalHealthState {
    return this.state;
  }

  /** Alerts go to `sink` from now on, including one for an episode already under way. */
  useAlerts(sink: AlertSink): void {
    this.alerts = sink;
    if (!this.state.writable) this.raise(this.state.cause, this.state.reason, this.state.since);
  }

  report(event: WalHealthReport): void {
    switch (event.kind) {
      case 'degraded':
        this.state = { writable: false, cause: event.cause, reason: event.reason, since: event.since };
        this.log.critical(SAYS[event.cause].line, { cause: event.cause, reason: event.reason });
        this.raise(event.cause, event.reason, event.since);
        break;
      case 'recovered': {
        const was = this.state.writable ? null : this.state.cause;
        this.state = { writable: true };
        const line = was === 'pg-log' ? "PostgreSQL takes UBSCore's log again" : 'UBSCore writes its WAL again';
        this.log.warn(`${line}; pending transfers resume`, {
          degraded_ms: event.degradedMs,
          attempts: event.attempts,
        });
        break;
      }
    }
  }

  private raise(cause: UbsDegradedCause, reason: string, since: number): void {
    const sink = this.alerts;
    if (sink === null) return;
    // One alert per episode: the key is the moment it began, as UBSCore reported it.
    const alert = {
      kind: 'UBSCORE_WAL_UNWRITABLE' as const,
      reqId: null,
      userId: null,
      message: SAYS[cause].alert,
      details: { cause, reason, since: new Date(since).toISOString() },
      dedupeKey: `since-${since}`,
    };
    sink.raise(alert).catch((error: unknown) => this.log.error('could not record the WAL alert', { error: String(error) }));
  }
}
