-- Every table the service writes is fenced by the owner epoch, control tables included.
--
-- Migration 0010 fenced the tables that hold money and the SPOT log. A former owner still running
-- after its lock session was ended could nevertheless write the rest: the halt in service_state
-- (a conservation check run against its stale RAM halted the new owner's shards, which read the
-- stored halt), an asset's limits, alerts and their conditions, audit rows, the archive mark.
-- The same per-statement trigger (owner_fence(), migration 0010) now guards each of them: on a
-- connection of the service whose epoch was superseded, or a standby's, every write is refused
-- with SQLSTATE LF001; a connection without the setting (migrations, restore, an operator's psql)
-- passes as before.
--
-- Left unfenced, on purpose, one table only: ledger_owner, which the claim and the lease renewal
-- write on the owner-lock session under the fence lock itself (the claim takes it exclusively);
-- its writes are guarded by the epoch in their own WHERE clauses (src/ownership/).
--
-- schema_migrations is fenced too, although only the migrator writes it and always on a
-- connection that carries no epoch: so that every table of the schema but ledger_owner carries
-- the fence, and test/owner-fence.test.ts can require exactly that of every table to come.
CREATE TRIGGER assets_fence BEFORE INSERT OR UPDATE OR DELETE ON assets
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER service_state_fence BEFORE INSERT OR UPDATE OR DELETE ON service_state
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER alerts_fence BEFORE INSERT OR UPDATE OR DELETE ON alerts
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER alert_conditions_fence BEFORE INSERT OR UPDATE OR DELETE ON alert_conditions
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER admin_audit_fence BEFORE INSERT OR UPDATE OR DELETE ON admin_audit
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER ledger_identity_fence BEFORE INSERT OR UPDATE OR DELETE ON ledger_identity
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER spot_log_state_fence BEFORE INSERT OR UPDATE OR DELETE ON spot_log_state
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
CREATE TRIGGER schema_migrations_fence BEFORE INSERT OR UPDATE OR DELETE ON schema_migrations
  FOR EACH STATEMENT EXECUTE FUNCTION owner_fence();
