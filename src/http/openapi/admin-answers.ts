// What the operator routes answer (src/http/routes/operator-routes.ts, src/http/console/routes.ts, src/http/routes/audit-routes.ts),
// described with valibot for the OpenAPI document, as answers.ts does for the client routes.

import * as v from 'valibot';
import { ALERT_KINDS } from '../../alerts/alerts.js';
import { CONDITION_KINDS } from '../../alerts/rules.js';
import { ADMIN_ACTIONS } from '../../audit/audit-log.js';
import { ULID } from '../../domain/checks.js';
import { STATE_NAMES, UNFINISHED_STATES, type TransferStateName } from '../../domain/fsm.js';
import { ACCOUNT_KINDS } from '../../domain/types.js';
import { StateChange } from './answers.js';
import { ERROR_CODES } from '../../domain/errors.js';

const time = v.pipe(v.string(), v.isoTimestamp());
const reqId = v.pipe(v.string(), v.regex(ULID));
const integerText = v.pipe(v.string(), v.regex(/^-?(0|[1-9][0-9]*)$/));
const stateName = v.picklist(STATE_NAMES as TransferStateName[]);
const severity = v.picklist([...new Set(Object.values(ALERT_KINDS))]);
const alertKind = v.picklist(Object.keys(ALERT_KINDS));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const errorCode = v.nullable(v.picklist(ERROR_CODES));

export const Alert = v.object({
  id: integerText,
  kind: alertKind,
  severity,
  req_id: v.nullable(reqId),
  user_id: v.nullable(integerText),
  message: v.string(),
  details: v.record(v.string(), v.unknown()),
  created_at: time,
});
export const AlertCondition = v.object({
  kind: v.picklist([...CONDITION_KINDS]),
  severity,
  firing: v.boolean(),
  value: v.number(),
  threshold: v.number(),
  since: v.nullable(time),
});
export const Alerts = v.object({ alerts: v.array(Alert), conditions: v.array(AlertCondition) });

export const AdminTransfer = v.object({
  req_id: reqId,
  transfer_id: integerText,
  user_id: integerText,
  client_order_id: v.nullable(v.string()),
  from: v.picklist(ACCOUNT_KINDS),
  to: v.picklist(ACCOUNT_KINDS),
  asset: v.string(),
  amount: v.pipe(v.string(), v.description("Decimal string in the asset's units")),
  amount_units: integerText,
  state: stateName,
  retry_count: count,
  error_code: errorCode,
  last_error: v.nullable(v.string()),
  advice: v.pipe(
    v.nullable(v.string()),
    v.description(
      'What an operator does, for a transfer waiting on an unknown outcome (TARGET_PENDING, a SPOT debit in SOURCE_PENDING); null otherwise',
    ),
  ),
  created_at: time,
  updated_at: time,
  history: v.array(StateChange),
});
export const AdminTransfers = v.object({ transfers: v.array(AdminTransfer) });

export const RetryAnswer = v.object({
  req_id: reqId,
  state: stateName,
  retry_count: count,
  error_code: errorCode,
  history: v.array(StateChange),
});

export const Difference = v.object({ account: v.string(), expected_units: integerText, actual_units: integerText, detail: v.string() });
export const InvariantReport = v.object({
  ok: v.boolean(),
  checked_at: time,
  wal_seq: count,
  accounts_checked: count,
  transfers_examined: count,
  in_flight_units: v.record(v.string(), integerText),
  differences: v.array(Difference),
  halted: v.boolean(),
  halt_reason: v.nullable(v.string()),
});

/** The coordinator shards that did not take a halt or resume (told again until they do); empty when all hold it. */
const ShardsNotHolding = v.array(v.object({ shard: v.nullable(count), reason: v.string() }));
export const HaltAnswer = v.object({
  halted: v.literal(true),
  was_halted: v.boolean(),
  reason: v.nullable(v.string()),
  since: v.nullable(time),
  shards_not_holding: ShardsNotHolding,
});
export const ResumeAnswer = v.object({
  halted: v.literal(false),
  was_halted: v.boolean(),
  previous_reason: v.nullable(v.string()),
  shards_not_holding: ShardsNotHolding,
});

export const AuditEntry = v.object({
  id: integerText,
  at: time,
  operator: v.string(),
  action: v.picklist(ADMIN_ACTIONS),
  target: v.record(v.string(), v.unknown()),
  parameters: v.record(v.string(), v.unknown()),
  status: v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(599)),
  outcome: v.pipe(v.string(), v.description('"ok", or the error code answered')),
  req_id: v.nullable(reqId),
});
export const AuditPage = v.object({ items: v.array(AuditEntry), next_cursor: v.nullable(v.string()) });

const unfinished = Object.fromEntries(UNFINISHED_STATES.map((s) => [s, count]));
export const Overview = v.object({
  now: v.object({
    window_s: count,
    requests: count,
    accepted: count,
    transfers_per_s: v.pipe(v.string(), v.regex(/^[0-9]+\.[0-9]$/)),
    p99_ms: v.nullable(v.number()),
    p99_above_max: v.boolean(),
  }),
  unfinished_by_state: v.object(unfinished),
  in_flight: v.array(v.object({ asset: v.string(), amount: v.string(), units: integerText })),
  wal_seq: count,
  halt: v.object({ halted: v.boolean(), reason: v.nullable(v.string()), since: v.nullable(time) }),
  last_check: v.nullable(v.object({ checked_at: time, ok: v.boolean(), wal_seq: count, differences: v.array(Difference) })),
});

/** GET /admin/v1/ownership: this process's role, epoch and lease; ledger_owner and the SPOT log as PostgreSQL holds them. */
export const Ownership = v.object({
  role: v.picklist(['primary', 'standby']),
  promoted: v.pipe(v.boolean(), v.description('Started as a standby (ROLE=standby) and took over')),
  epoch: v.nullable(count),
  lease: v.object({
    state: v.nullable(v.picklist(['proven', 'standing-by', 'lapsed'])),
    left_ms: v.pipe(count, v.description('Milliseconds of proven lease left')),
  }),
  ledger_owner: v.object({ epoch: count, owner: v.string(), promoted_at: v.nullable(time), lease_until: v.nullable(time) }),
  spot_log: v.object({
    last_seq: count,
    archived_through_seq: count,
    bytes: v.object({ spot_log: count, spot_snapshots: count, spot_processed: count }),
  }),
});

/** POST /admin/v1/backup: where it went, the cut (ledger, WAL position, PostgreSQL snapshot), the pause, the sizes. */
export const BackupAnswer = v.object({
  dir: v.string(),
  ledger_id: v.string(),
  wal_seq: v.pipe(v.number(), v.integer(), v.minValue(0)),
  pg_snapshot: v.string(),
  pause_ms: v.pipe(v.number(), v.integer(), v.minValue(0)),
  ubscore_bytes: v.pipe(v.number(), v.integer(), v.minValue(0)),
  tables: v.record(v.string(), v.pipe(v.number(), v.integer(), v.minValue(0))),
});
