-- The state history, compact: a row names its transfer by the bigint transfer_id and its event by
-- a smallint code, where it repeated the 26-character req_id and the event's name. Every row is
-- kept, converted in place; the conversion refuses a row whose transfer or event it cannot name.
--
-- A row was the req_id's 27 bytes, the event's 10 to 14, and an entry of the same size in the
-- (req_id, id) key: 643 MiB per million transfers (four rows each) in make bench. Now it is
-- transfer_id, id, at and three smallints, 56 bytes with its header, and one entry in an index
-- on transfer_id alone, whose entries PostgreSQL stores once per key with the row pointers of
-- that key's rows (deduplication): a transfer's rows share one.
--
-- transfer_events names the codes; src/domain/fsm.ts's EVENT_CODES is the same list, and
-- test/operations/schema-rules.test.ts holds the two equal. No foreign key and no CHECK guard the
-- code, as none guarded the name: each would cost a lookup or a re-plan per statement, and the
-- functions write only the codes src/db/transfer-writes.ts checked against the FSM.

CREATE TABLE transfer_events (
  code SMALLINT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
INSERT INTO transfer_events (code, name) VALUES
  (0, 'CREATED'), (1, 'SOURCE_CALL'), (2, 'SOURCE_OK'), (3, 'SOURCE_FAIL'), (4, 'SOURCE_RETRY'), (5, 'TARGET_CALL'),
  (6, 'TARGET_OK'), (7, 'TARGET_FAIL'), (8, 'TARGET_RETRY'), (9, 'ROLLBACK_OK'), (10, 'ROLLBACK_FAIL');
-- Written by this migration alone; fenced like every table but ledger_owner (migration 0013).
CREATE TRIGGER transfer_events_fence BEFORE INSERT OR UPDATE OR DELETE ON transfer_events
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();

ALTER TABLE transfer_state_history RENAME TO transfer_state_history_by_req_id;
-- Columns in this order leave no alignment padding: three 8-byte ones, then the 2-byte ones.
CREATE TABLE transfer_state_history (
  transfer_id BIGINT NOT NULL,
  id          BIGINT GENERATED ALWAYS AS IDENTITY,
  at          TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
  from_state  SMALLINT,
  to_state    SMALLINT NOT NULL,
  event       SMALLINT NOT NULL,
  detail      TEXT
);

INSERT INTO transfer_state_history (transfer_id, id, at, from_state, to_state, event, detail) OVERRIDING SYSTEM VALUE
SELECT t.transfer_id, h.id, h.at, h.from_state, h.to_state, e.code, h.detail
  FROM transfer_state_history_by_req_id AS h
  JOIN transfers_tb AS t ON t.req_id = h.req_id
  JOIN transfer_events AS e ON e.name = h.event
 ORDER BY h.id;

DO $$
DECLARE
  old_rows bigint;
  new_rows bigint;
BEGIN
  SELECT count(*) INTO old_rows FROM transfer_state_history_by_req_id;
  SELECT count(*) INTO new_rows FROM transfer_state_history;
  IF new_rows <> old_rows THEN
    RAISE EXCEPTION 'migration 0014: % of % history row(s) name a transfer that does not exist or an event that is not one of transfer_events',
      old_rows - new_rows, old_rows;
  END IF;
END
$$;

SELECT setval(pg_get_serial_sequence('transfer_state_history', 'id'), COALESCE(max(id), 0) + 1, false) FROM transfer_state_history;
DROP TABLE transfer_state_history_by_req_id;

CREATE INDEX transfer_state_history_transfer_idx ON transfer_state_history (transfer_id);
CREATE TRIGGER transfer_state_history_fence BEFORE INSERT OR UPDATE OR DELETE ON transfer_state_history
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
