// Which part this process plays: the owner of the SPOT ledger, or a standby that
// follows the owner's log in PostgreSQL and takes over when the owner's lease ends; and whether
// UBSCore's log goes to PostgreSQL at all.

import { STANDBY_POLL_MS_DEFAULT, STANDBY_POLL_MS_MAX, STANDBY_POLL_MS_MIN } from '../limits.js';
import { ConfigError, type Env, enumVar, intVar, type NodeEnv } from './vars.js';

export type RoleVars = {
  /** `standby`: serve nothing, follow spot_log, take over once the ownership is free. */
  readonly role: 'primary' | 'standby';
  /** How often a standby reads spot_log for new blocks. */
  readonly standbyPollMs: number;
  /**
   * `postgres`: every UBSCore batch is also committed to PostgreSQL before it is answered (rule 8).
   * `off` keeps SPOT on one disk only: it exists for the bench's comparison and is refused in
   * production.
   */
  readonly spotLog: 'postgres' | 'off';
};

/** ROLE and STANDBY_POLL_MS; a standby follows the owner's log in PostgreSQL, so it needs DATABASE_URL. */
export function roleVars(env: Env, databaseUrl: string | null, nodeEnv: NodeEnv): RoleVars {
  const role = enumVar(env, 'ROLE', ['primary', 'standby'] as const, 'primary');
  if (role === 'standby' && databaseUrl === null)
    throw new ConfigError('ROLE=standby needs DATABASE_URL: a standby follows the owner through a PostgreSQL both reach');
  const spotLog = enumVar(env, 'SPOT_LOG', ['postgres', 'off'] as const, 'postgres');
  if (spotLog === 'off' && nodeEnv === 'production') throw new ConfigError('SPOT_LOG=off is refused with NODE_ENV=production');
  if (spotLog === 'off' && role === 'standby') throw new ConfigError('ROLE=standby needs SPOT_LOG=postgres: it follows that log');
  return {
    role,
    spotLog,
    standbyPollMs: intVar(env, 'STANDBY_POLL_MS', STANDBY_POLL_MS_DEFAULT, STANDBY_POLL_MS_MIN, STANDBY_POLL_MS_MAX),
  };
}
