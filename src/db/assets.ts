// Assets as PostgreSQL holds them, read through a short-lived cache so that each request does
// not cost a round trip. An operator's change is seen within ASSET_CACHE_TTL_MS. What an asset is,
// and the rules a transfer is held to by it, are the domain's (src/domain/asset.ts).

import type { Asset } from '../domain/asset.js';
import type { Sql } from './sql.js';
import { ASSET_CACHE_TTL_MS } from '../limits.js';

type Row = {
  symbol: string;
  precision: number;
  min_transfer_units: bigint;
  max_transfer_units: bigint;
  status: 'ACTIVE' | 'SUSPENDED';
  internal_transfer_enabled: boolean;
  daily_amount_limit_units: bigint | null;
};

export class AssetCache {
  private assets = new Map<string, Asset>();
  private loadedAt = -Infinity;
  private loading: Promise<void> | null = null;

  constructor(
    private readonly sql: Sql,
    private readonly now: () => number = Date.now,
  ) {}

  async get(symbol: string): Promise<Asset | null> {
    if (this.now() - this.loadedAt > ASSET_CACHE_TTL_MS) await this.reload();
    return this.assets.get(symbol) ?? null;
  }

  /** Forgets the cache so the next read sees an operator's change at once. */
  invalidate(): void {
    this.loadedAt = -Infinity;
  }

  private reload(): Promise<void> {
    this.loading ??= this.load().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async load(): Promise<void> {
    const rows = await this.sql<Row[]>`SELECT * FROM assets`;
    this.assets = new Map(rows.map((r) => [r.symbol, toAsset(r)]));
    this.loadedAt = this.now();
  }
}

function toAsset(r: Row): Asset {
  return {
    symbol: r.symbol,
    precision: r.precision,
    minTransferUnits: r.min_transfer_units,
    maxTransferUnits: r.max_transfer_units,
    status: r.status,
    internalTransferEnabled: r.internal_transfer_enabled,
    dailyAmountLimitUnits: r.daily_amount_limit_units,
  };
}
