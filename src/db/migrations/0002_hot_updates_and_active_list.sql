-- A state change must not touch an indexed column, so that PostgreSQL updates the row in
-- place (a HOT update, no index entries written): the partial indexes on state, updated_at
-- and next_retry_at go, and the unfinished transfers are listed in their own small table,
-- written in the same statements that create a transfer and finish it. Free room on each
-- page keeps the new row versions of a transfer on its page.

CREATE TABLE transfers_active (
  req_id  TEXT PRIMARY KEY REFERENCES transfers_tb (req_id),
  user_id BIGINT NOT NULL
);
INSERT INTO transfers_active (req_id, user_id) SELECT req_id, user_id FROM transfers_tb WHERE state NOT IN (40, -10, -30);
DROP INDEX transfers_active_idx;
DROP INDEX transfers_due_idx;
ALTER TABLE transfers_tb SET (fillfactor = 50);

-- A history row costs one index entry, not two: the key (req_id, id) serves both uniqueness
-- and the per-transfer listing. The foreign key goes: each row is inserted by the statement
-- that creates or moves its transfer, selected from the row it just wrote, and transfers are
-- never deleted, so the reference holds by construction; checking it cost a lookup per row.
ALTER TABLE transfer_state_history DROP CONSTRAINT transfer_state_history_pkey;
ALTER TABLE transfer_state_history ADD PRIMARY KEY (req_id, id);
DROP INDEX transfer_state_history_req_idx;
ALTER TABLE transfer_state_history DROP CONSTRAINT transfer_state_history_req_id_fkey;
