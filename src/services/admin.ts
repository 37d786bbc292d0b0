// Operator changes: assets (PostgreSQL) and account statuses (FUNDING in PostgreSQL, SPOT in
// UBSCore through its WAL). Each answers a value.

import type { UbsSend } from '../ubscore/control.js';
import type { Asset } from '../domain/asset.js';
import type { Sql } from '../db/sql.js';
import type { AccountKind, AccountStatus, ValidationCode } from '../domain/types.js';

/** An asset as an operator sets it: the same shape the asset cache reads. */
type AssetSpec = Asset;

type AdminOutcome =
  | { readonly kind: 'ok'; readonly created?: boolean }
  | {
      readonly kind: 'refused';
      readonly code: ValidationCode | 'NOT_FOUND' | 'SERVICE_UNAVAILABLE' | 'SYSTEM_ERROR';
      readonly message?: string;
    };

export class AdminService {
  constructor(
    private readonly deps: {
      readonly sql: Sql;
      readonly ubs: UbsSend;
      readonly ubsTimeoutMs: number;
      readonly onAssetChange: () => Promise<void>;
    },
  ) {}

  /** Creates or replaces an asset. Its precision never changes: stored amounts are in its units. */
  async putAsset(a: AssetSpec): Promise<AdminOutcome> {
    const outcome = await this.deps.sql.begin(async (tx): Promise<AdminOutcome> => {
      const rows = await tx<{ precision: number }[]>`SELECT precision FROM assets WHERE symbol = ${a.symbol} FOR UPDATE`;
      const existing = rows[0];
      if (existing !== undefined && existing.precision !== a.precision) {
        return { kind: 'refused', code: 'INVALID_REQUEST', message: 'the precision of an existing asset cannot change' };
      }
      await tx`
        INSERT INTO assets (symbol, precision, min_transfer_units, max_transfer_units, status, internal_transfer_enabled, daily_amount_limit_units)
        VALUES (${a.symbol}, ${a.precision}, ${a.minTransferUnits}, ${a.maxTransferUnits}, ${a.status}, ${a.internalTransferEnabled}, ${a.dailyAmountLimitUnits})
        ON CONFLICT (symbol) DO UPDATE SET
          min_transfer_units = EXCLUDED.min_transfer_units, max_transfer_units = EXCLUDED.max_transfer_units,
          status = EXCLUDED.status, internal_transfer_enabled = EXCLUDED.internal_transfer_enabled,
          daily_amount_limit_units = EXCLUDED.daily_amount_limit_units, updated_at = now()`;
      return { kind: 'ok', created: existing === undefined };
    });
    await this.deps.onAssetChange();
    return outcome;
  }

  async setAccountStatus(userId: bigint, account: AccountKind, asset: string, status: AccountStatus): Promise<AdminOutcome> {
    if (account === 'FUNDING') {
      const rows = await this.deps.sql`
        UPDATE funding_balances SET status = ${status}, updated_at = now() WHERE user_id = ${userId} AND asset = ${asset} RETURNING 1`;
      return rows.length === 1 ? { kind: 'ok' } : { kind: 'refused', code: 'NOT_FOUND', message: 'no such FUNDING account' };
    }
    const result = await this.deps.ubs({ kind: 'set_status', userId, asset, status }, this.deps.ubsTimeoutMs);
    if (result === null) return { kind: 'refused', code: 'SERVICE_UNAVAILABLE', message: 'UBSCore did not answer; repeat the request' };
    if (result.kind === 'unavailable')
      return { kind: 'refused', code: 'SERVICE_UNAVAILABLE', message: `UBSCore is unavailable (${result.reason}); repeat the request` };
    if (result.kind === 'status_set') return { kind: 'ok' };
    return { kind: 'refused', code: result.kind === 'invalid' ? result.code : 'SYSTEM_ERROR' };
  }
}
