// The processed set's retention (src/ubscore/processed/): how long an idempotency key is kept
// at least, and how often a pass runs. Safe for any value in range: the retention only bounds
// how long a key is kept beyond what the rule (src/ubscore/processed/retention-plan.ts) requires.

import {
  PROCESSED_PRUNE_INTERVAL_S_DEFAULT,
  PROCESSED_PRUNE_INTERVAL_S_MAX,
  PROCESSED_PRUNE_INTERVAL_S_MIN,
  PROCESSED_RETENTION_S_DEFAULT,
  PROCESSED_RETENTION_S_MAX,
  PROCESSED_RETENTION_S_MIN,
} from '../limits.js';
import { type Env, intVar } from './vars.js';

export type RetentionConfig = {
  /** PROCESSED_RETENTION_S: a processed-set entry is kept at least this long after it was applied. */
  readonly retentionS: number;
  /** PROCESSED_PRUNE_INTERVAL_S: how often a pass runs (and the owner ticks the seq clock). */
  readonly pruneIntervalS: number;
};

export function retentionConfig(env: Env): RetentionConfig {
  return {
    retentionS: intVar(env, 'PROCESSED_RETENTION_S', PROCESSED_RETENTION_S_DEFAULT, PROCESSED_RETENTION_S_MIN, PROCESSED_RETENTION_S_MAX),
    pruneIntervalS: intVar(
      env,
      'PROCESSED_PRUNE_INTERVAL_S',
      PROCESSED_PRUNE_INTERVAL_S_DEFAULT,
      PROCESSED_PRUNE_INTERVAL_S_MIN,
      PROCESSED_PRUNE_INTERVAL_S_MAX,
    ),
  };
}
