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
