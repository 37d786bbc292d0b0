-- The processed set's retention.
--
-- spot_seq_clock: UBSCore's durable SPOT seq as the owner saw it, at the time PostgreSQL gave
-- (now() of the insert, which began after the seq was read, so every record up to `seq` was
-- applied at or before `at`). The retention's horizon H is the largest `seq` whose `at` is at
-- least PROCESSED_RETENTION_S ago: every processed-set entry at or below it was applied at
-- least that long ago. Written by the owner's main thread once per pruning pass; rows older than
-- twice the retention are deleted. A standby reads the owner's rows (it writes nothing).
CREATE TABLE spot_seq_clock (
  at TIMESTAMPTZ PRIMARY KEY,
  seq BIGINT NOT NULL CHECK (seq >= 0)
);

-- The retention deletes spot_processed rows at or below H in pages of seq order: without this
-- index each page would read the whole table.
CREATE INDEX spot_processed_seq_idx ON spot_processed (seq);

-- The owner writes the clock on its fenced pool: a former owner's tick after a takeover is
-- refused (LF001), as every other write of the SPOT ledger is (migration 0010).
CREATE TRIGGER spot_seq_clock_fence BEFORE INSERT OR UPDATE OR DELETE ON spot_seq_clock
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
