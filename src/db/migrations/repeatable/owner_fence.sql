-- The fence (rule 7): every statement that writes money, on a connection of the service, first
-- takes the fence lock shared and checks that the epoch its process owns (the connection's
-- `transfer.owner_epoch`, set when the connection opens) is still the current one. Taking
-- ownership holds the same lock exclusively while it increments the epoch, so a write of the
-- former owner either committed before the increment or is refused after it (SQLSTATE LF001,
-- which no layer takes for a business refusal). A connection without the setting is not the
-- service's (migrations, backup restore, an operator's psql) and is not fenced; one whose
-- setting is `standby` may write nothing.
-- Since migration 0013 it guards the control tables too: every table the service writes but
-- ledger_owner. The triggers that bind it to each table are created with their table, in the
-- versioned migrations (0010, 0011, 0013, ...).

CREATE OR REPLACE FUNCTION owner_fence() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  mine TEXT := current_setting('transfer.owner_epoch', true);
  current_epoch BIGINT;
BEGIN
  IF mine IS NULL OR mine = '' THEN
    RETURN NULL;
  END IF;
  IF mine !~ '^[0-9]+$' THEN
    RAISE EXCEPTION 'this connection (transfer.owner_epoch=%) may not write the ledger', mine USING ERRCODE = 'LF001';
  END IF;
  PERFORM pg_advisory_xact_lock_shared(7810759523990398564);
  SELECT epoch INTO current_epoch FROM ledger_owner;
  IF current_epoch IS DISTINCT FROM mine::BIGINT THEN
    RAISE EXCEPTION 'owner epoch % was superseded by epoch %: this process no longer owns the ledger', mine, current_epoch
      USING ERRCODE = 'LF001';
  END IF;
  RETURN NULL;
END
$$;
