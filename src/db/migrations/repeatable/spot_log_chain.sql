-- The SPOT log is a chain, and the database itself refuses anything else: a block's first seq is
-- the previous block's last seq + 1, or, when spot_log holds no block below it, the archive mark
-- (spot_log_state.archived_through_seq) + 1. Before this, spot_log took any block whose last seq
-- was new: a hole (PostgreSQL lost its tail to an asynchronous replica or a point-in-time
-- restore, and the owner wrote on) or a fork (a former owner writing again inside the archived
-- range) was stored silently, a standby then stopped on the gap, and no rebuild from PostgreSQL
-- was possible any more. Now such a write is refused (SQLSTATE LF002, a message naming the
-- expected and the given first seq), and the writer stops on it (src/ubscore/spot-log/store.ts).
--
-- A constraint trigger deferred to the commit, so the check sees the transaction whole: a seed
-- writes its blocks before the archive mark (src/ubscore/spot-log/seed.ts), a restore loads rows in any
-- order (src/backup/pg-tables.ts). Two writers serialize on a transaction advisory lock taken
-- before the check; the check's statements then read what the other committed (each statement of
-- a READ COMMITTED transaction takes a new snapshot, and a transaction's locks are released only
-- after its commit is visible). The same block re-appended (ON CONFLICT DO NOTHING) inserts no
-- row and is not checked: the store compares its bytes. Deletion is not checked: the archive
-- deletes the blocks through a block boundary and moves the mark in one transaction, and a hole
-- made by hand is found by whoever reads the log (the standby's tail, a rebuild), naming it.
--
-- The constraint trigger that runs it (spot_log_chain, AFTER INSERT ON spot_log, deferred to the
-- commit) was created with it by migration 0012.

CREATE OR REPLACE FUNCTION spot_log_chain() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  below_last BIGINT;
  archived BIGINT;
  expected BIGINT;
  after_what TEXT;
  above RECORD;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('spot_log:chain', 0));
  -- Deleted again by the same transaction: nothing left to check.
  PERFORM 1 FROM spot_log WHERE last_seq = NEW.last_seq;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  SELECT last_seq INTO below_last FROM spot_log WHERE last_seq < NEW.last_seq ORDER BY last_seq DESC LIMIT 1;
  IF below_last IS NULL THEN
    SELECT archived_through_seq INTO archived FROM spot_log_state;
    expected := COALESCE(archived, 0) + 1;
    after_what := format('after the archive mark %s, with no block below it', COALESCE(archived, 0));
  ELSE
    expected := below_last + 1;
    after_what := format('after the block ending at seq %s', below_last);
  END IF;
  IF NEW.first_seq <> expected THEN
    RAISE EXCEPTION 'spot_log is a chain: the block of seqs %..% must start at seq % (%), not at seq %: %',
      NEW.first_seq, NEW.last_seq, expected, after_what, NEW.first_seq,
      CASE WHEN NEW.first_seq > expected THEN format('seqs %s..%s would be missing', expected, NEW.first_seq - 1)
           ELSE format('it overlaps seqs %s..%s', NEW.first_seq, LEAST(expected - 1, NEW.last_seq)) END
      USING ERRCODE = 'LF002';
  END IF;
  SELECT first_seq, last_seq INTO above FROM spot_log WHERE last_seq > NEW.last_seq ORDER BY last_seq LIMIT 1;
  IF FOUND AND above.first_seq <> NEW.last_seq + 1 THEN
    RAISE EXCEPTION 'spot_log is a chain: the block of seqs %..% must start at seq % (after the block ending at seq %), not at seq %',
      above.first_seq, above.last_seq, NEW.last_seq + 1, NEW.last_seq, above.first_seq
      USING ERRCODE = 'LF002';
  END IF;
  RETURN NULL;
END
$$;
