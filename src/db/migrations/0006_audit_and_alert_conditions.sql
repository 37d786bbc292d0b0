-- The admin audit trail: who did what, to what, with which parameters, and how it ended (the
-- HTTP status and the error code, or ok), one row per admin action, failed ones included.
-- Spec 002's alert table: whether each condition is firing now, and its episode, so a restart
-- neither raises a firing condition again nor forgets it; its severities are all allowed.

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
