// The layers below the HTTP edge, assembled on a fresh database and a fresh UBSCore, so a test
// can call the coordinator, an adapter or UBSCore directly, bypassing the layer above.

import { loadConfig } from '../../src/config/config.js';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startUbsCore, UbsClient } from '../../actors/ubscore/client.js';
import { composeShard, type ShardParts, type TestHooks } from '../../src/coordinator/compose.js';
import type { CoordinatorConfig } from '../../src/coordinator/types.js';
import { migrate, seedDemoAssets } from '../../src/db/schema.js';
import { openSql, type Sql } from '../../src/db/sql.js';
import { createLogger } from '../../src/log.js';
import { createTestDatabase } from './database.js';

export type Layers = ShardParts & {
  readonly sql: Sql;
  readonly ubs: UbsClient;
  /** The first LOGGED_MAX lines the layers logged (error and critical), for tests that look for one. */
  readonly logged: readonly string[];
  readonly stop: () => Promise<void>;
};

const LOGGED_MAX = 10_000;

export const LAYER_CONFIG: CoordinatorConfig = {
  shard: 0,
  shards: 1,
  databaseUrl: '',
  // The layers open their own pool, unfenced; epoch 0 is a fresh database's.
  owner: { tag: 'test-layers', epoch: 0 },
  pgPoolMax: 4,
  pgTimeouts: loadConfig({}).pgTimeouts,
  adapterTimeoutMs: 5_000,
  happyPathDeadlineMs: 2_000,
  retryBaseMs: 50,
  retryCapMs: 1_000,
  scanIntervalMs: 60_000,
  staleThresholdMs: 60_000,
  scanBatchMax: 100,
  scanConcurrencyMax: 8,
  pgBatchMax: 100,
  targetPendingAlertMs: 60_000,
  refundFailuresAlertMax: 3,
  stuckRetriesMax: 10,
  stuckAgeMs: 300_000,
  alertWebhookUrl: null,
  retryTimersMax: 1_000,
  dailyTransferLimit: 0,
  dailyAmountLimits: false,
  crashPoint: null,
};

export async function startLayers(config: Partial<CoordinatorConfig> = {}, hooks: TestHooks = {}): Promise<Layers> {
  const db = await createTestDatabase();
  const sql = openSql(db.url, { max: 4, application: 'test-layers', timeouts: { ...LAYER_CONFIG.pgTimeouts, ...config.pgTimeouts } });
  await migrate(sql);
  await seedDemoAssets(sql);
  const walDir = await fs.mkdtemp(path.join(os.tmpdir(), 'transfer-layers-wal-'));
  const core = await startUbsCore({ walDir, batchMax: 1024 });
  const ubs = new UbsClient(core.connect(), {});
  // Lines are kept for the tests, not written (they provoke error and critical lines on purpose)
  // unless LOG_LEVEL=debug.
  const logged: string[] = [];
  const echo = process.env.LOG_LEVEL === 'debug';
  const log = createLogger({
    level: 'error',
    name: 'test',
    write: (line) => {
      if (logged.length < LOGGED_MAX) logged.push(line);
      if (echo) process.stderr.write(`${line}\n`);
    },
  });
  const parts = composeShard({
    sql,
    ubs: (cmd, ms) => ubs.send(cmd, ms),
    config: { ...LAYER_CONFIG, databaseUrl: db.url, ...config },
    log,
    hooks,
  });
  return {
    ...parts,
    sql,
    ubs,
    logged,
    stop: async () => {
      await parts.shard.stop();
      ubs.close();
      await core.control.close();
      await core.worker.terminate();
      await sql.end({ timeout: 5 });
      await db.drop();
      await fs.rm(walDir, { recursive: true, force: true });
    },
  };
}
