// What the composition root's steps share: the start (configuration, log, stop steps), the stores
// it owns, the main thread's parts, and the one way a part that cannot go on stops the process.

import type { Config } from '../config/config.js';
import type { Sql } from '../db/sql.js';
import type { Drain } from '../http/drain.js';
import type { Logger } from '../log.js';
import type { UbsSend } from '../ubscore/control.js';
import type { UbsCommandClient, UbsCore } from '../threads.js';
import type { CoordinatorShards } from '../coordinator/shards.js';
import type { TokenVerifier } from '../http/auth/token-verifier.js';
import type { ExternalMovements } from '../services/external.js';
import type { Registry } from '../metrics/registry.js';
import type { HaltSwitch } from '../services/halt.js';
import type { InvariantService } from '../services/invariant.js';
import type { PgOwner } from '../ownership/pg-owner.js';
import type { AlertSink } from '../alerts/alerts.js';
import type { AlertMonitor } from '../alerts/monitor.js';
import type { WalHealth } from '../services/wal-health.js';

/** What every start step shares: the configuration, the log, the stop steps so far, and whether a stop began. */
export type Start = {
  readonly config: Config;
  readonly log: Logger;
  readonly stack: (() => Promise<void>)[];
  /** The synchronous steps of Service.stopNow. */
  readonly nowStack: (() => void)[];
  readonly stopping: () => boolean;
};

/** The stores this process owns once started: the database (its URL and pool), the owner lock, the halt. */
export type Stores = {
  readonly databaseUrl: string;
  readonly sql: Sql;
  readonly owner: PgOwner;
  readonly halt: HaltSwitch;
};

/** The main thread's own parts, built on the stores, UBSCore and the shards. */
export type MainParts = {
  readonly ubs: UbsCommandClient;
  readonly ubsSend: UbsSend;
  readonly alerts: AlertSink;
  readonly walHealth: WalHealth;
  readonly external: ExternalMovements;
  readonly registry: Registry;
  readonly invariant: InvariantService;
  readonly monitor: AlertMonitor;
};

export type Built = {
  readonly tokens: TokenVerifier;
  readonly stores: Stores;
  readonly ubs: UbsCore;
  readonly pools: CoordinatorShards;
  readonly main: MainParts;
  readonly drain: Drain;
};

/**
 * A part that cannot go on safely stops the process; restart recovers from the stores. The
 * synchronous stop steps run first (the embedded PostgreSQL is stopped at once: it runs in a
 * session of its own, and nothing else would stop it).
 */
export function fatal(start: Pick<Start, 'log' | 'nowStack'>, message: string): never {
  start.log.critical('fatal: stopping the process', { reason: message });
  stopNow(start.nowStack);
  process.exit(70);
}

/** Runs the synchronous stop steps (Service.stopNow, and the fatal stop before its exit). */
export function stopNow(nowStack: readonly (() => void)[]): void {
  for (const step of nowStack) step();
}
