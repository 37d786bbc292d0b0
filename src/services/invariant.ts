// Runs the conservation check periodically and on demand, and halts new transfers on the first
// difference (MON-003) with a CRITICAL alert.

import type { UbsSend } from '../adapters/trading.js';
import type { AlertSink } from '../alerts/alerts.js';
import type { Sql } from '../db/sql.js';
import { runConservationCheck, type InvariantReport } from '../invariant/checker.js';
import type { Logger } from '../log.js';
import type { Registry } from '../metrics/registry.js';
import type { HaltSwitch } from './halt.js';
import { DIFFERENCES_IN_ALERT_MAX } from '../limits.js';

export class InvariantService {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<InvariantReport> | null = null;
  private last: InvariantReport | null = null;

  constructor(
    private readonly deps: {
      readonly sql: Sql;
      readonly ubs: UbsSend;
      readonly halt: HaltSwitch;
      readonly alerts: AlertSink;
      readonly log: Logger;
      readonly registry: Registry;
    },
  ) {}

  get lastReport(): InvariantReport | null {
    return this.last;
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.timer = setInterval(() => {
      this.check().catch((error: unknown) => this.deps.log.error('conservation check failed to run', { error: String(error) }));
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
    const report = await runConservationCheck(this.deps.sql, this.deps.ubs);
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
      this.deps.log.info('conservation check passed', {
        accounts: report.accounts,
        transfers: report.transfersExamined,
        wal_seq: report.walSeq,
      });
      return report;
    }
    const reason = `conservation violated on ${report.differences.length} account(s)`;
    if (await this.deps.halt.halt(reason)) {
      await this.deps.alerts.raise({
        kind: 'CONSERVATION_VIOLATION',
        reqId: null,
        userId: null,
        message: `${reason}: new transfers halted until an operator resumes`,
        details: { differences: report.differences.slice(0, DIFFERENCES_IN_ALERT_MAX), wal_seq: report.walSeq },
      });
    }
    return report;
  }
}
