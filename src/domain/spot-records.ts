// What the spot ledger decides and records: the WAL record types, a decision and its answer, and
// the operation names and keys. src/ubscore/ledger/core.ts decides; wal/ encodes and replays these.

import { ACCOUNT_STATUSES, TRANSFER_OPS } from './types.js';
import type { AccountStatus } from './types.js';
import type { ExternalOp, UbsOpName, UbsRejectCode, UbsResult } from './spot-commands.js';

export const EXTERNAL_OPS: readonly ExternalOp[] = ['EXTERNAL_DEPOSIT', 'EXTERNAL_WITHDRAW'];
export const UBS_OP_NAMES: readonly UbsOpName[] = [...TRANSFER_OPS, ...EXTERNAL_OPS];

export type Outcome = { readonly kind: 'applied' } | { readonly kind: 'rejected'; readonly code: UbsRejectCode };

/** The durable trace of a keyed operation; also the value of its processed-set entry. */
export type OpRecord = {
  readonly kind: 'op';
  readonly seq: number;
  readonly op: UbsOpName;
  readonly key: string;
  readonly userId: bigint;
  readonly asset: string;
  readonly amount: bigint;
  readonly outcome: Outcome;
};

export type StatusRecord = {
  readonly kind: 'status';
  readonly seq: number;
  readonly userId: bigint;
  readonly asset: string;
  readonly status: AccountStatus;
};

/** One WAL entry. `seq` is a JS number: 2^53 records are beyond any lifetime of this log. */
export type WalRecord = OpRecord | StatusRecord;

/** What `applyRecord` reads: a WAL record without its key, which only the processed set needs. */
export type ReplayRecord = Omit<OpRecord, 'key'> | StatusRecord;

/** The processed set as seen by the ledger: durable entries plus the not-yet-durable ones. */
export type ProcessedLookup = (opKey: string) => OpRecord | undefined;

export type Decision = {
  readonly result: UbsResult;
  /** The record to make durable before `result` may be answered; null when nothing is recorded. */
  readonly record: WalRecord | null;
  /** The processed-set key under which `record` must also be stored; null for none. */
  readonly processedKey: string | null;
};

/** Receives one account of a capture or of a snapshot being restored. */
export type AccountVisitor = (userId: bigint, asset: string, available: bigint, status: AccountStatus) => void;

const DEBIT_OPS: ReadonlySet<UbsOpName> = new Set<UbsOpName>(['WITHDRAW', 'EXTERNAL_WITHDRAW']);

export function opKeyOf(op: UbsOpName, key: string): string {
  return `${op}:${key}`;
}

export function isAccountStatus(value: unknown): value is AccountStatus {
  return (ACCOUNT_STATUSES as readonly unknown[]).includes(value);
}

export function isUbsOpName(value: unknown): value is UbsOpName {
  return (UBS_OP_NAMES as readonly unknown[]).includes(value);
}

export function isDebitOp(op: UbsOpName): boolean {
  return DEBIT_OPS.has(op);
}

// Shared answers for the common cases: results are never mutated, and sharing them spares the
// garbage collector one object per command on the hot path.
const APPLIED_NOW: UbsResult = Object.freeze({ kind: 'applied', duplicate: false });
const APPLIED_BEFORE: UbsResult = Object.freeze({ kind: 'applied', duplicate: true });

/** The answer a recorded outcome gives, now or to every repeat. */
export function resultOf(outcome: Outcome, duplicate: boolean): UbsResult {
  if (outcome.kind === 'applied') return duplicate ? APPLIED_BEFORE : APPLIED_NOW;
  return { kind: 'rejected', code: outcome.code, duplicate };
}
