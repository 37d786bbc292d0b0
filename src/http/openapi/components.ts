// components/schemas of the OpenAPI document: every request and answer schema once, converted
// from valibot, each one that appears inside another given as a $ref to its component.

import { toJsonSchemaDefs } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { ASSET_SYMBOL, KEY } from '../../domain/checks.js';
import { ACCOUNT_KINDS } from '../../domain/types.js';
import * as admin from './admin-answers.js';
import * as a from './answers.js';
import * as s from '../routes/schemas.js';
import { HALT_REASON_CHARS_MAX } from '../../limits.js';

type Json = Record<string, unknown>;

/** POST /admin/v1/halt's body. The route checks it by hand; this describes the same rule. */
const HaltRequest = v.strictObject({ reason: v.pipe(v.string(), v.minLength(1), v.maxLength(HALT_REASON_CHARS_MAX)) });

const DEFINITIONS = {
  TransferRequest: s.TransferBody,
  MovementRequest: s.DepositBody,
  AssetRequest: s.AssetBody,
  AccountStatusRequest: s.AccountStatusBody,
  HaltRequest,
  BackupRequest: s.BackupBody,
  TransferAnswer: a.TransferAnswer,
  StateChange: a.StateChange,
  TransferDetail: a.TransferDetail,
  HistoryPage: a.HistoryPage,
  BalanceLine: a.BalanceLine,
  Balances: a.Balances,
  MovementDone: a.MovementDone,
  MovementPending: a.MovementPending,
  Asset: a.Asset,
  AccountStatus: a.AccountStatus,
  ErrorAnswer: a.ErrorAnswer,
  Health: a.Health,
  Ready: a.Ready,
  NotReady: a.NotReady,
  Alert: admin.Alert,
  AlertCondition: admin.AlertCondition,
  Alerts: admin.Alerts,
  AdminTransfer: admin.AdminTransfer,
  AdminTransfers: admin.AdminTransfers,
  RetryAnswer: admin.RetryAnswer,
  Difference: admin.Difference,
  InvariantReport: admin.InvariantReport,
  HaltAnswer: admin.HaltAnswer,
  ResumeAnswer: admin.ResumeAnswer,
  AuditEntry: admin.AuditEntry,
  AuditPage: admin.AuditPage,
  Overview: admin.Overview,
  Ownership: admin.Ownership,
  BackupAnswer: admin.BackupAnswer,
};

export type SchemaName = keyof typeof DEFINITIONS;

/** `{"$ref": "#/components/schemas/<name>"}`, typed so a misspelt name does not compile. */
export const ref = (name: SchemaName): Json => ({ $ref: `#/components/schemas/${name}` });

const AMOUNT = {
  type: 'string',
  pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$',
  description: "Positive plain decimal string, at most the asset's precision in decimals",
};

/**
 * What the checks inside TransferBody's pipe enforce, which have no JSON Schema form there (the
 * pipe keeps the fields plain strings so that each answers its own code, docs/api.md, "Check order").
 */
const TRANSFER_FIELDS = {
  from: { type: 'string', enum: [...ACCOUNT_KINDS] },
  to: { type: 'string', enum: [...ACCOUNT_KINDS], description: 'Differs from from' },
  asset: { type: 'string', pattern: ASSET_SYMBOL.source },
  amount: AMOUNT,
  client_order_id: {
    type: 'string',
    pattern: KEY.source,
    description: 'Unique per user: a repeat with the same body answers the original transfer',
  },
  user_id: { type: ['string', 'integer'], description: "Optional; must equal the token's sub" },
};

export function componentSchemas(): Record<SchemaName, Json> {
  const defs = toJsonSchemaDefs(DEFINITIONS, {
    target: 'draft-2020-12',
    errorMode: 'ignore',
    overrideRef: (c) => `#/components/schemas/${c.referenceId}`,
  }) as Record<SchemaName, Json>;
  const movement = defs.MovementRequest.properties as Record<string, Json>;
  return {
    ...defs,
    TransferRequest: { ...defs.TransferRequest, properties: TRANSFER_FIELDS },
    MovementRequest: { ...defs.MovementRequest, properties: { ...movement, amount: AMOUNT } },
  };
}

export const securitySchemes = {
  bearer: {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description:
      'HS256 with JWT_SECRET, or RS256/ES256/EdDSA from the JWKS by kid; exp required; iss/aud when configured. /api routes: sub is the user id. /admin routes: role=admin, sub names the operator.',
  },
};
