// Evaluates spec 002's alert table on the main thread every interval: measures from cheap reads,
// judged by the pure rules, each condition's firing state kept in alert_conditions. A condition
// that starts firing opens a new episode (a compare-and-swap from not firing) and is raised
// through the AlertSink once for that episode (logged, stored, posted to the webhook); while it
// fires it is not raised again; when it drops to its threshold or below it clears (logged), and
// firing again later opens the next episode, raised anew. Gauges show each condition's state.

import type { AlertSink } from './alerts.js';
import type { Sql } from '../db/sql.js';
import type { Logger } from '../log.js';
import type { Registry } from '../metrics/registry.js';
import { FailureWindow, type FinishedCounts } from './failure-window.js';
import type { UnfinishedMeasures } from './measures.js';
import { judge, type Judgement, type Thresholds } from './rules.js';

type MonitorDeps = {
  readonly sql: Sql;
  readonly alerts: AlertSink;
  readonly registry: Registry;
  readonly log: Logger;
  readonly thresholds: Thresholds;
  readonly failureWindowMs: number;
  readonly unfinished: () => Promise<UnfinishedMeasures>;
  /** Transfers moved into a final state since the coordinators started; null when one did not answer. */
  readonly finishedCounts: () => Promise<FinishedCounts | null>;
};

type Condition = Judgement & { readonly since: string | null };

export class AlertMonitor {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<Judgement[]> | null = null;
  private readonly window: FailureWindow;
  private failures: FinishedCounts = { finished: 0, systemFailed: 0 };

  constructor(private readonly deps: MonitorDeps) {
    this.window = new FailureWindow(deps.failureWindowMs);
    // The coordinators' counters start at zero with the process, before this monitor.
    this.window.add(Date.now(), { finished: 0, systemFailed: 0 });
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => {
      this.evaluate().catch((error: unknown) => this.deps.log.error('alert rules failed to evaluate', { error: String(error) }));
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  /** One evaluation at a time: a call while one runs shares its result. */
  evaluate(): Promise<Judgement[]> {
    this.running ??= this.runOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Each condition as last stored, with its threshold, for GET /admin/v1/alerts. */
  async conditions(): Promise<Condition[]> {
    const rows = await this.deps.sql<{ kind: string; firing: boolean; value: number; changed_at: Date }[]>`SELECT * FROM alert_conditions`;
    const byKind = new Map(rows.map((r) => [r.kind, r]));
    const none = { finished: 0, systemFailed: 0, backlog: 0, sampled: 0, retrying: 0, escalated: 0, retriesSum: 0 };
    return judge(none, this.deps.thresholds).map((j) => {
      const row = byKind.get(j.kind);
      return { ...j, firing: row?.firing ?? false, value: row?.value ?? 0, message: '', since: row?.changed_at.toISOString() ?? null };
    });
  }

  private async runOnce(): Promise<Judgement[]> {
    const [unfinished, counts] = await Promise.all([this.deps.unfinished(), this.deps.finishedCounts()]);
    // A shard that did not answer leaves the window as it was rather than a false drop.
    if (counts !== null) this.failures = this.window.add(Date.now(), counts);
    const judgements = judge({ ...unfinished, ...this.failures }, this.deps.thresholds);
    for (const j of judgements) {
      await this.settle(j);
      const labels = { alert: j.kind };
      this.deps.registry.set(
        'transfer_alert_firing',
        "Whether each alert of spec 002's table is firing (1) or clear (0)",
        labels,
        j.firing ? 1 : 0,
      );
      this.deps.registry.set(
        'transfer_alert_value',
        "The value each alert of spec 002's table last measured (a count, a percent, a mean)",
        labels,
        j.value,
      );
      this.deps.registry.set('transfer_alert_threshold', "The threshold each alert of spec 002's table fires above", labels, j.threshold);
    }
    return judgements;
  }

  private async settle(j: Judgement): Promise<void> {
    const { sql, alerts, log } = this.deps;
    if (!j.firing) {
      const cleared = await sql<{ episode: number }[]>`
        UPDATE alert_conditions SET firing = false, value = ${j.value}, changed_at = now() WHERE kind = ${j.kind} AND firing RETURNING episode`;
      if (cleared.length === 1)
        log.info('alert cleared', { alert: j.kind, value: j.value, threshold: j.threshold, episode: cleared[0]?.episode });
      else await sql`UPDATE alert_conditions SET value = ${j.value} WHERE kind = ${j.kind}`;
      return;
    }
    // Compare-and-swap from clear (or never seen) to firing: only the change opens an episode.
    const opened = await sql<{ episode: number }[]>`
      INSERT INTO alert_conditions (kind, firing, episode, value) VALUES (${j.kind}, true, 1, ${j.value})
      ON CONFLICT (kind) DO UPDATE SET firing = true, episode = alert_conditions.episode + 1, value = EXCLUDED.value, changed_at = now()
       WHERE NOT alert_conditions.firing
      RETURNING episode`;
    const episode = opened[0]?.episode ?? (await this.firingEpisode(j));
    // Raised on every evaluation while firing: the sink's key makes all but the first a no-op,
    // and a raise lost after the swap (the database gone in between) is made by the next one.
    await alerts.raise({
      kind: j.kind,
      reqId: null,
      userId: null,
      message: j.message,
      details: { value: j.value, threshold: j.threshold, episode },
      dedupeKey: `episode-${episode}`,
    });
  }

  private async firingEpisode(j: Judgement): Promise<number> {
    const rows = await this.deps.sql<
      { episode: number }[]
    >`UPDATE alert_conditions SET value = ${j.value} WHERE kind = ${j.kind} RETURNING episode`;
    return rows[0]?.episode ?? 0;
  }
}
