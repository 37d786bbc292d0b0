// Alerts for operators. Each is one row of `alerts` (at most one per kind and transfer, so a
// retry loop does not flood), one structured log line, and, when ALERT_WEBHOOK_URL is set, one
// JSON POST. A failing webhook is logged and never blocks or fails the transfer that raised it.

import type { Sql } from '../db/sql.js';
import type { Logger } from '../log.js';
import { RAISED_REMEMBERED_MAX, WEBHOOK_TIMEOUT_MS } from '../limits.js';

export const ALERT_KINDS = {
  /** MON-001: a transfer has been TARGET_PENDING for longer than the threshold. */
  TARGET_PENDING_TOO_LONG: 'CRITICAL',
  /** MON-001's twin: a SPOT → FUNDING transfer has waited in SOURCE_PENDING, its UBSCore debit's outcome unknown, longer than the threshold. */
  SOURCE_PENDING_TOO_LONG: 'CRITICAL',
  /** MON-002: a refund failed three times; funds wait in COMPENSATING. */
  REFUND_FAILING: 'CRITICAL',
  /** A transfer needs an operator (spec 002's dead letter); its retries go on. */
  TRANSFER_STUCK: 'CRITICAL',
  /** MON-003: FUNDING + SPOT + in flight differs from the external movements; transfers halt. */
  CONSERVATION_VIOLATION: 'CRITICAL',
  /** MON-004: a user sends transfers at an abnormal rate. */
  ABNORMAL_FREQUENCY: 'WARNING',
  /** An adapter answered with parameters that contradict its record. */
  IDEMPOTENCY_CONFLICT: 'CRITICAL',
  /** Spec 002 compensation_task_backlog: more unfinished transfers than ALERT_BACKLOG_MAX. */
  TRANSFER_BACKLOG: 'WARNING',
  /** Spec 002 failed_tasks: more transfers retrying an unknown outcome than ALERT_RETRYING_MAX. */
  TRANSFERS_RETRYING: 'WARNING',
  /** Spec 002 dead_letter_alert: transfers escalated to an operator (never given up). */
  DEAD_LETTERS: 'CRITICAL',
  /** Spec 002 high_failure_rate: failures of the service (not refusals) / finished in the window above ALERT_FAILURE_RATE_PERCENT. */
  HIGH_FAILURE_RATE: 'ERROR',
  /** Spec 002 avg_retry_count, "watch": the unfinished transfers' mean retries above ALERT_AVG_RETRIES_MAX. */
  HIGH_AVG_RETRIES: 'INFO',
  /** UBSCore's WAL takes no writes (a full disk): spot commands are refused until it does. */
  UBSCORE_WAL_UNWRITABLE: 'CRITICAL',
} as const;
type AlertKind = keyof typeof ALERT_KINDS;

export type Alert = {
  readonly kind: AlertKind;
  readonly reqId: string | null;
  readonly userId: bigint | null;
  readonly message: string;
  readonly details: Readonly<Record<string, unknown>>;
  /** Deduplication key when the alert is not about one transfer (default: the req_id, or a new key). */
  readonly dedupeKey?: string;
};

type AlertRow = Alert & { readonly id: string; readonly severity: string; readonly createdAt: string };

export class AlertSink {
  private readonly raised = new Set<string>();

  constructor(private readonly deps: { readonly sql: Sql; readonly log: Logger; readonly webhookUrl: string | null }) {}

  /** Records the alert once; answers whether this call raised it. */
  async raise(alert: Alert): Promise<boolean> {
    // A stuck transfer meets its alert's condition on every retry: skip the round trip for a
    // key this sink already recorded (the table's unique key stays the authority).
    const key = alert.dedupeKey ?? alert.reqId;
    const memo = key === null ? null : `${alert.kind}|${key}`;
    if (memo !== null && this.raised.has(memo)) return false;
    const raised = await this.insert(alert, key);
    if (memo !== null) this.remember(memo);
    return raised;
  }

  private remember(memo: string): void {
    if (this.raised.size >= RAISED_REMEMBERED_MAX) this.raised.clear();
    this.raised.add(memo);
  }

  private async insert(alert: Alert, key: string | null): Promise<boolean> {
    const severity = ALERT_KINDS[alert.kind];
    const details = JSON.stringify(alert.details, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    const rows = await this.deps.sql`
      INSERT INTO alerts (kind, severity, req_id, user_id, message, details, dedupe_key)
      VALUES (${alert.kind}, ${severity}, ${alert.reqId}, ${alert.userId}, ${alert.message}, ${details}::text::jsonb,
              ${key ?? `${alert.kind}-${Date.now()}-${Math.random()}`})
      ON CONFLICT (kind, dedupe_key) DO NOTHING RETURNING id`;
    if (rows.length === 0) return false;
    const fields = { alert: alert.kind, severity, req_id: alert.reqId, user_id: alert.userId, ...alert.details };
    const severityOf: string = severity;
    if (severityOf === 'CRITICAL') this.deps.log.critical(alert.message, fields);
    else if (severityOf === 'ERROR') this.deps.log.error(alert.message, fields);
    else if (severityOf === 'INFO') this.deps.log.info(alert.message, fields);
    else this.deps.log.warn(alert.message, fields);
    if (this.deps.webhookUrl !== null)
      void this.post(this.deps.webhookUrl, { ...alert, severity, details: JSON.parse(details) as unknown });
    return true;
  }

  async list(limit: number): Promise<AlertRow[]> {
    const rows = await this.deps.sql<
      {
        id: bigint;
        kind: AlertKind;
        severity: string;
        req_id: string | null;
        user_id: bigint | null;
        message: string;
        details: Record<string, unknown>;
        created_at: Date;
      }[]
    >`
      SELECT * FROM alerts ORDER BY id DESC LIMIT ${limit}`;
    return rows.map((r) => ({
      id: r.id.toString(),
      kind: r.kind,
      severity: r.severity,
      reqId: r.req_id,
      userId: r.user_id,
      message: r.message,
      details: objectOf(r.details),
      createdAt: r.created_at.toISOString(),
    }));
  }

  private async post(url: string, body: Record<string, unknown>): Promise<void> {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)),
        signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      });
      if (!response.ok) this.deps.log.error('alert webhook answered an error', { status: response.status });
    } catch (error) {
      this.deps.log.error('alert webhook failed', { error: String(error) });
    }
  }
}

/**
 * A `$1::jsonb` parameter given a JSON text is stored as a JSON string (the driver encodes the
 * text once more), which is how alerts before this change were written: read those back too.
 */
function objectOf(value: unknown): Record<string, unknown> {
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  return typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : { value: parsed };
}
