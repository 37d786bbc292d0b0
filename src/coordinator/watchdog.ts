// Watches transfers that stay: raises MON-001 (TARGET_PENDING too long, and SOURCE_PENDING too
// long for a SPOT debit whose outcome is unknown), MON-002 (a refund failed three times) and the
// escalation to an operator (too many retries, or too old). It only alerts; it never moves a
// transfer, and the transfer's retries go on whatever it finds.

import type { AlertSink } from '../alerts/alerts.js';
import { agedAtLeast, isStuck, type StuckRule, unknownWaitOf } from '../db/stuck.js';
import type { TransferStore } from '../db/transfers.js';
import { causeText, type PendingCause } from '../domain/types.js';
import type { TransferView } from '../domain/transfer.js';
import { SWEEP_BATCH_MAX } from '../limits.js';

type WatchdogConfig = StuckRule & {
  readonly targetPendingAlertMs: number;
  readonly refundFailuresAlertMax: number;
};

export class Watchdog {
  constructor(
    private readonly deps: {
      readonly alerts: Pick<AlertSink, 'raise'>;
      readonly store: Pick<TransferStore, 'unknownWaitOlderThan'>;
      readonly config: WatchdogConfig;
      readonly now?: () => number;
    },
  ) {}

  /** Called each time a transfer stays after an unknown outcome; `t` is as it is now. */
  async onStay(t: TransferView, cause: PendingCause): Promise<void> {
    await this.check(t, causeText(cause), cause);
  }

  /** Periodic: transfers waiting on an unknown outcome (src/db/stuck.ts) past the threshold, even when no retry has run. */
  async sweep(): Promise<void> {
    const late = await this.deps.store.unknownWaitOlderThan(this.deps.config.targetPendingAlertMs, SWEEP_BATCH_MAX);
    for (const t of late) await this.check(t, t.errorCode ?? 'no answer yet', null);
  }

  /** `cause`: why the transfer stayed just now; null for a sweep, which knows only how long it waits. */
  private async check(t: TransferView, lastError: string, cause: PendingCause | null): Promise<void> {
    const { config, alerts } = this.deps;
    const now = (this.deps.now ?? Date.now)();
    const base = { reqId: t.reqId, userId: t.userId };
    const details = { state: t.state, retry_count: t.retryCount, attempts: t.attempts, last_error: lastError };
    const wait = unknownWaitOf(t);
    if (wait !== null && agedAtLeast(t.updatedAt, config.targetPendingAlertMs, now)) {
      const target = t.state === 'TARGET_PENDING';
      await alerts.raise({
        ...base,
        kind: target ? 'TARGET_PENDING_TOO_LONG' : 'SOURCE_PENDING_TOO_LONG',
        message: target
          ? `transfer stuck in TARGET_PENDING (${wait.direction}): funds in flight, ${wait.waitsOn} retrying`
          : `transfer stuck in SOURCE_PENDING (${wait.direction}): ${wait.waitsOn}'s outcome is unknown, retrying`,
        details: { ...details, direction: wait.direction, waits_on: wait.waitsOn },
      });
    }
    if (t.state === 'COMPENSATING' && t.attempts >= config.refundFailuresAlertMax) {
      await alerts.raise({
        ...base,
        kind: 'REFUND_FAILING',
        message: `refund failed ${t.attempts} times: funds wait in COMPENSATING`,
        details,
      });
    }
    if (isStuck(t, config, now)) {
      await alerts.raise({ ...base, kind: 'TRANSFER_STUCK', message: 'transfer needs an operator; retries continue', details });
    }
    if (cause?.kind === 'idempotency_conflict') {
      await alerts.raise({
        ...base,
        kind: 'IDEMPOTENCY_CONFLICT',
        message: 'an adapter holds this operation with other parameters',
        details,
      });
    }
  }
}
