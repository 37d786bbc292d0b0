// Assets as PostgreSQL holds them, read through a short-lived cache so that each request does
// not cost a round trip. An operator's change is seen within ASSET_CACHE_TTL_MS.

import type { Sql } from './sql.js';
import { ASSET_CACHE_TTL_MS } from '../limits.js';

export type Asset = {
  readonly symbol: string;
  readonly precision: number;
  readonly minTransferUnits: bigint;
  readonly maxTransferUnits: bigint;
  readonly status: 'ACTIVE' | 'SUSPENDED';
  readonly internalTransferEnabled: boolean;
  readonly dailyAmountLimitUnits: bigint | null;
};

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

/** Whether the asset allows internal transfers now (spec 001 §1.5.4): business rejections. */
export function checkAssetOpen(asset: Asset): 'ASSET_SUSPENDED' | 'TRANSFER_NOT_ALLOWED' | null {
  if (asset.status !== 'ACTIVE') return 'ASSET_SUSPENDED';
  if (!asset.internalTransferEnabled) return 'TRANSFER_NOT_ALLOWED';
  return null;
}

/** The amount range of spec 001 §1.5.3: refused before any state exists. */
export function checkAmountRange(asset: Asset, units: bigint): 'AMOUNT_TOO_SMALL' | 'AMOUNT_TOO_LARGE' | null {
  if (units < asset.minTransferUnits) return 'AMOUNT_TOO_SMALL';
  if (units > asset.maxTransferUnits) return 'AMOUNT_TOO_LARGE';
  return null;
}
