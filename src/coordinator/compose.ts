// Builds one shard's coordinator from its parts: the same wiring for the coordinator thread and
// for tests that drive a shard directly.

import { FundingAdapter } from '../adapters/funding.js';
import { TradingAdapter } from '../adapters/trading.js';
import type { UbsSend } from '../ubscore/control.js';
import { AlertSink } from '../alerts/alerts.js';
import { AssetCache } from '../db/assets.js';
import { checkAssetOpen } from '../domain/asset.js';
import type { Sql } from '../db/sql.js';
import { TransferStore } from '../db/transfers.js';
import { TransferWrites, type TransferWriter } from '../db/transfer-writes.js';
import type { Logger } from '../log.js';
import type { AccountAdapter } from '../adapters/types.js';
import { crashHook, type CrashPoint } from '../faults/crash-points.js';
import { backoffMs } from '../backoff.js';
import { DailyLimits } from './daily-limits.js';
import { HALT_UNKNOWN_MS_MIN, HALT_UNKNOWN_SCAN_INTERVALS } from '../limits.js';
import { TransferDriver } from './driver.js';
import { HaltFlag } from './halt-flag.js';
import { Shard } from './shard.js';
import { Watchdog } from './watchdog.js';
import { Registry } from '../metrics/registry.js';
import { declareCounters } from './transfer-metrics.js';
import type { CoordinatorConfig } from './types.js';

export type ShardParts = {
  readonly shard: Shard;
  /** Where this shard's transfer writes go: its own batched writer, or the one it was given. */
  readonly writes: TransferWriter;
  readonly driver: TransferDriver;
  readonly store: TransferStore;
  readonly assets: AssetCache;
  readonly funding: FundingAdapter;
  readonly trading: TradingAdapter;
  readonly alerts: AlertSink;
  readonly watchdog: Watchdog;
  readonly metrics: Registry;
  readonly limits: DailyLimits;
  readonly halt: HaltFlag;
};

/**
 * Test hooks. Production passes none: `wrapAdapters` lets a test wrap the real adapters to
 * inject faults, and `crash` replaces the crash-point hook.
 */
export type TestHooks = {
  readonly wrapAdapters?: (real: Adapters) => Adapters;
  readonly crash?: (point: CrashPoint) => void;
};

type Adapters = { readonly FUNDING: AccountAdapter; readonly SPOT: AccountAdapter };

/**
 * `writes`: the writer the shards share (actors/coordinator/write-link.ts), for every shard but
 * the one that hosts it; absent, the shard writes through a batched writer of its own.
 */
export function composeShard(opts: {
  sql: Sql;
  ubs: UbsSend;
  config: CoordinatorConfig;
  log: Logger;
  writes?: TransferWriter;
  hooks?: TestHooks;
}): ShardParts {
  const { sql, config, log } = opts;
  // A batch PostgreSQL refused for one row's data is split to find it; say so, it costs statements.
  const batch = {
    batchMax: config.pgBatchMax,
    onIsolate: (rows: number, error: unknown) =>
      log.warn('batched statement refused, splitting it to find the row', { rows, error: String(error) }),
  };
  const writes = opts.writes ?? new TransferWrites(sql, batch);
  const store = new TransferStore(sql, writes, batch);
  const assets = new AssetCache(sql);
  const funding = new FundingAdapter(sql, writes, batch);
  const trading = new TradingAdapter(opts.ubs, config.adapterTimeoutMs);
  const backoff = { baseMs: config.retryBaseMs, capMs: config.retryCapMs };
  const alerts = new AlertSink({ sql, log, webhookUrl: config.alertWebhookUrl });
  // The shard's own series carry its number: per-shard counters stay apart in the main thread's sum.
  const metrics = new Registry({ constLabels: { shard: String(config.shard) }, runtime: { processWide: false } });
  declareCounters(metrics);
  const watchdog = new Watchdog({ alerts, store, config });
  const limits = new DailyLimits(sql, {
    transfersPerDayMax: config.dailyTransferLimit,
    amountLimits: config.dailyAmountLimits,
    amountPerDayUnitsMax: async (symbol) => (await assets.get(symbol))?.dailyAmountLimitUnits ?? null,
  });
  // The shard re-reads the stored halt every scan interval (actors/coordinator/worker.ts); a view a few
  // reads old is no longer trusted, and the shard holds its transfers until a read succeeds.
  const halt = new HaltFlag({ unknownAfterMs: Math.max(HALT_UNKNOWN_SCAN_INTERVALS * config.scanIntervalMs, HALT_UNKNOWN_MS_MIN) });
  const driver = new TransferDriver({
    store,
    adapters: opts.hooks?.wrapAdapters?.({ FUNDING: funding, SPOT: trading }) ?? { FUNDING: funding, SPOT: trading },
    log,
    nextRetryAt: (n) => new Date(Date.now() + backoffMs(backoff, n)),
    crash: opts.hooks?.crash ?? crashHook(config.crashPoint),
    precheck: async (t) => {
      const asset = await assets.get(t.asset);
      if (asset === null) return 'INVALID_ASSET';
      const closed = checkAssetOpen(asset);
      if (closed !== null) return closed;
      if (t.to === 'FUNDING' && !(await funding.accountExists(t.userId, t.asset))) return 'TARGET_ACCOUNT_NOT_FOUND';
      // A transfer recorded outside this shard (a full mailbox) is held to the limits here.
      return limits.admit(t);
    },
    watch: (t, cause) => watchdog.onStay(t, cause),
    metrics,
    gate: halt,
  });
  const shard = new Shard({
    driver,
    halt,
    readHalt: () => halt.refresh(sql),
    store,
    assets,
    config,
    log,
    watchdog,
    limits,
  });
  return { shard, writes, driver, store, assets, funding, trading, alerts, watchdog, metrics, limits, halt };
}
