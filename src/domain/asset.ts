// An asset as the transfer's rules see it, and those rules (spec 001 §1.5.3, §1.5.4): pure, so
// the HTTP edge, the coordinator and its precheck all hold a transfer to the same ones.

export type Asset = {
  readonly symbol: string;
  readonly precision: number;
  readonly minTransferUnits: bigint;
  readonly maxTransferUnits: bigint;
  readonly status: 'ACTIVE' | 'SUSPENDED';
  readonly internalTransferEnabled: boolean;
  readonly dailyAmountLimitUnits: bigint | null;
};

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
