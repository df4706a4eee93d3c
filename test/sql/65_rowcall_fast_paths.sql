-- The one-pass transition's per-row fast paths (issue 23, executor/row_point.h): a statement whose
-- histogram has no column (count(*)), one range column over int2/int4 with step 1 (value - lo,
-- clamped) or one other range column (int8, float8, numeric: range_index inline, with its rounding
-- half away from zero computed without a library call) maps each row without the generic column
-- loop, and its range constants travel in the layout text ('q<lo>:<hi>:<step>;') instead of three
-- arguments. The points must be exactly those of the generic indexers, which the previous plan
-- (dxpriv.one_pass = off: one dx._weigh lookup per row, layout 'r' with the constants as arguments)
-- still uses: every value's point is compared both ways on a noiseless table, one group per value,
-- against a native reference of the clamping rule, and noisy statements both ways under one seed.
SET dxpriv.cache_lifetime = 0;
CREATE TABLE rc (k int, i4 int, i2 smallint, h int, i8 bigint, f float8, p float8, n numeric);
-- k: one row group per tricky value; i4 over [0, 50] step 1 (unit integer), i2 over [-5, 5]
-- (unit integer, int2), h over [-4, 10] step 2 (int4, not a unit step: range_index), i8 over
-- [0, 1000] step 7 (int8), f over [0, 1] step 0.001 (float8, a division), p over [-2, 2] step
-- 0.25 (float8, a power of two: a multiplication), n over [0, 20000] step 1 (numeric)
INSERT INTO rc VALUES
 (0, 0, 0, 0, 0, 0, 0, 0),
 (1, 50, 5, 10, 1000, 1, 2, 100000),
 (2, 51, 6, 11, 1001, 1.0005, 2.125, 100000.5),
 (3, -1, -6, -4, -1, -0.0005, -2.125, -0.5),
 (4, 2147483647, 32767, 2147483647, 9223372036854775807, 'Infinity', 'Infinity', 1e30),
 (5, -2147483648, -32768, -2147483648, -9223372036854775808, '-Infinity', '-Infinity', -1e30),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (7, 25, 1, 3, 3, 'NaN', 'NaN', 'NaN'),
 (8, 24, -1, -3, 4, 0.0005, 0.125, 0.5),
 (9, 26, 2, 9, 10, 0.0015, 0.375, 1.5),
 (10, 49, -5, -2, 10, 0.9995, -0.125, 2.5),
 (11, 1, 3, 1, 996, 0.4995, 1.875, 99999.5),
 (12, 33, 4, 7, 997, 0.12345, -1.875, 12345.678),
 (13, 17, -4, 5, 11, 0.5, -0.0, 77777.49999999999),
 (14, 8, -2, -1, 17, 0.00049999999999999996, 0.12499999999999999, 0.49999999999999999),
 (15, 2, 0, 8, 14, 0.99949999999999994, 1.9999999999999998, 3.5),
 (16, 3, 5, 6, 21, 1e-300, 5e-324, 1e-25),
 (17, 4, -3, 4, 500, 0.7775, -0.625, 50000.5),
 (18, 5, 2, 2, 503, 0.3335, 0.875, 123456789012345678.9),
 (19, 6, -1, 0, 1000000, -1e300, 1e300, 100000.49999999999999);
CREATE TABLE rc_noisy AS SELECT * FROM rc;
-- bulk: 30,000 deterministic rows spread over and around every domain
INSERT INTO rc_noisy
SELECT i % 20, (i * 13) % 61 - 5, ((i * 7) % 15 - 7)::smallint, (i * 11) % 17 - 5, (i::bigint * 104729) % 1201 - 100,
       ((i::bigint * 7919) % 24001 - 2000) / 20000.0, ((i * 37) % 41 - 20) / 8.0,
       round(((i::bigint * 104729) % 240001 - 20000)::numeric / 2, i % 3)
