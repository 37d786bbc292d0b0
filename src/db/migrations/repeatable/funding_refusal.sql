-- The Funding side's business refusal of one operation, or NULL when it applies: the one home of
-- those rules, for both forms of the batch writer (transfer_apply, transfer_apply_set) and for an
-- external withdrawal (src/services/external.ts). Each answer is an error code of the spec; an
-- operation it does not know is a programmer error and raises.

CREATE OR REPLACE FUNCTION funding_refusal(p_op text, p_found boolean, p_status text, p_available bigint, p_amount bigint, p_balance_max bigint, p_withdrawn boolean)
RETURNS text LANGUAGE plpgsql IMMUTABLE AS $fn$
BEGIN
CASE p_op
  WHEN 'WITHDRAW' THEN
    RETURN CASE WHEN NOT p_found THEN 'SOURCE_ACCOUNT_NOT_FOUND' WHEN p_status = 'FROZEN' THEN 'ACCOUNT_FROZEN'
                WHEN p_status = 'DISABLED' THEN 'ACCOUNT_DISABLED' WHEN p_available < p_amount THEN 'INSUFFICIENT_BALANCE' END;
  WHEN 'DEPOSIT' THEN
    RETURN CASE WHEN NOT p_found THEN 'TARGET_ACCOUNT_NOT_FOUND' WHEN p_available > p_balance_max - p_amount THEN 'OVERFLOW' END;
  WHEN 'REFUND' THEN
    RETURN CASE WHEN NOT p_withdrawn OR NOT p_found THEN 'REFUND_WITHOUT_WITHDRAW' END;
  ELSE
    RAISE EXCEPTION 'funding_refusal: unknown operation %', p_op USING ERRCODE = '22023';
END CASE;
END
$fn$;
