-- An operator's correction (MON-003's remedy): a deposit or withdrawal that repairs a balance the
-- conservation check found off, made while halted if need be. It moves the balance like any
-- external movement and is kept in the same ledger, with the operator's reason; the conservation
-- check does not count it as money entering or leaving (it brings a balance back to what the
-- ledger of real movements proves), so a correction made where nothing was off is itself a
-- difference the next check names. NULL: an ordinary movement.
ALTER TABLE external_movements ADD COLUMN correction_reason TEXT;
