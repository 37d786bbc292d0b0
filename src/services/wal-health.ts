// Whether UBSCore's WAL takes writes, as the main thread knows it: set by UBSCore's reports
// (ubs.degraded, ubs.recovered), read by GET /readyz, and announced once per episode as a
// CRITICAL alert (docs/operations.md, "A full disk").

import type { AlertSink } from '../alerts/alerts.js';
import type { Logger } from '../log.js';

/** UBSCore's reports, as plain values (the protocol's ubs.degraded and ubs.recovered). */
type WalHealthReport =
  | { readonly kind: 'degraded'; readonly reason: string; readonly since: number }
  | { readonly kind: 'recovered'; readonly since: number; readonly degradedMs: number; readonly attempts: number };

type WalHealthState = { readonly writable: true } | { readonly writable: false; readonly reason: string; readonly since: number };

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
    if (!this.state.writable) this.raise(this.state.reason, this.state.since);
  }

  report(event: WalHealthReport): void {
    switch (event.kind) {
      case 'degraded':
        this.state = { writable: false, reason: event.reason, since: event.since };
        this.log.critical(
          'UBSCore cannot write its WAL: spot commands are answered unavailable and transfers stay pending until the disk takes writes',
          { reason: event.reason },
        );
        this.raise(event.reason, event.since);
        break;
      case 'recovered':
        this.state = { writable: true };
        this.log.warn('UBSCore writes its WAL again; pending transfers resume', {
          degraded_ms: event.degradedMs,
          attempts: event.attempts,
        });
        break;
    }
  }

  private raise(reason: string, since: number): void {
    const sink = this.alerts;
    if (sink === null) return;
    // One alert per episode: the key is the moment it began, as UBSCore reported it.
    const alert = {
      kind: 'UBSCORE_WAL_UNWRITABLE' as const,
      reqId: null,
      userId: null,
      message: 'UBSCore cannot write its WAL (a full disk?): spot commands are refused and transfers wait until it can',
      details: { reason, since: new Date(since).toISOString() },
      dedupeKey: `since-${since}`,
    };
    sink.raise(alert).catch((error: unknown) => this.log.error('could not record the WAL alert', { error: String(error) }));
  }
}
