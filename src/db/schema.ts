// The PostgreSQL schema as ordered migrations, applied once each under an advisory lock so
// that several processes starting together do not race. Amounts are BIGINT smallest units.

import type { Sql } from './sql.js';
import { FUNDING_REFUSAL_FUNCTION, TRANSFER_APPLY_FUNCTION } from './transfer-apply-sql.js';
import { TRANSFER_APPLY_SET_FUNCTION } from './transfer-apply-set-sql.js';

const MIGRATION_LOCK_KEY = 0x7472616e73666572n; // "transfer"
/** Percent of each transfers_tb page filled by inserts (migration 2); the rest holds later row versions. */
const TRANSFERS_FILLFACTOR = 50;
/**
 * Migration 3: a transfer is now updated once or twice in its life (two commits on the happy
 * path), so less free room per page keeps its updates in place while the table stays smaller.
 */
const TRANSFERS_FILLFACTOR_TWO_COMMITS = 80;

const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE assets (
    symbol                    TEXT PRIMARY KEY CHECK (symbol ~ '^[A-Z0-9]{1,16}$'),
    asset_id                  INTEGER GENERATED ALWAYS AS IDENTITY UNIQUE,
    precision                 SMALLINT NOT NULL CHECK (precision BETWEEN 0 AND 18),
    min_transfer_units        BIGINT NOT NULL CHECK (min_transfer_units > 0),
    max_transfer_units        BIGINT NOT NULL CHECK (max_transfer_units >= min_transfer_units),
    status                    TEXT NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'SUSPENDED')),
    internal_transfer_enabled BOOLEAN NOT NULL DEFAULT TRUE,
    -- Per user per UTC day; NULL means no daily amount limit for this asset.
    daily_amount_limit_units  BIGINT CHECK (daily_amount_limit_units > 0),
    updated_at                TIMESTAMPTZ NOT NULL DEFAULT now()
  );

  CREATE TABLE funding_balances (
    user_id    BIGINT NOT NULL CHECK (user_id > 0),
    asset      TEXT NOT NULL REFERENCES assets (symbol),
    available  BIGINT NOT NULL CHECK (available >= 0),
    status     TEXT NOT NULL DEFAULT 'ACTIVE' CHECK (status IN ('ACTIVE', 'FROZEN', 'DISABLED')),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, asset)
  );

  -- Spec 001 §7.1, with amounts in smallest units and the account kinds spelled out.
  CREATE TABLE transfers_tb (
    transfer_id     BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    req_id          TEXT NOT NULL UNIQUE CHECK (req_id ~ '^[0-9A-HJKMNP-TV-Z]{26}$'),
    user_id         BIGINT NOT NULL CHECK (user_id > 0),
    asset           TEXT NOT NULL REFERENCES assets (symbol),
    amount          BIGINT NOT NULL CHECK (amount > 0),
    transfer_type   SMALLINT NOT NULL CHECK (transfer_type IN (1, 2)),
    source_type     SMALLINT NOT NULL CHECK (source_type IN (1, 2)),
    target_type     SMALLINT NOT NULL CHECK (target_type IN (1, 2) AND target_type <> source_type),
    state           SMALLINT NOT NULL DEFAULT 0 CHECK (state IN (0, 10, 20, 30, 40, -10, -20, -30)),
    error_code      TEXT,
    error_message   TEXT,
    retry_count     INTEGER NOT NULL DEFAULT 0,
    -- Unknown outcomes since the last state change (MON-002 counts refund attempts with it).
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_retry_at   TIMESTAMPTZ,
    client_order_id TEXT CHECK (client_order_id ~ '^[A-Za-z0-9_-]{1,64}$'),
    created_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at      TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (user_id, client_order_id)
  );
  CREATE INDEX transfers_active_idx ON transfers_tb (updated_at) WHERE state NOT IN (40, -10, -30);
  CREATE INDEX transfers_user_idx ON transfers_tb (user_id, transfer_id DESC);
  CREATE INDEX transfers_due_idx ON transfers_tb (next_retry_at) WHERE state NOT IN (40, -10, -30);
  CREATE INDEX transfers_user_day_idx ON transfers_tb (user_id, created_at);

  -- One row per state change, written in the same statement as the compare-and-swap.
  CREATE TABLE transfer_state_history (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    req_id     TEXT NOT NULL REFERENCES transfers_tb (req_id),
    from_state SMALLINT,
    to_state   SMALLINT NOT NULL,
    event      TEXT NOT NULL,
    detail     TEXT,
    at         TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
  );
  CREATE INDEX transfer_state_history_req_idx ON transfer_state_history (req_id, id);

  -- The Funding adapter's idempotency record: one row per (req_id, op), written in the same
  -- transaction as the balance change it describes. Rejections are recorded too.
  CREATE TABLE funding_operations (
    req_id     TEXT NOT NULL,
    op         TEXT NOT NULL CHECK (op IN ('WITHDRAW', 'DEPOSIT', 'REFUND')),
    user_id    BIGINT NOT NULL,
    asset      TEXT NOT NULL,
    amount     BIGINT NOT NULL CHECK (amount > 0),
    outcome    TEXT NOT NULL CHECK (outcome IN ('APPLIED', 'REJECTED')),
    code       TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (req_id, op)
  );

  -- Funds entering or leaving the system from outside, idempotent by ref. A SPOT movement is
  -- recorded PENDING before UBSCore is asked, and DONE or REJECTED after it answers.
  CREATE TABLE external_movements (
    ref        TEXT PRIMARY KEY CHECK (ref ~ '^[A-Za-z0-9_-]{1,64}$'),
    kind       TEXT NOT NULL CHECK (kind IN ('DEPOSIT', 'WITHDRAW')),
    user_id    BIGINT NOT NULL CHECK (user_id > 0),
    account    TEXT NOT NULL CHECK (account IN ('FUNDING', 'SPOT')),
    asset      TEXT NOT NULL REFERENCES assets (symbol),
    amount     BIGINT NOT NULL CHECK (amount > 0),
    state      TEXT NOT NULL CHECK (state IN ('PENDING', 'DONE', 'REJECTED')),
    code       TEXT,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
  );
  CREATE INDEX external_movements_pending_idx ON external_movements (created_at) WHERE state = 'PENDING';

  -- Service-wide switches that must survive a restart: the halt after a conservation violation.
  CREATE TABLE service_state (
    key        TEXT PRIMARY KEY,
    value      JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
  );

  -- Alerts for operators: one per (kind, transfer), durable, listed at GET /admin/v1/alerts.
  CREATE TABLE alerts (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       TEXT NOT NULL,
    severity   TEXT NOT NULL CHECK (severity IN ('WARNING', 'CRITICAL')),
    req_id     TEXT,
    user_id    BIGINT,
    message    TEXT NOT NULL,
    details    JSONB NOT NULL DEFAULT '{}',
    -- At most one alert per kind and key: the req_id, or a window for alerts about a user.
    dedupe_key TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (kind, dedupe_key)
  );
  `,
  // A state change must not touch an indexed column, so that PostgreSQL updates the row in
  // place (a HOT update, no index entries written): the partial indexes on state, updated_at
  // and next_retry_at go, and the unfinished transfers are listed in their own small table,
  // written in the same statements that create a transfer and finish it. Free room on each
  // page keeps the new row versions of a transfer on its page.
  `
  CREATE TABLE transfers_active (
    req_id  TEXT PRIMARY KEY REFERENCES transfers_tb (req_id),
    user_id BIGINT NOT NULL
  );
  INSERT INTO transfers_active (req_id, user_id) SELECT req_id, user_id FROM transfers_tb WHERE state NOT IN (40, -10, -30);
  DROP INDEX transfers_active_idx;
  DROP INDEX transfers_due_idx;
  ALTER TABLE transfers_tb SET (fillfactor = ${TRANSFERS_FILLFACTOR});

  -- A history row costs one index entry, not two: the key (req_id, id) serves both uniqueness
  -- and the per-transfer listing. The foreign key goes: each row is inserted by the statement
  -- that creates or moves its transfer, selected from the row it just wrote, and transfers are
  -- never deleted, so the reference holds by construction; checking it cost a lookup per row.
  ALTER TABLE transfer_state_history DROP CONSTRAINT transfer_state_history_pkey;
  ALTER TABLE transfer_state_history ADD PRIMARY KEY (req_id, id);
  DROP INDEX transfer_state_history_req_idx;
  ALTER TABLE transfer_state_history DROP CONSTRAINT transfer_state_history_req_id_fkey;
  `,
  // Two commits per transfer, each shared by a batch (transfer_apply). What each row costs goes
  // down too: the foreign key from transfers_tb to assets locked the one shared asset row on
  // every insert (a multixact under load) and the one from transfers_active looked up the row
  // its own statement had just inserted; assets are never deleted and the coordinator checks
  // the symbol, and the unfinished list is written only by the statements that write the
  // transfer. client_order_id is unique per user only where it is given, so a transfer without
  // one costs no entry in that index.
  `
  ALTER TABLE transfers_tb DROP CONSTRAINT transfers_tb_asset_fkey;
  ALTER TABLE transfers_active DROP CONSTRAINT transfers_active_req_id_fkey;
  ALTER TABLE transfers_tb DROP CONSTRAINT transfers_tb_user_id_client_order_id_key;
  CREATE UNIQUE INDEX transfers_client_order_idx ON transfers_tb (user_id, client_order_id) WHERE client_order_id IS NOT NULL;
  ALTER TABLE transfers_tb SET (fillfactor = ${TRANSFERS_FILLFACTOR_TWO_COMMITS});
  ${FUNDING_REFUSAL_FUNCTION}
  ${TRANSFER_APPLY_FUNCTION}
  ${TRANSFER_APPLY_SET_FUNCTION}
  `,
  // The ledger's identity, also stamped on UBSCore's WAL: a start whose two stores name
  // different ledgers (or one of them none, while the other holds state) is refused
  // (src/ownership/ledger-identity.ts). One row at most.
  `
  CREATE TABLE ledger_identity (
    singleton  BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
    ledger_id  UUID NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
  );
  `,
  // transfer_apply (both forms) takes the user's lock for every item, a plain move too: a move
  // without it held a twin's transfer row while waiting for that lock (ATK-010 deadlocked).
  // CREATE OR REPLACE: a database migrated before gets the new bodies.
  `
  ${TRANSFER_APPLY_FUNCTION}
  ${TRANSFER_APPLY_SET_FUNCTION}
  `,
  // The admin audit trail: who did what, to what, with which parameters, and how it ended (the
  // HTTP status and the error code, or ok), one row per admin action, failed ones included.
  // Spec 002's alert table: whether each condition is firing now, and its episode, so a restart
  // neither raises a firing condition again nor forgets it; its severities are all allowed.
  `
  CREATE TABLE admin_audit (
    id         BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         TIMESTAMPTZ NOT NULL DEFAULT now(),
    operator   TEXT NOT NULL,
    action     TEXT NOT NULL,
    target     JSONB NOT NULL DEFAULT '{}',
    parameters JSONB NOT NULL DEFAULT '{}',
    status     SMALLINT NOT NULL,
    outcome    TEXT NOT NULL,
    req_id     TEXT
  );

  CREATE TABLE alert_conditions (
    kind       TEXT PRIMARY KEY,
    firing     BOOLEAN NOT NULL,
    episode    INTEGER NOT NULL DEFAULT 0,
    value      DOUBLE PRECISION NOT NULL,
    changed_at TIMESTAMPTZ NOT NULL DEFAULT now()
  );
  ALTER TABLE alerts DROP CONSTRAINT alerts_severity_check;
  ALTER TABLE alerts ADD CONSTRAINT alerts_severity_check CHECK (severity IN ('INFO', 'WARNING', 'ERROR', 'CRITICAL'));
  `,
];

/** The schema version this build creates: its migration count. A backup restores only into the same. */
export const SCHEMA_VERSION = MIGRATIONS.length;

/** The demo assets `make run` seeds: 8 decimals, 1 unit minimum, 1,000,000 whole coins maximum. */
const DEMO_ASSETS = ['BTC', 'USDT', 'ETH'] as const;
const DEMO_PRECISION = 8;
const DEMO_MAX_UNITS = 1_000_000n * 10n ** BigInt(DEMO_PRECISION);

export async function migrate(sql: Sql): Promise<{ applied: number }> {
  return sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`;
    const rows = await tx<{ version: number }[]>`SELECT version FROM schema_migrations`;
    const done = new Set(rows.map((r) => r.version));
    let applied = 0;
    for (const [index, text] of MIGRATIONS.entries()) {
      const version = index + 1;
      if (done.has(version)) continue;
      await tx.unsafe(text);
      await tx`INSERT INTO schema_migrations (version) VALUES (${version})`;
      applied += 1;
    }
    return { applied };
  });
}

/** Seeds the demo assets once; an operator's later change to one is kept. */
export async function seedDemoAssets(sql: Sql): Promise<void> {
  for (const symbol of DEMO_ASSETS) {
    await sql`
      INSERT INTO assets (symbol, precision, min_transfer_units, max_transfer_units)
      VALUES (${symbol}, ${DEMO_PRECISION}, ${1n}, ${DEMO_MAX_UNITS})
      ON CONFLICT (symbol) DO NOTHING`;
  }
}
