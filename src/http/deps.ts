// What the HTTP edge is given: every service a route calls, typed here, beneath app.ts and the
// route files, so that the routes import their dependencies without importing the app that mounts them.

import type { NewTransfer, SubmitReply } from '../domain/transfer.js';
import type { AssetCache } from '../db/assets.js';
import type { TransferStore } from '../db/transfers.js';
import type { Logger } from '../log.js';
import type { AlertSink } from '../alerts/alerts.js';
import type { AlertMonitor } from '../alerts/monitor.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ServiceSnapshot } from '../services/unfinished.js';
import type { Pulse } from '../metrics/pulse.js';
import type { Registry } from '../metrics/registry.js';
import type { AdminService } from '../services/admin.js';
import type { HaltState, HaltSwitch } from '../services/halt.js';
import type { InvariantService } from '../services/invariant.js';
import type { BalanceReader } from '../services/balances.js';
import type { ExternalMovements } from '../services/external.js';
import type { BackupOutcome } from '../backup/take.js';
import type { LeaseState } from '../ownership/lease.js';
import type { LedgerStatus, ProcessOwnership } from '../ownership/status.js';
import type { Drain } from './drain.js';
import type { TokenVerifier } from './auth/token-verifier.js';

export type AppDeps = {
  /** Verifies every bearer token (HS256 and/or JWKS), shared by the user and admin routes. */
  readonly tokens: TokenVerifier;
  readonly bodyBytesMax: number;
  readonly rateLimitPerSecond: number;
  /** MON-004: transfers per user per minute that raise a WARNING; 0 switches it off. */
  readonly abnormalTransfersPerMinute: number;
  readonly assets: AssetCache;
  readonly transfers: TransferStore;
  readonly submit: (t: NewTransfer) => Promise<SubmitReply>;
  readonly external: ExternalMovements;
  readonly balances: BalanceReader;
  readonly admin: AdminService;
  readonly alerts: AlertSink;
  /** Spec 002's alert table: each condition's state, for GET /admin/v1/alerts. */
  readonly monitor: AlertMonitor;
  /** The admin audit trail: every admin action and its outcome. */
  readonly audit: AuditLog;
  /** Drives one transfer now, on its shard (an operator's retry). */
  readonly drive: (userId: bigint, reqId: string) => Promise<SubmitReply>;
  readonly stuckRetriesMax: number;
  readonly stuckAgeMs: number;
  /** TARGET_PENDING_ALERT_MS: a transfer waiting this long on an unknown outcome is on the stuck list (src/db/stuck.ts). */
  readonly targetPendingAlertMs: number;
  readonly halt: HaltSwitch;
  readonly invariant: InvariantService;
  /** Renders GET /metrics. */
  readonly metrics: () => Promise<string>;
  /** The main thread's registry: HTTP latency by route and status. */
  readonly registry: Registry;
  /** The last minute of transfer requests, recorded at the transfer route (the console's "now"). */
  readonly pulse: Pulse;
  /** Unfinished transfers by state, funds in flight and the WAL position, read now. */
  readonly snapshot: () => Promise<ServiceSnapshot>;
  /** `ubscore`: it answers commands; `walWritable`: its WAL takes writes (`walReason` says why not). */
  readonly probe: () => Promise<{
    readonly postgres: boolean;
    readonly ubscore: boolean;
    readonly walWritable: boolean;
    readonly walReason: string | null;
    /** The halt stored in PostgreSQL, the one the shards obey whoever wrote it (null: none, or PostgreSQL did not answer). */
    readonly storedHalt: HaltState;
  }>;
  readonly log: Logger;
  /** Whether this process holds the database's owner lock (rule 7); without it no new work is taken. */
  readonly ownerHeld: () => boolean;
  /** The owner lease (src/ownership/lease.ts): `lapsed` means no answer may go out. */
  readonly leaseState: () => LeaseState;
  /** The owner epoch this process claimed (null: none), named in every answer's x-owner-epoch. */
  readonly ownerEpoch: () => number | null;
  /** Stops the process: an answer was ready after the lease lapsed unnoticed. */
  readonly onLeaseLapsed: (reason: string) => void;
  /** Turns new requests away once a stop begins, and counts the ones in flight. */
  readonly drain: Drain;
  /** GET /admin/v1/ownership: this process's role, epoch and lease, and what PostgreSQL holds of the owner and the SPOT log. */
  readonly ownership: () => Promise<{ readonly process: ProcessOwnership; readonly ledger: LedgerStatus }>;
  /** Takes a backup of both halves of the ledger at one cut into an empty directory. */
  readonly backup: (dir: string) => Promise<BackupOutcome>;
};
