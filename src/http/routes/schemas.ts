// Request bodies as valibot schemas. Each message is the spec's error code, and the keys are
// listed in the check order of spec 001 §1.5.8, so the first issue is the code to answer.

import * as v from 'valibot';
import { isErrorCode, type ErrorCode } from '../../domain/errors.js';
import { ACCOUNT_KINDS, ACCOUNT_STATUSES, FUTURE_ACCOUNT_KINDS, type AccountKind } from '../../domain/types.js';
import { isAssetSymbol, isClientOrderId, KEY, USER_ID_TEXT } from '../../domain/checks.js';
import { BACKUP_DIR_CHARS_MAX, HALT_REASON_CHARS_MAX } from '../../limits.js';

const assetSymbol = v.pipe(
  v.string('INVALID_ASSET'),
  v.check((s: string) => isAssetSymbol(s), 'INVALID_ASSET'),
);

/** A plain decimal string; its value is parsed against the asset's precision afterwards. */
const amountText = v.string('INVALID_AMOUNT');

const clientOrderId = v.pipe(
  v.string('INVALID_REQUEST'),
  v.check((s: string) => isClientOrderId(s), 'INVALID_REQUEST'),
);

/** The code for an account type that is not one of ours: a later one, or none at all. */
function accountKindCode(kind: string): 'UNSUPPORTED_ACCOUNT_TYPE' | 'INVALID_ACCOUNT_TYPE' | null {
  if ((FUTURE_ACCOUNT_KINDS as readonly string[]).includes(kind)) return 'UNSUPPORTED_ACCOUNT_TYPE';
  return (ACCOUNT_KINDS as readonly string[]).includes(kind) ? null : 'INVALID_ACCOUNT_TYPE';
}

/**
 * Spec 001 §1.5.8, steps 3 to 5 in order: the format of every field (from and to are strings,
 * amount a string, client_order_id well formed, nothing unknown), then the account types (from
 * differs from to, each one supported), then the asset symbol. The asset's own checks and the
 * amount's value come after, against the asset.
 */
export const TransferBody = v.pipe(
  v.strictObject(
    {
      user_id: v.optional(v.unknown()),
      from: v.string('INVALID_ACCOUNT_TYPE'),
      to: v.string('INVALID_ACCOUNT_TYPE'),
      asset: v.string('INVALID_ASSET'),
      amount: amountText,
      client_order_id: v.optional(clientOrderId),
    },
    'INVALID_REQUEST',
  ),
  v.check((b) => b.from !== b.to, 'SAME_ACCOUNT'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const code = accountKindCode(dataset.value.from) ?? accountKindCode(dataset.value.to);
    if (code !== null) addIssue({ message: code });
  }),
  v.check((b) => isAssetSymbol(b.asset), 'INVALID_ASSET'),
  v.transform((b) => ({ ...b, from: b.from as AccountKind, to: b.to as AccountKind })),
);
export type TransferBody = v.InferOutput<typeof TransferBody>;

const userIdText = v.pipe(v.string('INVALID_USER'), v.regex(USER_ID_TEXT, 'INVALID_USER'));

export const DepositBody = v.strictObject(
  {
    user_id: userIdText,
    account: v.picklist(ACCOUNT_KINDS, 'INVALID_ACCOUNT_TYPE'),
    asset: assetSymbol,
    amount: amountText,
    ref: v.pipe(v.string('INVALID_REQUEST'), v.regex(KEY, 'INVALID_REQUEST')),
    // MON-003: says the movement corrects the ledger; required while halted, in the audit trail.
    correction_reason: v.optional(
      v.pipe(
        v.string('INVALID_REQUEST'),
        v.minLength(1, 'INVALID_REQUEST'),
        v.maxLength(HALT_REASON_CHARS_MAX, 'INVALID_REQUEST'),
        v.description(
          "Required while the service is halted: the movement is an operator's correction of the ledger, allowed during the halt and recorded with this reason and the operator in the audit trail. Refused with SERVICE_HALTED without it.",
        ),
      ),
    ),
  },
  'INVALID_REQUEST',
);
export type DepositBody = v.InferOutput<typeof DepositBody>;

export const AssetBody = v.strictObject(
  {
    precision: v.pipe(
      v.number('INVALID_REQUEST'),
      v.integer('INVALID_REQUEST'),
      v.minValue(0, 'INVALID_REQUEST'),
      v.maxValue(18, 'INVALID_REQUEST'),
    ),
    min_transfer_amount: amountText,
    max_transfer_amount: amountText,
    status: v.picklist(['ACTIVE', 'SUSPENDED'], 'INVALID_REQUEST'),
    internal_transfer_enabled: v.boolean('INVALID_REQUEST'),
    daily_amount_limit: v.optional(v.nullable(amountText)),
  },
  'INVALID_REQUEST',
);
export type AssetBody = v.InferOutput<typeof AssetBody>;

export const AccountStatusBody = v.strictObject(
  {
    user_id: userIdText,
    account: v.picklist(ACCOUNT_KINDS, 'INVALID_ACCOUNT_TYPE'),
    asset: assetSymbol,
    status: v.picklist(ACCOUNT_STATUSES, 'INVALID_REQUEST'),
  },
  'INVALID_REQUEST',
);
export type AccountStatusBody = v.InferOutput<typeof AccountStatusBody>;

export const BackupBody = v.strictObject(
  { dir: v.pipe(v.string('INVALID_REQUEST'), v.minLength(1, 'INVALID_REQUEST'), v.maxLength(BACKUP_DIR_CHARS_MAX, 'INVALID_REQUEST')) },
  'INVALID_REQUEST',
);

/** The first issue's code, in schema order. */
export function firstCode(issues: readonly { message: string }[]): ErrorCode {
  // Every schema here names its code as the message; one that does not is still a malformed request.
  const message = issues[0]?.message ?? 'INVALID_REQUEST';
  return isErrorCode(message) ? message : 'INVALID_REQUEST';
}

/**
 * A list's page size given as text: a whole number from 1 to `max`, else null. No more digits
 * than `max` has: a long string is refused before it becomes a number.
 */
export function pageLimitOf(text: string, max: number): number | null {
  return text.length <= String(max).length && /^[1-9][0-9]*$/.test(text) && Number(text) <= max ? Number(text) : null;
}

/** The same rule as a query schema: INVALID_REQUEST for anything pageLimitOf refuses. */
export function pageLimitText(max: number) {
  return v.pipe(
    v.string('INVALID_REQUEST'),
    v.check((s) => pageLimitOf(s, max) !== null, 'INVALID_REQUEST'),
  );
}

/** A keyset cursor as query text: one this list handed out (`decode` gives its id), else INVALID_REQUEST. */
export function cursorText(decode: (cursor: string) => bigint | null) {
  return v.pipe(
    v.string('INVALID_REQUEST'),
    v.check((s) => decode(s) !== null, 'INVALID_REQUEST'),
  );
}
