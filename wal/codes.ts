// The code bytes the WAL record format (wal/codec.ts) and the snapshot format (wal/snapshot.ts)
// write for names: a record's kind, a keyed operation, an account status, an outcome and a reject
// code. Codes are fixed numbers, never positions in an array, so reordering a list elsewhere
// cannot change the meaning of bytes already on disk. New codes may only be appended.

import type { AccountStatus } from '../src/domain/types.js';
import type { Outcome, WalRecord } from '../src/domain/spot-records.js';
import type { UbsOpName, UbsRejectCode } from '../src/domain/spot-commands.js';

export const KIND_CODES = { op: 1, status: 2 } as const satisfies Record<WalRecord['kind'], number>;
export const OP_CODES = {
  WITHDRAW: 1,
  DEPOSIT: 2,
  REFUND: 3,
  EXTERNAL_DEPOSIT: 4,
  EXTERNAL_WITHDRAW: 5,
} as const satisfies Record<UbsOpName, number>;
/** Account status codes, shared with the snapshot format (wal/snapshot.ts). */
export const STATUS_CODES = { ACTIVE: 1, FROZEN: 2, DISABLED: 3 } as const satisfies Record<AccountStatus, number>;
export const OUTCOME_CODES = { applied: 1, rejected: 2 } as const satisfies Record<Outcome['kind'], number>;
export const REJECT_CODES = {
  INSUFFICIENT_BALANCE: 1,
  ACCOUNT_FROZEN: 2,
  ACCOUNT_DISABLED: 3,
  ASSET_SUSPENDED: 4,
  TRANSFER_NOT_ALLOWED: 5,
  SOURCE_ACCOUNT_NOT_FOUND: 6,
  TARGET_ACCOUNT_NOT_FOUND: 7,
  REFUND_WITHOUT_WITHDRAW: 8,
  OVERFLOW: 9,
} as const satisfies Record<UbsRejectCode, number>;

function invert<K extends string>(table: Readonly<Record<K, number>>): ReadonlyMap<number, K> {
  const inverse = new Map<number, K>();
  for (const name of Object.keys(table) as K[]) inverse.set(table[name], name);
  if (inverse.size !== Object.keys(table).length) throw new Error('codes: duplicate code in a table');
  return inverse;
}

export const OP_BY_CODE = invert<UbsOpName>(OP_CODES);
export const STATUS_BY_CODE = invert<AccountStatus>(STATUS_CODES);
export const REJECT_BY_CODE = invert<UbsRejectCode>(REJECT_CODES);
