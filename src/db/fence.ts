// The owner fence's refusal (migrations 0010 and 0013): every write of the service's connections,
// to any table but ledger_owner, is refused with SQLSTATE LF001 once the connection's owner epoch
// was superseded (or when it is a standby's). Never a business refusal: this process no longer
// owns the ledger, and whatever it was doing is an unknown outcome for the owner that took over.

/** The SQLSTATE the fence raises. */
export const FENCED_SQLSTATE = 'LF001';

/** Whether `error` is the fence's refusal: this connection's owner epoch was superseded. */
export function isFenced(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === FENCED_SQLSTATE;
}
