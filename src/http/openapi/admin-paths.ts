// The paths of the admin routes (/admin/v1): external movements, assets and account statuses
// (tag admin), what an operator reads and does (tag operator), the audit trail (tag audit).

import type { ErrorCode } from '../../domain/errors.js';
import * as ax from './admin-examples.js';
import * as ex from './examples.js';
import { json, operation } from './operation.js';
import { alertsParams, auditParams, reqIdPath, searchParams, symbolPath, unfinishedParams } from './params.js';

type Json = Record<string, unknown>;

const MOVEMENT_CODES: readonly ErrorCode[] = [
  'INVALID_REQUEST',
  'INVALID_USER',
  'INVALID_ACCOUNT_TYPE',
  'INVALID_ASSET',
  'INVALID_AMOUNT',
  'PRECISION_OVERFLOW',
  'OVERFLOW',
  'DUPLICATE_REQUEST',
  'SERVICE_HALTED',
];
const DEBIT_CODES: readonly ErrorCode[] = ['INSUFFICIENT_BALANCE', 'ACCOUNT_FROZEN', 'ACCOUNT_DISABLED', 'SOURCE_ACCOUNT_NOT_FOUND'];

function movement(id: string, summary: string, codes: readonly ErrorCode[]): Json {
  return operation({
    id,
    tag: 'admin',
    summary,
    auth: 'admin',
    body: { schema: 'MovementRequest', example: ex.movementRequest },
    ok: {
      '200': json('MovementDone', 'Done (duplicate: true for a repeated ref, which changed nothing)', ex.movementDone),
      '202': json('MovementPending', 'Pending at UBSCore; repeat with the same ref', ex.movementPending),
    },
    codes,
  });
}

export const adminPaths: Record<string, Json> = {
  '/admin/v1/deposit': { post: movement('deposit', 'Credit an account from outside, idempotent by ref', MOVEMENT_CODES) },
  '/admin/v1/withdraw': {
    post: movement('withdraw', 'Debit an account to outside (the trading side spending funds), idempotent by ref', [
      ...MOVEMENT_CODES,
      ...DEBIT_CODES,
    ]),
  },
  '/admin/v1/assets/{symbol}': {
    put: operation({
      id: 'putAsset',
      tag: 'admin',
      summary: 'Create or change an asset (its precision never changes)',
      auth: 'admin',
      parameters: [symbolPath],
      body: { schema: 'AssetRequest', example: ex.assetRequest },
      ok: { '200': json('Asset', 'Changed', ex.asset), '201': json('Asset', 'Created', ex.asset) },
      codes: ['INVALID_REQUEST', 'INVALID_ASSET', 'INVALID_AMOUNT', 'PRECISION_OVERFLOW', 'OVERFLOW'],
    }),
  },
  '/admin/v1/account_status': {
    post: operation({
      id: 'setAccountStatus',
      tag: 'admin',
      summary: 'Set a FUNDING or SPOT account status',
      auth: 'admin',
      body: { schema: 'AccountStatusRequest', example: ex.accountStatus },
      ok: { '200': json('AccountStatus', 'Set', ex.accountStatus) },
      codes: ['INVALID_REQUEST', 'INVALID_USER', 'INVALID_ACCOUNT_TYPE', 'INVALID_ASSET', 'NOT_FOUND', 'SERVICE_UNAVAILABLE'],
    }),
  },
  '/admin/v1/alerts': {
    get: operation({
      id: 'listAlerts',
      tag: 'operator',
      summary: 'Alerts, newest first, and the state of each alert condition',
      auth: 'admin',
      parameters: alertsParams,
      ok: { '200': json('Alerts', 'Alerts and conditions', ax.alerts) },
    }),
  },
  '/admin/v1/transfers': {
    get: operation({
      id: 'listUnfinishedTransfers',
      tag: 'operator',
      summary: 'Unfinished transfers, or with stuck=true those needing an operator, with their history',
      auth: 'admin',
      parameters: unfinishedParams,
      ok: { '200': json('AdminTransfers', 'Transfers', ax.adminTransfers) },
    }),
  },
  '/admin/v1/transfers/{req_id}/retry': {
    post: operation({
      id: 'retryTransfer',
      tag: 'operator',
      summary: 'Drive one transfer now through the same step(); never sets a state',
      auth: 'admin',
      parameters: [reqIdPath],
      ok: { '200': json('RetryAnswer', 'Its state and history', ax.retry) },
      codes: ['NOT_FOUND'],
    }),
  },
  '/admin/v1/transfers/search': {
    get: operation({
      id: 'searchTransfers',
      tag: 'operator',
      summary: 'Find transfers by req_id, by user_id and client_order_id, or by user_id (newest first)',
      auth: 'admin',
      parameters: searchParams,
      ok: { '200': json('AdminTransfers', 'Transfers found (none: an empty list)', ax.adminTransfers) },
      codes: ['INVALID_REQUEST', 'INVALID_USER'],
    }),
  },
  '/admin/v1/overview': {
    get: operation({
      id: 'getOverview',
      tag: 'operator',
      summary: "The console's now: pace, unfinished by state, funds in flight, WAL position, halt, last conservation check",
      auth: 'admin',
      ok: { '200': json('Overview', 'The overview', ax.overview) },
    }),
  },
  '/admin/v1/ownership': {
    get: operation({
      id: 'getOwnership',
      tag: 'operator',
      summary: "Who owns the SPOT ledger: this process's role, epoch and lease, ledger_owner, and the SPOT log's reach and size",
      auth: 'admin',
      ok: { '200': json('Ownership', 'The ownership', ax.ownership) },
    }),
  },
  '/admin/v1/invariant': {
    get: operation({
      id: 'checkInvariant',
      tag: 'operator',
      summary: 'Run the fund conservation check now; a difference halts new transfers',
      auth: 'admin',
      ok: { '200': json('InvariantReport', 'The report', ax.invariant) },
    }),
  },
  '/admin/v1/halt': {
    post: operation({
      id: 'haltService',
      tag: 'operator',
      summary: 'Halt: new transfers and external movements refused (SERVICE_HALTED), in-flight transfers go on',
      auth: 'admin',
      body: { schema: 'HaltRequest', example: ax.haltRequest },
      ok: { '200': json('HaltAnswer', 'Halted', ax.halt) },
    }),
  },
  '/admin/v1/resume': {
    post: operation({
      id: 'resumeService',
      tag: 'operator',
      summary: "Lift the halt (a conservation violation or an operator's halt)",
      auth: 'admin',
      ok: { '200': json('ResumeAnswer', 'Resumed', ax.resume) },
    }),
  },
  '/admin/v1/backup': {
    post: operation({
      id: 'takeBackup',
      tag: 'admin',
      summary: "Write both halves of the ledger at one cut into an empty directory on the service's host (UBSCore pauses for the copy)",
      auth: 'admin',
      body: { schema: 'BackupRequest', example: ax.backupRequest },
      codes: ['BACKUP_TARGET_NOT_EMPTY', 'BACKUP_IN_PROGRESS', 'BACKUP_FAILED'],
      ok: { '200': json('BackupAnswer', 'The backup, with its cut', ax.backup) },
    }),
  },
  '/admin/v1/audit': {
    get: operation({
      id: 'listAuditEntries',
      tag: 'audit',
      summary: 'Admin actions, newest first, paged by an opaque cursor',
      auth: 'admin',
      parameters: auditParams,
      ok: { '200': json('AuditPage', 'A page', ax.auditPage) },
    }),
  },
};
