// Runs the conservation check periodically and on demand, and halts new transfers on the first
// difference (MON-003). Every failing check alerts (CRITICAL), halted or not, unless it found
// exactly the differences the last alert reported: a standing difference is logged at each check
// but does not flood the alerts table and the webhook, while a new one found during the halt is
// raised on its own.

import { createHash } from 'node:crypto';
import type { UbsSend } from '../ubscore/control.js';
import { isFenced } from '../db/fence.js';
import type { AlertSink } from '../alerts/alerts.js';
import type { Sql } from '../db/sql.js';
import type { Difference } from '../invariant/conservation.js';
import { runConservationCheck, type InvariantReport } from '../invariant/checker.js';
import type { Logger } from '../log.js';
import type { Registry } from '../metrics/registry.js';
import type { HaltSwitch } from './halt.js';
import { PlanGate } from '../ubscore/processed/retention-gate.js';
import { DIFFERENCES_IN_ALERT_MAX } from '../limits.js';

export class InvariantService {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<InvariantReport> | null = null;
  private last: InvariantReport | null = null;
  /**
   * The digest of the differences last alerted, forgotten when a check passes. In memory: after
   * a restart the first failing check alerts once more, which tells the operator the difference
   * outlived the restart.
   */
  private alerted: string | null = null;

  constructor(
    private readonly deps: {
      readonly sql: Sql;
      readonly ubs: UbsSend;
      readonly halt: HaltSwitch;
      readonly alerts: AlertSink;
      readonly log: Logger;
      readonly registry: Registry;
      /** Shared with the retention (src/ubscore/processed/retention-gate.ts): a check never runs beside a retention plan. */
      readonly gate?: PlanGate;
    },
  ) {}

  get lastReport(): InvariantReport | null {
    return this.last;
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.check().catch((error: unknown) => {
        // A halt or an alert the owner fence refused: another process owns the ledger now, and
        // this one's view of the funds (its RAM) is no ground for halting it.
        if (isFenced(error))
          this.deps.log.critical('conservation check: its write was refused by the owner fence: this process no longer owns the ledger', {
            error: String(error),
          });
        else this.deps.log.error('conservation check failed to run', { error: String(error) });
      });
    }, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
  }

  /** One check at a time: a call while one runs shares its result. */
  check(): Promise<InvariantReport> {
    this.running ??= this.runOnce().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async runOnce(): Promise<InvariantReport> {
    const gate = this.deps.gate ?? new PlanGate();
    const report = await gate.run(() => runConservationCheck(this.deps.sql, this.deps.ubs));
    this.last = report;
    this.deps.registry.set(
      'transfer_conservation_last_check_timestamp_seconds',
      'When the last completed conservation check read the ledger (unix seconds)',
      {},
      Date.parse(report.checkedAt) / 1000,
    );
    this.deps.registry.set(
      'transfer_conservation_differences',
      'Accounts whose balances the last conservation check found wrong (0 when it passed)',
      {},
      report.differences.length,
    );
    if (report.differences.length === 0) {
      this.alerted = null;
      this.deps.log.info('conservation check passed', {
        accounts: report.accounts,
        transfers: report.transfersExamined,
        wal_seq: report.walSeq,
      });
      return report;
    }
    await this.onViolation(report);
    return report;
  }

  /**
   * Halts (once) and alerts, unless these differences are the ones last alerted and the service
   * was already halted: a halt made by this check is always raised, even after an operator
   * resumed over a standing difference.
   */
  private async onViolation(report: InvariantReport): Promise<void> {
    const reason = `conservation violated on ${report.differences.length} account(s)`;
    const halted = await this.deps.halt.halt(reason);
    const digest = digestOf(report.differences);
    if (!halted && digest === this.alerted) {
      this.deps.log.warn('conservation check still finds the differences already alerted', {
        differences: report.differences.length,
        wal_seq: report.walSeq,
      });
      return;
    }
    await this.deps.alerts.raise({
      kind: 'CONSERVATION_VIOLATION',
      reqId: null,
      userId: null,
      message: halted
        ? `${reason}: new transfers halted until an operator resumes`
        : `${reason}: new transfers stay halted until an operator resumes`,
      details: { differences: report.differences.slice(0, DIFFERENCES_IN_ALERT_MAX), wal_seq: report.walSeq },
    });
    // Remembered only once raised: an alert lost to a failing database is raised by the next check.
    this.alerted = digest;
  }
}

/**
 * The differences as one value, whatever order the check listed them in: each account or
 * transfer with how far off it is, so a standing difference stays the same value while the
 * balances around it move, and a second one, or a larger one, is a new value.
 */
function digestOf(differences: readonly Difference[]): string {
  const lines = differences.map((d) => `${d.key}\t${d.actual - d.expected}\t${d.detail}`).sort();
  return createHash('sha256').update(lines.join('\n')).digest('hex');
}
