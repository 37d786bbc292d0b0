// How the spot ledger answers a command before it touches a balance: the input checks of a keyed
// operation in the contract's order, the answers that carry no WAL record, and how a repeat of an
// operation key is told from a conflicting one. Pure, like the ledger (src/ubscore/ledger/core.ts).

import { isAssetSymbol, isOpKey, isUserId } from '../../domain/checks.js';
import { isValidAmountUnits } from '../../domain/money.js';
import type { ValidationCode } from '../../domain/types.js';
import { opKeyOf } from '../../domain/spot-records.js';
import type { Decision, OpRecord, Outcome } from '../../domain/spot-records.js';
import type { UbsOpName, UbsResult } from '../../domain/spot-commands.js';

export type Evaluation = Outcome | { readonly kind: 'invalid'; readonly code: ValidationCode };

export const APPLIED: Outcome = Object.freeze({ kind: 'applied' });
export const COMMAND_KINDS: ReadonlySet<string> = new Set([
  'transfer_op',
  'external_op',
  'set_status',
  'query_op',
  'balances',
  'audit_cut',
  'op_seqs',
]);

export function refuse(code: ValidationCode): Decision {
  return { result: { kind: 'invalid', code }, record: null, processedKey: null };
}

export function answer(result: UbsResult): Decision {
  return { result, record: null, processedKey: null };
}

/** The first failing input check of a keyed operation, in the order the contract lists them. */
export function checkOpInput(
  allowed: readonly UbsOpName[],
  op: unknown,
  key: unknown,
  userId: unknown,
  asset: unknown,
  amount: unknown,
): ValidationCode | null {
  if (!isUserId(userId)) return 'INVALID_USER';
  if (typeof amount !== 'bigint' || amount <= 0n) return 'INVALID_AMOUNT';
  if (!isValidAmountUnits(amount)) return 'OVERFLOW';
  if (!isAssetSymbol(asset)) return 'INVALID_ASSET';
  if (!isOpKey(key)) return 'INVALID_REQUEST';
  if (!(allowed as readonly unknown[]).includes(op)) return 'INVALID_REQUEST';
  return null;
}

export type OpInput = {
  readonly op: UbsOpName;
  readonly key: string;
  readonly userId: bigint;
  readonly asset: string;
  readonly amount: bigint;
};

export function sameParameters(prior: OpRecord, input: OpInput): boolean {
  return prior.userId === input.userId && prior.asset === input.asset && prior.amount === input.amount;
}

export function conflictDetail(prior: OpRecord, input: OpInput): string {
  return (
    `${opKeyOf(input.op, input.key)} was processed for user ${prior.userId} ${prior.asset} ${prior.amount}, ` +
    `now asked for user ${input.userId} ${input.asset} ${input.amount}`
  );
}
