-- `transfer_apply_set(items, balance_max)`: the same contract as `transfer_apply`
-- (src/db/migrations/repeatable/transfer_apply.sql: items, paths, answers, locking order, idempotency), built for
-- large batches. Measured on 2 cores: a statement run once per item inside PL/pgSQL costs several
-- times its share of one multi-row statement, so a batch of hundreds (the recovery scan's) runs
-- about twice as fast here, while the HTTP path's batches of a few items run faster through the
-- per-item form, whose fixed cost per batch is smaller. src/db/transfer-writes.ts picks one by
-- batch size, and test/transfers/transfer-apply.test.ts holds the two to the same answers and effects.
--
-- The work is set-based: a fixed number of statements per batch, whatever its size.
--   A. Reads and locks, each only when the batch needs it: which creations exist already (req_id
--      or client_order_id), the transfers that operations on existing transfers name (locked, in
--      req_id order, with the transfer_id, user, asset and amount their records go by), the
--      balance rows the operations touch (locked, in (user, asset) order), the operations
--      already recorded, and the FUNDING targets that do not exist.
--   B. Decisions, in memory, item by item in (user, asset, req_id) order: each operation against
--      the running balance of its account, or answered from its record (idempotency).
--   C. Writes, one statement each: new transfers, moved transfers, compare-and-swaps, operation
--      records, balances (one write per account), history rows, the unfinished list.
-- A creation whose req_id or client_order_id a twin took between A and C makes the whole batch
-- fail with unique_violation, and the caller splits it (src/db/batch.ts); alone, the creation
-- then finds the twin in A.
--
-- Sequential scans are off inside the function, as inside transfer_apply and for the same reason
-- (src/db/migrations/repeatable/transfer_apply.sql says why); CREATE OR REPLACE resets a
-- function's settings to those it names, so the SET stays here.

CREATE OR REPLACE FUNCTION transfer_apply_set(p_items jsonb, p_balance_max bigint) RETURNS jsonb
LANGUAGE plpgsql
SET enable_seqscan = off
AS $fn$
DECLARE
n int := jsonb_array_length(p_items);
v_at timestamptz := now();
v_ms bigint := floor(extract(epoch FROM now()) * 1000);
-- The items, parsed once and sorted by (user, asset, req_id).
i_i bigint[]; i_k text[]; i_r text[]; i_u bigint[]; i_a text[]; i_m bigint[]; i_o text[]; i_e smallint[]; i_c text[];
i_p jsonb[]; i_q jsonb[]; i_tf boolean[]; i_coid text[]; i_st smallint[]; i_tt smallint[]; i_due boolean[];
ix int; idx bigint; st jsonb; j int;
k text; r text; u bigint; a text; m bigint; o text; e smallint; oc smallint; v_tid bigint; v_t jsonb; v_withdraw jsonb;
v_outcome text; v_code text; v_path jsonb; v_rec jsonb; v_n int; v_final smallint; v_terminal boolean; v_found boolean; v_delta bigint;
-- A: what was read and locked.
s_exists text[]; s_notarget text[]; v_locked jsonb; v_recs jsonb;
b_u bigint[]; b_a text[]; b_avail bigint[]; b_status text[]; b_dirty boolean[]; bp int := 1; nb int;
-- B: each item's answer, and what C writes.
res_k text[] := array_fill(NULL::text, ARRAY[n]); res_s smallint[] := array_fill(NULL::smallint, ARRAY[n]);
res_oc text[] := array_fill(NULL::text, ARRAY[n]); res_code text[] := array_fill(NULL::text, ARRAY[n]); res_r text[] := array_fill(NULL::text, ARRAY[n]);
c_r text[] := '{}'; c_u bigint[] := '{}'; c_a text[] := '{}'; c_m bigint[] := '{}'; c_st smallint[] := '{}'; c_tt smallint[] := '{}';
c_s smallint[] := '{}'; c_code text[] := '{}'; c_coid text[] := '{}'; c_due timestamptz[] := '{}';
m_r text[] := '{}'; m_s smallint[] := '{}'; m_code text[] := '{}';
pm_r text[] := '{}'; pm_e smallint[] := '{}'; pm_s smallint[] := '{}'; pm_code text[] := '{}'; pm_t boolean[] := '{}';
o_r text[] := '{}'; o_id bigint[] := '{}'; o_op smallint[] := '{}'; o_code text[] := '{}';
h_r text[] := '{}'; h_f smallint[] := '{}'; h_t smallint[] := '{}'; h_e smallint[] := '{}'; h_d text[] := '{}';
ph_r text[] := '{}'; ph_f smallint[] := '{}'; ph_t smallint[] := '{}'; ph_e smallint[] := '{}'; ph_d text[] := '{}';
a_r text[] := '{}'; a_u bigint[] := '{}'; d_r text[] := '{}';
w_ids jsonb := '{}'; v_moved text[]; v_count int;
BEGIN
SELECT array_agg(x.i ORDER BY x.u, x.a, x.r), array_agg(x.k ORDER BY x.u, x.a, x.r), array_agg(x.r ORDER BY x.u, x.a, x.r),
       array_agg(x.u ORDER BY x.u, x.a, x.r), array_agg(x.a ORDER BY x.u, x.a, x.r), array_agg(x.m ORDER BY x.u, x.a, x.r),
       array_agg(x.o ORDER BY x.u, x.a, x.r), array_agg(x.e ORDER BY x.u, x.a, x.r), array_agg(x.c ORDER BY x.u, x.a, x.r),
       array_agg(x.p ORDER BY x.u, x.a, x.r), array_agg(x.q ORDER BY x.u, x.a, x.r), array_agg(x.tf IS NOT NULL ORDER BY x.u, x.a, x.r),
       array_agg(x.coid ORDER BY x.u, x.a, x.r), array_agg(x.st ORDER BY x.u, x.a, x.r), array_agg(x.tt ORDER BY x.u, x.a, x.r),
       array_agg(x.due IS NOT NULL ORDER BY x.u, x.a, x.r)
  INTO i_i, i_k, i_r, i_u, i_a, i_m, i_o, i_e, i_c, i_p, i_q, i_tf, i_coid, i_st, i_tt, i_due
  FROM ROWS FROM (jsonb_to_recordset(p_items)
         AS (k text, r text, u bigint, a text, m bigint, o text, e smallint, c text, p jsonb, q jsonb, tf int, coid text, st smallint, tt smallint, due int))
       WITH ORDINALITY AS x(k, r, u, a, m, o, e, c, p, q, tf, coid, st, tt, due, i);

-- The users' locks first, in user order (as transfer_apply takes them), for every item that
-- may wait or be waited on: an operation, a client_order_id, or a move (a plain move locks its
-- transfer row, and a twin's insert waits on it). Each guards every lock taken below on that
-- user's rows, so two batches of either form cannot deadlock. A bare creation (a new req_id,
-- no operation, no client_order_id) neither waits nor is waited on, and goes without.
PERFORM pg_advisory_xact_lock(hashtextextended('transfer_apply:user:' || y.u, 0))
   FROM (SELECT DISTINCT z.u FROM unnest(i_k, i_u, i_o, i_coid) AS z(k, u, o, coid) WHERE z.k = 'm' OR z.o IS NOT NULL OR z.coid IS NOT NULL ORDER BY z.u) AS y;

-- A. Reads and locks, each only when the batch needs it.
s_exists := '{}'; s_notarget := '{}'; v_locked := '{}'; v_recs := '{}'; b_u := '{}'; b_a := '{}'; b_avail := '{}'; b_status := '{}';
IF 'c' = ANY (i_k) THEN
  s_exists := ARRAY(SELECT t.req_id FROM transfers_tb AS t WHERE t.req_id = ANY (i_r));
  IF EXISTS (SELECT 1 FROM unnest(i_coid) AS c WHERE c IS NOT NULL) THEN
    s_exists := s_exists || ARRAY(
      SELECT y.r FROM unnest(i_k, i_r, i_u, i_coid) AS y(k, r, u, coid)
       WHERE y.k = 'c' AND y.coid IS NOT NULL AND EXISTS (SELECT 1 FROM transfers_tb AS t WHERE t.user_id = y.u AND t.client_order_id = y.coid));
  END IF;
END IF;
IF EXISTS (SELECT 1 FROM unnest(i_k, i_o) AS y(k, o) WHERE y.k <> 'c' AND y.o IS NOT NULL) THEN
  SELECT coalesce(jsonb_object_agg(l.req_id, jsonb_build_array(l.state, l.transfer_id::text, l.user_id::text, l.asset, l.amount::text)), '{}')
    INTO v_locked FROM (
    SELECT t.req_id, t.state, t.transfer_id, t.user_id, t.asset, t.amount FROM transfers_tb AS t
     WHERE t.req_id = ANY (ARRAY(SELECT y.r FROM unnest(i_k, i_r, i_o) AS y(k, r, o) WHERE y.k <> 'c' AND y.o IS NOT NULL))
     ORDER BY t.req_id FOR UPDATE) AS l;
END IF;
IF EXISTS (SELECT 1 FROM unnest(i_o) AS y WHERE y IS NOT NULL) THEN
  SELECT coalesce(array_agg(f.user_id ORDER BY f.user_id, f.asset), '{}'), coalesce(array_agg(f.asset ORDER BY f.user_id, f.asset), '{}'),
         coalesce(array_agg(f.available ORDER BY f.user_id, f.asset), '{}'), coalesce(array_agg(f.status ORDER BY f.user_id, f.asset), '{}')
    INTO b_u, b_a, b_avail, b_status FROM (
    SELECT b.user_id, b.asset, b.available, b.status FROM funding_balances AS b
     WHERE b.user_id = ANY (i_u)
       AND (b.user_id, b.asset) IN (SELECT y.u, y.a FROM unnest(i_u, i_a, i_o) AS y(u, a, o) WHERE y.o IS NOT NULL)
     ORDER BY b.user_id, b.asset FOR UPDATE) AS f;
  -- Read after the balance locks: a concurrent twin of an operation has committed its record.
  -- Keyed 'transfer_id/op code', each the refusal's code or null (applied).
  IF v_locked <> '{}' THEN
    SELECT coalesce(jsonb_object_agg(f.transfer_id || '/' || f.op, jsonb_build_array(f.code)), '{}')
      INTO v_recs FROM funding_operations AS f
     WHERE f.transfer_id = ANY (ARRAY(SELECT (l.value->>1)::bigint FROM jsonb_each(v_locked) AS l));
  END IF;
END IF;
IF true = ANY (i_tf) THEN
  s_notarget := ARRAY(SELECT y.r FROM unnest(i_r, i_u, i_a, i_tf) AS y(r, u, a, tf)
                       WHERE y.tf AND NOT EXISTS (SELECT 1 FROM funding_balances AS b WHERE b.user_id = y.u AND b.asset = y.a));
END IF;
nb := cardinality(b_u);
b_dirty := array_fill(false, ARRAY[greatest(nb, 1)]);

-- B. Decisions, in (user, asset, req_id) order, the same order as the balance arrays.
FOR ix IN 1 .. n LOOP
  idx := i_i[ix]; k := i_k[ix]; r := i_r[ix]; u := i_u[ix]; a := i_a[ix]; m := i_m[ix]; o := i_o[ix]; e := i_e[ix];
  v_outcome := NULL; v_code := i_c[ix]; v_path := i_p[ix]; v_delta := 0;
  res_r[idx] := r;
  IF k = 'c' AND r = ANY (s_exists) THEN res_k[idx] := 'exists'; CONTINUE; END IF;
  IF k = 'm' AND o IS NOT NULL AND (v_locked->r->>0) IS DISTINCT FROM e::text THEN res_k[idx] := 'lost'; CONTINUE; END IF;

  IF r = ANY (s_notarget) THEN
    -- A FUNDING target that does not exist is a business rejection before any funds move.
    v_path := i_q[ix];
    v_code := 'TARGET_ACCOUNT_NOT_FOUND';
  ELSIF o IS NOT NULL THEN
    WHILE bp <= nb AND (b_u[bp] < u OR (b_u[bp] = u AND b_a[bp] < a)) LOOP bp := bp + 1; END LOOP;
    v_found := bp <= nb AND b_u[bp] = u AND b_a[bp] = a;
    oc := CASE o WHEN 'WITHDRAW' THEN 1 WHEN 'DEPOSIT' THEN 2 WHEN 'REFUND' THEN 3 END;
    v_tid := NULL; v_rec := NULL; v_withdraw := NULL;
    IF k <> 'c' THEN
      -- An operation belongs to its transfer, with the transfer's user, asset and amount.
      v_t := v_locked->r;
      IF v_t IS NULL OR (v_t->>2)::bigint <> u OR v_t->>3 <> a OR (v_t->>4)::bigint <> m THEN
        res_k[idx] := 'held'; res_oc[idx] := 'CONFLICT';
        CONTINUE;
      END IF;
      v_tid := (v_t->>1)::bigint;
      v_rec := v_recs->(v_tid || '/' || oc);
      v_withdraw := v_recs->(v_tid || '/1');
    END IF;
    IF v_rec IS NOT NULL THEN
      -- Answered before: the first outcome, and no effect.
      v_code := v_rec->>0;
      v_outcome := CASE WHEN v_code IS NULL THEN 'APPLIED' ELSE 'REJECTED' END;
    ELSE
      -- The rules: funding_refusal (src/db/migrations/repeatable/funding_refusal.sql), shared with the per-item form.
      v_code := funding_refusal(o, v_found, b_status[bp], b_avail[bp], m, p_balance_max,
                                o = 'REFUND' AND v_withdraw IS NOT NULL AND v_withdraw->>0 IS NULL);
      v_delta := CASE WHEN o = 'WITHDRAW' THEN -m ELSE m END;
      v_outcome := CASE WHEN v_code IS NULL THEN 'APPLIED' ELSE 'REJECTED' END;
      IF v_code IS NULL THEN
        b_avail[bp] := b_avail[bp] + v_delta;
        b_dirty[bp] := true;
      END IF;
      o_r := o_r || r; o_id := o_id || v_tid; o_op := o_op || oc; o_code := o_code || v_code;
    END IF;
    res_oc[idx] := v_outcome;
    res_code[idx] := v_code;
    IF k = 'o' THEN res_k[idx] := 'op'; CONTINUE; END IF;
    IF v_outcome = 'REJECTED' THEN
      -- A refused refund is never final: the transfer stays COMPENSATING for an operator.
      IF o = 'REFUND' THEN res_k[idx] := 'held'; CONTINUE; END IF;
      v_path := i_q[ix];
    END IF;
  END IF;

  -- Where the path ends (steps are [state, event, terminal]), and its history rows.
  v_n := jsonb_array_length(v_path);
  v_final := e;
  v_terminal := false;
  IF v_n > 0 THEN
    v_final := (v_path->(v_n - 1)->>0)::smallint;
    v_terminal := (v_path->(v_n - 1)->>2)::boolean;
  END IF;
  res_k[idx] := 'moved'; res_s[idx] := v_final; res_code[idx] := v_code;
  IF k = 'c' THEN
    c_r := c_r || r; c_u := c_u || u; c_a := c_a || a; c_m := c_m || m; c_st := c_st || i_st[ix]; c_tt := c_tt || i_tt[ix];
    c_s := c_s || v_final; c_code := c_code || v_code; c_coid := c_coid || i_coid[ix]; c_due := c_due || (CASE WHEN i_due[ix] THEN v_at END);
    h_r := h_r || r; h_f := h_f || NULL::smallint; h_t := h_t || e; h_e := h_e || 0::smallint; h_d := h_d || NULL::text;
    IF NOT v_terminal THEN a_r := a_r || r; a_u := a_u || u; END IF;
  ELSIF o IS NOT NULL THEN
    m_r := m_r || r; m_s := m_s || v_final; m_code := m_code || v_code;
    IF v_terminal THEN d_r := d_r || r; END IF;
  ELSE
    pm_r := pm_r || r; pm_e := pm_e || e; pm_s := pm_s || v_final; pm_code := pm_code || v_code; pm_t := pm_t || v_terminal;
  END IF;
  FOR j IN 0 .. v_n - 1 LOOP
    st := v_path->j;
    IF k = 'm' AND o IS NULL THEN
      ph_r := ph_r || r; ph_f := ph_f || e; ph_t := ph_t || (st->>0)::smallint; ph_e := ph_e || (st->>1)::smallint; ph_d := ph_d || (CASE WHEN j = v_n - 1 THEN v_code END);
    ELSE
      h_r := h_r || r; h_f := h_f || e; h_t := h_t || (st->>0)::smallint; h_e := h_e || (st->>1)::smallint; h_d := h_d || (CASE WHEN j = v_n - 1 THEN v_code END);
    END IF;
    e := (st->>0)::smallint;
  END LOOP;
END LOOP;

-- C. Writes, one statement each.
IF cardinality(c_r) > 0 THEN
  WITH created AS (
    INSERT INTO transfers_tb (req_id, user_id, asset, amount, transfer_type, source_type, target_type, state, error_code, client_order_id, next_retry_at, created_at, updated_at)
    SELECT x.r, x.u, x.a, x.m, x.st, x.st, x.tt, x.s, x.code, x.coid, x.due, v_at, v_at
      FROM unnest(c_r, c_u, c_a, c_m, c_st, c_tt, c_s, c_code, c_coid, c_due) AS x(r, u, a, m, st, tt, s, code, coid, due)
    ON CONFLICT DO NOTHING
    RETURNING req_id, transfer_id)
  SELECT count(*), coalesce(jsonb_object_agg(req_id, transfer_id::text), '{}') INTO v_count, v_rec FROM created;
  IF v_count <> cardinality(c_r) THEN
    RAISE EXCEPTION 'transfer_apply: % of % creations found their req_id or client_order_id taken by a twin', cardinality(c_r) - v_count, cardinality(c_r)
      USING ERRCODE = '23505';
  END IF;
  w_ids := w_ids || v_rec;
END IF;
IF cardinality(m_r) > 0 THEN
  -- These transfers are locked (A), so each is still where the item expects it.
  WITH moved AS (
    UPDATE transfers_tb AS t
       SET state = x.s, updated_at = v_at, next_retry_at = NULL, attempts = 0, error_code = COALESCE(x.code, t.error_code)
      FROM unnest(m_r, m_s, m_code) AS x(r, s, code)
     WHERE t.req_id = ANY (m_r) AND t.req_id = x.r
    RETURNING t.req_id, t.transfer_id)
  SELECT count(*), coalesce(jsonb_object_agg(req_id, transfer_id::text), '{}') INTO v_count, v_rec FROM moved;
  -- Pair assertion of the lock: an operation is never recorded for a transfer that did not move.
  IF v_count <> cardinality(m_r) THEN
    RAISE EXCEPTION 'transfer_apply: % of % locked transfers moved', v_count, cardinality(m_r) USING ERRCODE = 'XX000';
  END IF;
  w_ids := w_ids || v_rec;
END IF;
v_moved := '{}';
IF cardinality(pm_r) > 0 THEN
  WITH moved AS (
    UPDATE transfers_tb AS t
       SET state = x.s, updated_at = v_at, next_retry_at = NULL, attempts = 0, error_code = COALESCE(x.code, t.error_code)
      FROM unnest(pm_r, pm_e, pm_s, pm_code) AS x(r, e, s, code)
     WHERE t.req_id = ANY (pm_r) AND t.req_id = x.r AND t.state = x.e
    RETURNING t.req_id, t.transfer_id)
  SELECT coalesce(jsonb_object_agg(req_id, transfer_id::text), '{}'), coalesce(array_agg(req_id), '{}') INTO v_rec, v_moved FROM moved;
  w_ids := w_ids || v_rec;
  d_r := d_r || ARRAY(SELECT x.r FROM unnest(pm_r, pm_t) AS x(r, t) WHERE x.t AND x.r = ANY (v_moved));
END IF;
IF cardinality(o_r) > 0 THEN
  -- A creation's operation names the transfer_id its insert answered (w_ids).
  INSERT INTO funding_operations (transfer_id, op, code)
  SELECT coalesce(x.id, (w_ids->>x.r)::bigint), x.op, x.code FROM unnest(o_r, o_id, o_op, o_code) AS x(r, id, op, code);
END IF;
IF true = ANY (b_dirty) THEN
  UPDATE funding_balances AS f SET available = x.v, updated_at = v_at
    FROM unnest(b_u, b_a, b_avail, b_dirty[1:nb]) AS x(u, a, v, dirty)
   WHERE f.user_id = ANY (b_u) AND f.user_id = x.u AND f.asset = x.a AND x.dirty;
END IF;

-- History rows name their transfer by the transfer_id its write answered (w_ids, by req_id).
IF cardinality(h_r) > 0 THEN
  INSERT INTO transfer_state_history (transfer_id, from_state, to_state, event, detail)
  SELECT (w_ids->>x.r)::bigint, x.f, x.t, x.e, x.d FROM unnest(h_r, h_f, h_t, h_e, h_d) WITH ORDINALITY AS x(r, f, t, e, d, i) ORDER BY x.i;
END IF;
IF cardinality(a_r) > 0 THEN
  INSERT INTO transfers_active (req_id, user_id) SELECT * FROM unnest(a_r, a_u);
END IF;
IF cardinality(d_r) > 0 THEN
  DELETE FROM transfers_active WHERE req_id = ANY (d_r);
END IF;
-- The history of the compare-and-swaps that won (other transfers than the rows above).
IF cardinality(v_moved) > 0 THEN
  INSERT INTO transfer_state_history (transfer_id, from_state, to_state, event, detail)
  SELECT (w_ids->>x.r)::bigint, x.f, x.t, x.e, x.d FROM unnest(ph_r, ph_f, ph_t, ph_e, ph_d) WITH ORDINALITY AS x(r, f, t, e, d, i) WHERE x.r = ANY (v_moved) ORDER BY x.i;
END IF;

-- The answers, in input order.
RETURN (SELECT jsonb_agg(
          CASE WHEN x.k = 'moved' AND NOT w_ids ? x.r THEN '{"k":"lost"}'::jsonb
               WHEN x.k = 'moved' THEN jsonb_build_object('k', 'moved', 's', x.s, 'at', v_ms, 'id', w_ids->>x.r, 'oc', x.oc, 'code', x.code)
               WHEN x.k IN ('held', 'op') THEN jsonb_build_object('k', x.k, 'oc', x.oc, 'code', x.code)
               ELSE jsonb_build_object('k', x.k) END ORDER BY x.i)
          FROM unnest(res_k, res_r, res_s, res_oc, res_code) WITH ORDINALITY AS x(k, r, s, oc, code, i));
END
$fn$;
