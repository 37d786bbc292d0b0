// Capped exponential backoff with jitter (spec 002): base × 2^n, never above the cap, and
// spread over the upper half of the interval so retries of many transfers do not align.

import { RETRY_BACKOFF_EXPONENT_MAX } from './limits.js';

type Backoff = { readonly baseMs: number; readonly capMs: number };

export function backoffMs(policy: Backoff, retryCount: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(retryCount, 0), RETRY_BACKOFF_EXPONENT_MAX);
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
