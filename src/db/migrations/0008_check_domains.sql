-- The CHECK constraints of the tables every transfer writes become domains on their columns.
--
-- Why: PostgreSQL re-reads and re-plans every CHECK constraint of a table from its stored text
-- (pg_constraint.conbin) each time a statement that inserts or updates a row of it starts
-- (ExecRelCheck), and a statement run from PL/pgSQL starts once per run. transfers_tb had eight,
-- so its INSERT and UPDATE each paid about 25 µs before touching a row: measured on 2 cores,
-- 20,000 INSERT + UPDATE pairs from PL/pgSQL took 1.55 s with the eight constraints, 0.52 s
-- with none, 0.70 s with the same rules as domains (their expressions are planned once, in the
-- type cache). A domain checks the same rule on every value stored into the column (an insert,
-- or an update that sets it) and refuses with the same SQLSTATE, 23514 check_violation.
--
-- The one rule over two columns stays a table constraint: a transfer's source and target differ.

CREATE DOMAIN positive_id AS bigint CHECK (VALUE > 0);
CREATE DOMAIN units_positive AS bigint CHECK (VALUE > 0);
CREATE DOMAIN units_nonnegative AS bigint CHECK (VALUE >= 0);
CREATE DOMAIN transfer_req_id AS text CHECK (VALUE ~ '^[0-9A-HJKMNP-TV-Z]{26}$');
CREATE DOMAIN client_order_ref AS text CHECK (VALUE ~ '^[A-Za-z0-9_-]{1,64}$');
CREATE DOMAIN account_type AS smallint CHECK (VALUE IN (1, 2));
CREATE DOMAIN transfer_state AS smallint CHECK (VALUE IN (0, 10, 20, 30, 40, -10, -20, -30));
CREATE DOMAIN funding_status AS text CHECK (VALUE IN ('ACTIVE', 'FROZEN', 'DISABLED'));
CREATE DOMAIN funding_op AS text CHECK (VALUE IN ('WITHDRAW', 'DEPOSIT', 'REFUND'));
CREATE DOMAIN funding_outcome AS text CHECK (VALUE IN ('APPLIED', 'REJECTED'));

ALTER TABLE transfers_tb
  DROP CONSTRAINT transfers_tb_req_id_check,
  DROP CONSTRAINT transfers_tb_user_id_check,
  DROP CONSTRAINT transfers_tb_amount_check,
  DROP CONSTRAINT transfers_tb_transfer_type_check,
  DROP CONSTRAINT transfers_tb_source_type_check,
  DROP CONSTRAINT transfers_tb_check,
  DROP CONSTRAINT transfers_tb_state_check,
  DROP CONSTRAINT transfers_tb_client_order_id_check,
  ALTER COLUMN req_id TYPE transfer_req_id,
  ALTER COLUMN user_id TYPE positive_id,
  ALTER COLUMN amount TYPE units_positive,
  ALTER COLUMN transfer_type TYPE account_type,
  ALTER COLUMN source_type TYPE account_type,
  ALTER COLUMN target_type TYPE account_type,
  ALTER COLUMN state TYPE transfer_state,
  ALTER COLUMN client_order_id TYPE client_order_ref,
  ADD CONSTRAINT transfers_tb_direction_check CHECK (target_type <> source_type);

ALTER TABLE funding_balances
  DROP CONSTRAINT funding_balances_user_id_check,
  DROP CONSTRAINT funding_balances_available_check,
  DROP CONSTRAINT funding_balances_status_check,
  ALTER COLUMN user_id TYPE positive_id,
  ALTER COLUMN available TYPE units_nonnegative,
  ALTER COLUMN status TYPE funding_status;

ALTER TABLE funding_operations
  DROP CONSTRAINT funding_operations_op_check,
  DROP CONSTRAINT funding_operations_amount_check,
  DROP CONSTRAINT funding_operations_outcome_check,
  ALTER COLUMN op TYPE funding_op,
  ALTER COLUMN amount TYPE units_positive,
  ALTER COLUMN outcome TYPE funding_outcome;