FROM generate_series(1, 30000) AS i;
ANALYZE rc;
ANALYZE rc_noisy;
SELECT dx.protect_table('rc', 'Infinity'); -- noiseless: the answers are the points' sums
SELECT dx.protect_table('rc_noisy', 1.0);
SELECT t, dx.set_column(t, 'k', '{"min": 0, "max": 19}', '{"type": "none"}'),
       dx.set_column(t, 'i4', '{"min": 0, "max": 50}', '{"type": "none"}'),
       dx.set_column(t, 'i2', '{"min": -5, "max": 5}', '{"type": "none"}'),
       dx.set_column(t, 'h', '{"min": -4, "max": 10, "step": 2}', '{"type": "none"}'),
       dx.set_column(t, 'i8', '{"min": 0, "max": 1000, "step": 7}', '{"type": "none"}'),
       dx.set_column(t, 'f', '{"min": 0, "max": 1, "step": 0.001}', '{"type": "none"}'),
       dx.set_column(t, 'p', '{"min": -2, "max": 2, "step": 0.25}', '{"type": "none"}'),
       dx.set_column(t, 'n', '{"min": 0, "max": 20000, "step": 1}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, t::regclass, 1e9)
FROM (VALUES ('rc'), ('rc_noisy')) AS v(t);

-- the one-pass layout carries the range constants (a plan of the fast path), the previous one not
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; r text := ''; BEGIN
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP r := r || l || E'\n'; END LOOP;
	RETURN r;
END $$;
SELECT substring(pg_temp.plan_text('SELECT dx.sum(f) FROM rc') FROM 'dx\._onepass_sum\([^)]*\)') AS on_plan;
SET dxpriv.one_pass = off;
SELECT pg_temp.plan_text('SELECT dx.sum(f) FROM rc') ~ 'dx\._weigh\(.*''r''::text' AS off_plan_is_weigh;
RESET dxpriv.one_pass;
-- (the grouped statement unfolded: folded, dxpriv.group_fold, the key stays in the point, regress 64)
SET dxpriv.group_fold = off;
SELECT substring(pg_temp.plan_text('SELECT k, dx.sum(h) FROM rc GROUP BY k') FROM 'dx\._onepass_sum\([^)]*\)') AS keyed_plan;
RESET dxpriv.group_fold;
SELECT substring(pg_temp.plan_text('SELECT k, dx.sum(h) FROM rc GROUP BY k') FROM 'dx\._fold_state\([^)]*\)') AS folded_plan;

-- each value's point, one group per value (k is a key column: 'Q', the value column the fast
-- path), one column per statement, one pass on and off; and the native clamping rule: (v - lo) /
-- step rounded half away from zero, clamped to the grid, NULL and NaN at the domain's minimum
CREATE FUNCTION pg_temp.points(col text, onepass text) RETURNS TABLE (k int, v float8) LANGUAGE plpgsql AS $$ BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', onepass, true);
	RETURN QUERY EXECUTE format('SELECT r.k, dx.sum(r.%I) FROM rc r GROUP BY r.k', col);
END $$;
CREATE TEMP TABLE pts_on AS SELECT c, p.* FROM unnest('{i4,i2,h,i8,f,p,n}'::text[]) AS c, pg_temp.points(c, 'on') AS p;
CREATE TEMP TABLE pts_off AS SELECT c, p.* FROM unnest('{i4,i2,h,i8,f,p,n}'::text[]) AS c, pg_temp.points(c, 'off') AS p;
SELECT (SELECT count(*) FROM pts_on) AS points,
       (SELECT count(*) FROM ((TABLE pts_on EXCEPT TABLE pts_off) UNION ALL (TABLE pts_off EXCEPT TABLE pts_on)) d) AS differences;
-- (the quotient in float8, rounded half away from zero as its integer part plus one when its
-- fraction, exact in float8, is at least 0.5; the last point at floor((hi - lo) / step))
CREATE FUNCTION pg_temp.clamp(v float8, lo float8, hi float8, step float8) RETURNS float8 LANGUAGE sql AS $$
	SELECT CASE WHEN v IS NULL OR v = 'NaN' THEN lo
	            ELSE lo + step * least(greatest(CASE WHEN x - floor(x) >= 0.5 THEN floor(x) + 1 ELSE floor(x) END, 0),
	                                   floor((hi - lo) / step)) END
	FROM (SELECT (v - lo) / step AS x) q $$;
SELECT k, max(v) FILTER (WHERE c = 'i4') AS i4, max(v) FILTER (WHERE c = 'i2') AS i2, max(v) FILTER (WHERE c = 'h') AS h,
       max(v) FILTER (WHERE c = 'i8') AS i8, max(v) FILTER (WHERE c = 'f') AS f, max(v) FILTER (WHERE c = 'p') AS p,
       max(v) FILTER (WHERE c = 'n') AS n
