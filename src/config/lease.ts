// The owner's lease, read from LEASE_MS and LEASE_RENEW_MS (src/ownership/lease.ts).

import { ConfigError, type Env, intVar } from './vars.js';
import {
  OWNER_LEASE_MS_DEFAULT,
  OWNER_LEASE_MS_MAX,
  OWNER_LEASE_MS_MIN,
  OWNER_LEASE_RENEW_MS_DEFAULT,
  OWNER_LEASE_RENEW_MS_MIN,
} from '../limits.js';

export type LeaseConfig = {
  /** LEASE_MS: how long past its last renewal the owner of record stays the owner. */
  readonly ms: number;
  /** LEASE_RENEW_MS: how often the owner renews its lease. */
  readonly renewMs: number;
};

export function leaseConfig(env: Env): LeaseConfig {
  const ms = intVar(env, 'LEASE_MS', OWNER_LEASE_MS_DEFAULT, OWNER_LEASE_MS_MIN, OWNER_LEASE_MS_MAX);
  const renewMs = intVar(env, 'LEASE_RENEW_MS', OWNER_LEASE_RENEW_MS_DEFAULT, OWNER_LEASE_RENEW_MS_MIN, OWNER_LEASE_MS_MAX);
  // Under a third: a renewal may fail, the next one find it unanswered, and the owner still notice
  // (and stand by) before its local proof of the lease ends.
  if (renewMs * 3 >= ms) throw new ConfigError(`LEASE_RENEW_MS (${renewMs}) must be under LEASE_MS / 3 (LEASE_MS is ${ms})`);
  return { ms, renewMs };
}
