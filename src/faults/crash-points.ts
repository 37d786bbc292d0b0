// Named crash points for recovery tests (CRA-001..006): when CRASH_POINT names one, the process
// kills itself with SIGKILL the first time execution reaches it, exactly as a power cut would.
// One point kills only the thread that reaches it, with an uncaught exception thrown from a
// timer, as a bug would. With CRASH_POINT unset (every real deployment) each call is one
// comparison and does nothing.

import { writeSync } from 'node:fs';

export const CRASH_POINTS = [
  /** CRA-001: the transfer is INIT in PostgreSQL; SOURCE_PENDING not yet written. */
  'init_before_source_pending',
  /** CRA-002: SOURCE_PENDING is committed; the source adapter not yet called. */
  'source_pending_before_call',
  /** CRA-003: the source adapter applied the withdraw; SOURCE_DONE not yet written. */
  'source_pending_after_call',
  /** CRA-004: SOURCE_DONE is committed; TARGET_PENDING not yet written. */
  'source_done_before_target_pending',
  /** CRA-005: TARGET_PENDING is committed; the target adapter not yet called. */
  'target_pending_before_call',
  /** CRA-005: the target adapter applied the deposit; COMMITTED not yet written. */
  'target_pending_after_call',
  /** CRA-006: COMPENSATING is committed; the refund not yet called. */
  'compensating_before_call',
  /** CRA-006: the refund was applied; ROLLED_BACK not yet written. */
  'compensating_after_call',
  // The boundaries of the two-commit happy path.
  /** FUNDING → SPOT: the create-and-debit transaction committed (TARGET_PENDING); UBSCore not yet called. */
  'created_debited_before_target_call',
  /** Either direction: UBSCore answered the credit; COMMITTED not yet written. */
  'target_credited_before_committed',
  /** SPOT → FUNDING: UBSCore's debit is durable; the credit transaction not yet run. */
  'source_debited_before_credit_txn',
  /** FUNDING → SPOT, after the create-and-debit commit: the coordinator thread dies of an uncaught exception (the process lives). */
  'coordinator_thread_uncaught',
  /** UBSCore's processed-set retention: the first step that deleted entries is durable; the rest of the pass not yet run. */
  'ubscore_prune_after_step',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

export function isCrashPoint(value: string): value is CrashPoint {
  return (CRASH_POINTS as readonly string[]).includes(value);
}

/** Returns the function the driver calls at each point; a no-op unless `armed` names one. */
export function crashHook(armed: CrashPoint | null): (point: CrashPoint) => void {
  if (armed === null) return () => undefined;
  let thrown = false;
  return (point) => {
    if (point !== armed) return;
    if (point === 'coordinator_thread_uncaught') {
      if (thrown) return;
      thrown = true;
      setTimeout(() => {
        throw new Error('injected uncaught exception in a coordinator thread (CRASH_POINT=coordinator_thread_uncaught)');
      }, 0);
      return;
    }
    // Written synchronously to fd 2: in a worker thread process.stderr is forwarded to the main
    // thread later, and the kill would win that race.
    writeSync(2, `${JSON.stringify({ level: 'critical', msg: 'crash point reached: killing the process', crash_point: point })}\n`);
    process.kill(process.pid, 'SIGKILL');
  };
}
