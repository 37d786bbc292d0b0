-- Every statement inside the batch writers reads by key (req_id, (user_id, asset), (req_id, op)),
-- so an index scan is always the right plan. PL/pgSQL caches a generic plan per connection the
-- first few times a statement runs; on a fresh database those tables are nearly empty, the
-- planner picks a sequential scan, and the connection keeps that plan while the table grows
-- (measured: the set-based form's operation lookup took 0.87 ms per batch against 9,000 rows,
-- 0.05 ms with the index). Sequential scans are disabled inside both functions, so every cached
-- plan is the index plan whatever the table held when it was made.
ALTER FUNCTION transfer_apply(jsonb, bigint) SET enable_seqscan = off;
ALTER FUNCTION transfer_apply_set(jsonb, bigint) SET enable_seqscan = off;