FROM pts_on GROUP BY k ORDER BY k;
-- the reference (exact for the integer and power-of-two grids; f within a thousandth of its grid
-- step, as its points are decimal): no row disagrees
SELECT r.k, o.c, o.v
FROM rc r JOIN pts_on o USING (k)
WHERE NOT CASE o.c WHEN 'i4' THEN pg_temp.clamp(r.i4, 0, 50, 1) = o.v WHEN 'i2' THEN pg_temp.clamp(r.i2, -5, 5, 1) = o.v
                   WHEN 'h' THEN pg_temp.clamp(r.h, -4, 10, 2) = o.v WHEN 'i8' THEN pg_temp.clamp(r.i8, 0, 1000, 7) = o.v
                   WHEN 'f' THEN abs(pg_temp.clamp(r.f, 0, 1, 0.001) - o.v) < 1e-9
                   WHEN 'p' THEN pg_temp.clamp(r.p, -2, 2, 0.25) = o.v ELSE true END
ORDER BY r.k, o.c;

-- ungrouped (no key column: the fast path alone), one column per statement (each its own shape),
-- serially, in parallel and in parallel without the leader, on and off
CREATE FUNCTION pg_temp.one(col text, onepass text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', onepass, true);
	EXECUTE format('SELECT row(dx.sum(%1$I), dx.count(*), dx.avg(%1$I), dx.count(*) FILTER (WHERE %1$I > 0))::text FROM rc', col) INTO r;
	RETURN r;
END $$;
SELECT c, pg_temp.one(c, 'on') AS one_pass, pg_temp.one(c, 'on') = pg_temp.one(c, 'off') AS equal_off
FROM unnest('{i4,i2,h,i8,f,p,n}'::text[]) AS c ORDER BY c;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT c, pg_temp.one(c, 'on') = pg_temp.one(c, 'off') AS parallel_equal FROM unnest('{i4,i2,h,i8,f,p,n}'::text[]) AS c ORDER BY c;
SET parallel_leader_participation = off;
SELECT c, pg_temp.one(c, 'on') = pg_temp.one(c, 'off') AS no_leader_equal FROM unnest('{i4,i2,h,i8,f,p,n}'::text[]) AS c ORDER BY c;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;

-- noisy statements both ways under one test seed (as 48_one_pass): equal answers row for row
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 6565) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_on bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.cmp_on, pg_temp.cmp_off;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_off AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_on AS ' || q;
	SELECT count(*) INTO n FROM ((SELECT * FROM cmp_on EXCEPT ALL SELECT * FROM cmp_off)
	                              UNION ALL (SELECT * FROM cmp_off EXCEPT ALL SELECT * FROM cmp_on)) d;
	SELECT count(*) INTO rows_on FROM cmp_on;
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_on || ' rows';
END $$;
SET max_parallel_workers_per_gather = 0;
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i4) AS s FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i2) AS s, dx.avg(i2) AS a FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(h) AS s, dx.count(*) AS c FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i8) AS s FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.avg(f) AS a FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(p) AS s FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(n) AS s, dx.avg(n) AS a FROM rc_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS c FROM rc_noisy WHERE i4 > 20 AND f < 0.5');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i4) FILTER (WHERE p > 0) AS s, dx.count(*) FILTER (WHERE h < 2) AS c FROM rc_noisy');
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT k, dx.count(*) AS c, dx.sum(f) AS s FROM rc_noisy GROUP BY k');
SELECT pg_temp.same_both_ways('SELECT h, dx.count(*) AS c, dx.sum(i4) AS s FROM rc_noisy GROUP BY h');
RESET enable_hashagg;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.sum(i4) AS t, dx.count(*) AS c FROM rc_noisy');
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- the shared aggregates stay refused when written by hand, with the inline layout too (42501;
-- its parsing is checked by the statements above and by the executor's layout checks)
CREATE TABLE rc_plain (v int);
INSERT INTO rc_plain VALUES (1), (2);
SELECT dx._onepass_count('q0:50:1;', true, 0, true, v) FROM rc_plain;
SELECT dx._onepass_sum('Q0:50:1;', true, 0, true, v) FROM rc_plain;
-- and in the layout with its flags (rowargs): a widened domain, the present flag and the group
-- made arguments, a dense flag with key columns
SELECT dx._onepass_count('d|q-1e9:1e9:1;', v) FROM rc_plain;
SELECT dx._onepass_sum('dgp|q0:50:1;', 7, false, v) FROM rc_plain;
SELECT dx._onepass_avg('d|Q0:50:1;', v) FROM rc_plain;
SELECT dx._fold_state('|q0:50:1;', v) FROM rc_plain;
