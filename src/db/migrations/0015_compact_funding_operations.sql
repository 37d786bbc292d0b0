-- The Funding adapter's idempotency record, compact: a row names its transfer by the bigint
-- transfer_id and its operation by a smallint code, and holds only what the transfer row does not
-- say: the refusal's code, NULL when the operation was applied. The user, asset and amount are the
-- transfer's (an operation of other parameters is refused as CONFLICT, and never recorded), the
-- outcome is whether a code is there, and when it happened is the history row written in the same
-- transaction. Every row is kept, converted in place; the conversion refuses a row it cannot
-- convert without losing what it says.
--
-- A row was the req_id's 27 bytes, the operation's and outcome's names, the user, asset, amount
-- and time, and its (req_id, op) key repeated the req_id: 165 MiB per million transfers in make
-- bench. Now it is transfer_id, op and a code that is NULL when applied, 40 bytes with its
-- header, and a key of 24.
--
-- funding_ops names the codes; src/db/transfer-writes.ts's FUNDING_OP_CODES is the same list, and
-- test/operations/schema-rules.test.ts holds the two equal. funding_operation_records shows the
-- rows as they read before, by req_id and names, for an operator in psql.

CREATE TABLE funding_ops (
  code SMALLINT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
INSERT INTO funding_ops (code, name) VALUES (1, 'WITHDRAW'), (2, 'DEPOSIT'), (3, 'REFUND');
-- Written by this migration alone; fenced like every table but ledger_owner (migration 0013).
CREATE TRIGGER funding_ops_fence BEFORE INSERT OR UPDATE OR DELETE ON funding_ops
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();

-- A row the compact model could not hold is refused, with how many and why.
DO $$
DECLARE
  orphans bigint;
  others bigint;
  codes bigint;
BEGIN
  SELECT count(*) FILTER (WHERE t.req_id IS NULL),
         count(*) FILTER (WHERE t.req_id IS NOT NULL AND (t.user_id <> f.user_id OR t.asset <> f.asset OR t.amount <> f.amount)),
         count(*) FILTER (WHERE (f.outcome = 'APPLIED') <> (f.code IS NULL))
    INTO orphans, others, codes
    FROM funding_operations AS f LEFT JOIN transfers_tb AS t ON t.req_id = f.req_id;
  IF orphans + others + codes > 0 THEN
    RAISE EXCEPTION 'migration 0015: funding_operations holds % row(s) of no transfer, % of other parameters than their transfer''s, % whose outcome and code disagree',
      orphans, others, codes;
  END IF;
END
$$;

CREATE DOMAIN funding_op_code AS smallint CHECK (VALUE IN (1, 2, 3));
ALTER TABLE funding_operations RENAME TO funding_operations_by_req_id;
CREATE TABLE funding_operations (
  transfer_id BIGINT NOT NULL,
  op          funding_op_code NOT NULL,
  code        TEXT
);
INSERT INTO funding_operations (transfer_id, op, code)
SELECT t.transfer_id, o.code, f.code
  FROM funding_operations_by_req_id AS f
  JOIN transfers_tb AS t ON t.req_id = f.req_id
  JOIN funding_ops AS o ON o.name = f.op
 ORDER BY t.transfer_id, o.code;

DO $$
DECLARE
  old_rows bigint;
  new_rows bigint;
BEGIN
  SELECT count(*) INTO old_rows FROM funding_operations_by_req_id;
  SELECT count(*) INTO new_rows FROM funding_operations;
  IF new_rows <> old_rows THEN
    RAISE EXCEPTION 'migration 0015: % of % operation row(s) were not converted', old_rows - new_rows, old_rows;
  END IF;
END
$$;

DROP TABLE funding_operations_by_req_id;
DROP DOMAIN funding_op;
DROP DOMAIN funding_outcome;
ALTER TABLE funding_operations ADD PRIMARY KEY (transfer_id, op);
CREATE TRIGGER funding_operations_fence BEFORE INSERT OR UPDATE OR DELETE ON funding_operations
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();

CREATE VIEW funding_operation_records AS
SELECT t.req_id, o.name AS op, t.user_id, t.asset, t.amount,
       CASE WHEN f.code IS NULL THEN 'APPLIED' ELSE 'REJECTED' END AS outcome, f.code
  FROM funding_operations AS f
  JOIN transfers_tb AS t USING (transfer_id)
  JOIN funding_ops AS o ON o.code = f.op;
