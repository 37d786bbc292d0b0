-- The SPOT ledger survives the loss of its machine.
--
-- ledger_owner: the owner epoch and its lease. Taking ownership increments `epoch` (under the
-- fence lock held exclusively, below); the owner renews `lease_until` on its lock session; a
-- standby may end the owner's sessions and take over once `lease_until` has passed. `owner` is
-- the tag every connection of the owning process carries at the front of its application_name.
CREATE TABLE ledger_owner (
  id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
  epoch BIGINT NOT NULL DEFAULT 0 CHECK (epoch >= 0),
  owner TEXT NOT NULL DEFAULT '',
  lease_until TIMESTAMPTZ NOT NULL DEFAULT '-infinity',
  promoted_at TIMESTAMPTZ
);
INSERT INTO ledger_owner DEFAULT VALUES;

-- UBSCore's log: one row per WAL block (wal/block.ts, the bytes exactly as LMDB holds them, every
-- byte under a CRC-32C), written in the same group commit as LMDB's, fenced by the epoch.
CREATE TABLE spot_log (
  last_seq BIGINT PRIMARY KEY,
  first_seq BIGINT NOT NULL,
  epoch BIGINT NOT NULL,
  block BYTEA NOT NULL,
  written_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
  CHECK (first_seq >= 1 AND last_seq >= first_seq)
);

-- UBSCore's snapshots: part 0 is the header (wal/snapshot.ts), parts 1..n its chunks, each as
-- LMDB holds it. A snapshot is written in one transaction, so it is there whole or not at all.
CREATE TABLE spot_snapshots (
  seq BIGINT NOT NULL CHECK (seq >= 1),
  part INTEGER NOT NULL CHECK (part >= 0),
  bytes BYTEA NOT NULL,
  PRIMARY KEY (seq, part)
);

-- The processed set of the records no longer in spot_log (wal/processed-key.ts key -> the
-- operation's own encoded record), moved here in the transaction that deletes their rows, so a
-- rebuild from PostgreSQL still knows every (req_id, op) ever applied (rule 8).
CREATE TABLE spot_processed (
  key BYTEA PRIMARY KEY,
  record BYTEA NOT NULL,
  seq BIGINT NOT NULL
);

-- How far spot_log was archived into spot_processed and deleted (0: never).
CREATE TABLE spot_log_state (
  id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
  archived_through_seq BIGINT NOT NULL DEFAULT 0 CHECK (archived_through_seq >= 0)
);
INSERT INTO spot_log_state DEFAULT VALUES;

-- The fence (rule 7): every statement that writes money, on a connection of the service, first
-- takes the fence lock shared and checks that the epoch its process owns (the connection's
-- `transfer.owner_epoch`, set when the connection opens) is still the current one. Taking
-- ownership holds the same lock exclusively while it increments the epoch, so a write of the
-- former owner either committed before the increment or is refused after it (SQLSTATE LF001,
-- which no layer takes for a business refusal). A connection without the setting is not the
-- service's (migrations, backup restore, an operator's psql) and is not fenced; one whose
-- setting is `standby` may write nothing.
CREATE FUNCTION owner_fence() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER funding_balances_fence BEFORE INSERT OR UPDATE OR DELETE ON funding_balances
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER funding_operations_fence BEFORE INSERT OR UPDATE OR DELETE ON funding_operations
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER transfers_tb_fence BEFORE INSERT OR UPDATE OR DELETE ON transfers_tb
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER transfer_state_history_fence BEFORE INSERT OR UPDATE OR DELETE ON transfer_state_history
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER external_movements_fence BEFORE INSERT OR UPDATE OR DELETE ON external_movements
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER spot_log_fence BEFORE INSERT OR UPDATE OR DELETE ON spot_log
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER spot_snapshots_fence BEFORE INSERT OR UPDATE OR DELETE ON spot_snapshots
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER spot_processed_fence BEFORE INSERT OR UPDATE OR DELETE ON spot_processed
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER transfers_active_fence BEFORE INSERT OR UPDATE OR DELETE ON transfers_active
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
