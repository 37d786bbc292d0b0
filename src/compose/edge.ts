import { AssetCache } from '../db/assets.js';
import { readHalt, type HaltState } from '../db/halt-state.js';
import type { Sql } from '../db/sql.js';
import { TransferStore } from '../db/transfers.js';
import { TransferWrites } from '../db/transfer-writes.js';
import { AdminService } from '../services/admin.js';
import { BalanceReader } from '../services/balances.js';
import type { AppDeps } from '../http/deps.js';
import { Admission } from '../services/admission.js';
import { collectMetrics } from '../services/metrics-collect.js';
import { collectSnapshot } from '../services/unfinished.js';
import { ubscoreScrape } from '../metrics/ubscore-scrape.js';
import { Pulse } from '../metrics/pulse.js';
import { ALERT_KINDS } from '../alerts/alerts.js';
import { AuditLog } from '../audit/audit-log.js';
import { BackupTaker } from '../backup/take.js';
import { READYZ_PG_PROBE_TIMEOUT_MS, UBS_CONTROL_MS_MAX } from '../limits.js';
import { within } from '../within.js';
import { readLedgerStatus, type ProcessOwnership } from '../ownership/status.js';
import { fatal, type Built, type MainParts, type Start, type Stores } from './parts.js';

/** What the HTTP edge is given (src/http/deps.ts). */
export function appDeps(start: Start, built: Built): AppDeps {
  const { config, log } = start;
  const { stores, pools, main } = built;
  const { sql, halt } = stores;
  const assets = new AssetCache(sql);
  const batch = { batchMax: config.pgBatchMax };
  const transfers = new TransferStore(sql, new TransferWrites(sql, batch), batch);
  const admission = new Admission({ halt, shards: pools, transfers, log });
  const ubsStats = () => within(built.ubs.control.stats(), UBS_CONTROL_MS_MAX, null);
  const backups = new BackupTaker({ databaseUrl: stores.databaseUrl, control: built.ubs.control, log });
  return {
    tokens: built.tokens,
    bodyBytesMax: config.bodyBytesMax,
    rateLimitPerSecond: config.rateLimitPerSecond,
    abnormalTransfersPerMinute: config.abnormalTransfersPerMinute,
    assets,
    admin: new AdminService({
      sql,
      ubs: main.ubsSend,
      ubsTimeoutMs: config.adapterTimeoutMs,
      onAssetChange: () => {
        assets.invalidate();
        return pools.assetsChanged();
      },
    }),
    transfers,
    // Every new transfer is admitted here; each shard checks the halt again on its own.
    submit: (t) => admission.submit(t),
    drive: (userId, reqId) => pools.drive(userId, reqId),
    alerts: main.alerts,
    monitor: main.monitor,
    audit: new AuditLog(sql),
    halt,
    invariant: main.invariant,
    registry: main.registry,
    metrics: renderMetrics(built, ownershipOf(start, stores)),
    ownership: async () => ({ process: ownershipOf(start, stores)(), ledger: await readLedgerStatus(sql) }),
    pulse: new Pulse(),
    snapshot: () => collectSnapshot({ sql, ubs: ubsStats }),
    probe: readinessProbe(sql, main),
    stuckRetriesMax: config.stuckRetriesMax,
    stuckAgeMs: config.stuckAgeMs,
    targetPendingAlertMs: config.targetPendingAlertMs,
    external: main.external,
    balances: new BalanceReader({ sql, ubs: main.ubsSend, ubsTimeoutMs: config.adapterTimeoutMs }),
    log,
    ownerHeld: () => stores.owner.held(),
    leaseState: () => stores.owner.leaseState(),
    ownerEpoch: () => ownershipOf(start, stores)().epoch,
    onLeaseLapsed: (reason) => fatal(start, reason),
    drain: built.drain,
    backup: (dir) => backups.take(dir),
  };
}

/**
 * The serving process's side of the ownership: a primary, holding its epoch and lease; promoted
 * when it was started as a standby (ROLE=standby) and took over. It follows no log, so no lag.
 */
function ownershipOf(start: Start, stores: Stores): () => ProcessOwnership {
  return () => {
    const { epoch } = stores.owner.identity();
    return {
      role: 'primary',
      promoted: start.config.role === 'standby',
      epoch: epoch === 'standby' ? null : epoch,
      leaseState: stores.owner.leaseState(),
      leaseLeftMs: stores.owner.leaseLeftMs(),
      lag: { records: 0, ms: 0 },
    };
  };
}

/** GET /metrics: the main thread's registry, PostgreSQL's measures, every shard's and UBSCore's. */
function renderMetrics(built: Built, ownership: () => ProcessOwnership): AppDeps['metrics'] {
  const { stores, pools, main } = built;
  const ubsMetrics = ubscoreScrape(() => within(built.ubs.control.metrics(), UBS_CONTROL_MS_MAX, null));
  return () => {
    // The reason is in /readyz and the log, never a label: a label per reason is a new series.
    main.registry.set(
      'transfer_service_halted',
      'Whether the service is halted (1): new transfers and external movements refused until an operator resumes',
      {},
      stores.halt.current === null ? 0 : 1,
    );
    return collectMetrics({
      main: main.registry,
      sql: stores.sql,
      shards: () => pools.metrics(),
      ubs: ubsMetrics,
      alertKinds: Object.keys(ALERT_KINDS),
      ownership,
    });
  };
}

/**
 * /readyz's probe: PostgreSQL answers (reading the stored halt, the one every shard obeys whoever
 * wrote it: another process of this owner, or an operator's SQL), UBSCore answers, and its WAL
 * takes writes.
 */
function readinessProbe(sql: Sql, main: MainParts): AppDeps['probe'] {
  return async () => {
    const answer = await main.ubs.send({ kind: 'query_op', op: 'DEPOSIT', key: 'readyz' }, UBS_CONTROL_MS_MAX);
    const wal = main.walHealth.current;
    // Bounded: /readyz must answer 503 at once while the server is away, not wait for it.
    const stored = await within(
      readHalt(sql).then(
        (stored) => ({ postgres: true, halt: stored.state }),
        () => NO_ANSWER,
      ),
      READYZ_PG_PROBE_TIMEOUT_MS,
      NO_ANSWER,
    );
    return {
      postgres: stored.postgres,
      storedHalt: stored.halt,
      ubscore: answer !== null && answer.kind !== 'unavailable',
      walWritable: wal.writable,
      walReason: wal.writable ? null : wal.reason,
    };
  };
}

const NO_ANSWER: { readonly postgres: boolean; readonly halt: HaltState } = { postgres: false, halt: null };
