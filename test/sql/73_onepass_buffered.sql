-- The one-pass transition's fast paths (issue 23, executor/one_pass.cpp "FastPath"): an ungrouped
-- statement over one range column buffers each row's value (float8 as it is, int4 of step 1 as an
-- integer, any other type as its ordinal) and indexes 256 of them at once (since session 20 an int4
-- column of at most 8,192 points, as i here, is counted at once instead: 103_onepass_int_direct,
-- which also covers the buffered int4 path); dx.count(*) without a
-- column counts rows in a 64-bit counter. A state counts its first 256 rows one at a time, so the
-- tables here are larger than that (and not multiples of 256: a partial buffer is counted at the
-- end), in serial and parallel plans. Every answer must be the one the previous plan gives
-- (dxpriv.one_pass = off: dx._linear_transfn, one lookup per row): noiseless sums and counts, and
-- noisy answers under one test seed; NULL, NaN, +-Infinity, values outside the domain (clamped to
-- its ends), grid points and the halves between them.
SET dxpriv.cache_lifetime = 0;
CREATE TABLE ob (k int, f float8, i int, n numeric, h float8, s smallint, e int);
-- f over [0, 1] step 0.001 (the float8 path); i over [-5, 50] step 1 (the int4 path); n over
-- [-2, 3] step 0.01 (a numeric: the ordinal path); h over [-1.234, 2.5] step 0.003 (float8, halves
-- of a decimal grid); s a smallint of step 1 (one row at a time, as before); e an int of step 2 (its ordinal buffered).
INSERT INTO ob
SELECT k,
       CASE k % 17 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN 'Infinity' WHEN 3 THEN '-Infinity'
                   WHEN 4 THEN -0.25 WHEN 5 THEN 7.5 WHEN 6 THEN (k % 1001) / 1000.0 + 0.0005
                   WHEN 7 THEN 0.0005 WHEN 8 THEN 1 WHEN 9 THEN 0 WHEN 10 THEN 0.9995
                   ELSE ((k::bigint * 104729) % 1001) / 1000.0 END,
       CASE k % 13 WHEN 0 THEN NULL WHEN 1 THEN -2147483648 WHEN 2 THEN 2147483647 WHEN 3 THEN -5
                   WHEN 4 THEN 50 WHEN 5 THEN -6 WHEN 6 THEN 51 ELSE (k * 37) % 61 - 7 END,
       CASE k % 11 WHEN 0 THEN NULL WHEN 1 THEN 'NaN' WHEN 2 THEN -2.005 WHEN 3 THEN 3.005 WHEN 4 THEN 1e30
                   WHEN 5 THEN 0.015 ELSE ((k * 7919) % 501)::numeric / 100 - 2 END,
       CASE k % 7 WHEN 0 THEN NULL WHEN 1 THEN -1.234 + ((k % 1245) + 0.5) * 0.003
                  WHEN 2 THEN ((k % 1245) + 0.5)::numeric * 0.003 - 1.234 ELSE -1.234 + (k % 1250) * 0.003 END,
       CASE WHEN k % 19 = 0 THEN NULL ELSE (k % 40) - 10 END,
       CASE WHEN k % 23 = 0 THEN NULL ELSE (k % 45) - 5 END
FROM generate_series(1, 9001) AS k;
ANALYZE ob;
SELECT dx.protect_table('ob', 'Infinity'); -- noiseless
SELECT dx.set_column('ob', 'k', '{"min": 1, "max": 9001}', '{"type": "none"}'),
       dx.set_column('ob', 'f', '{"min": 0, "max": 1, "step": 0.001}', '{"type": "none"}'),
       dx.set_column('ob', 'i', '{"min": -5, "max": 50}', '{"type": "none"}'),
       dx.set_column('ob', 'n', '{"min": -2, "max": 3, "step": 0.01}', '{"type": "none"}'),
       dx.set_column('ob', 'h', '{"min": -1.234, "max": 2.5, "step": 0.003}', '{"type": "none"}'),
       dx.set_column('ob', 's', '{"min": -10, "max": 20}', '{"type": "none"}'),
       dx.set_column('ob', 'e', '{"min": -6, "max": 40, "step": 2}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'ob'::regclass, 1e9);
CREATE TABLE ob_noisy AS SELECT * FROM ob;
ANALYZE ob_noisy;
SELECT dx.protect_table('ob_noisy', 1.0);
SELECT dx.set_column('ob_noisy', c::name, d::jsonb, '{"type": "none"}')
FROM (VALUES ('f', '{"min": 0, "max": 1, "step": 0.001}'), ('i', '{"min": -5, "max": 50}'),
             ('n', '{"min": -2, "max": 3, "step": 0.01}'), ('h', '{"min": -1.234, "max": 2.5, "step": 0.003}'),
             ('s', '{"min": -10, "max": 20}'), ('e', '{"min": -6, "max": 40, "step": 2}')) AS v(c, d);
SELECT dx.grant_budget(current_user::regrole, 'ob_noisy'::regclass, 1e9);

-- the same statement with one pass on (the fast paths) and off (the previous plan), under one seed
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 7373) RETURNS text LANGUAGE plpgsql AS $$
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
-- the seeded answer of a statement in the current plan settings (for serial against parallel)
CREATE FUNCTION pg_temp.seeded(q text, seed int DEFAULT 7373) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; BEGIN
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'SELECT row(t.*)::text FROM (' || q || ') t' INTO r;
	RETURN r;
END $$;
-- whether the current settings give the statement a parallel plan
CREATE FUNCTION pg_temp.parallel_plan(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false; BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		found := found OR l LIKE '%Gather%';
	END LOOP;
	RETURN found;
END $$;

-- noiseless: each column alone (the fast paths), both ways, and against native references where
-- one is easy to state: the int4 column clamped to [-5, 50] (NULL: the grid's first point, as the
-- lookup maps it: -5), the count of rows
SET max_parallel_workers_per_gather = 0;
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.avg(f) AS m FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.avg(i) AS m FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.sum(n) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.avg(n) AS m FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.sum(h) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.sum(s) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.sum(e) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS c FROM ob');
CREATE FUNCTION pg_temp.val(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE r float8; BEGIN EXECUTE q INTO r; RETURN r; END $$;
SELECT pg_temp.val('SELECT dx.sum(i) FROM ob') = (SELECT sum(least(greatest(coalesce(i, -5), -5), 50)) FROM ob) AS int_sum_matches,
       pg_temp.val('SELECT dx.count(*) FROM ob') = 9001 AS count_matches;
-- the float8 column on its 0.001 grid: the rows counted at each point (GROUP BY the column keeps
-- the previous path) give the noiseless sum: sum(point * count) over the grid
SELECT abs(pg_temp.val('SELECT dx.sum(f) FROM ob') -
           pg_temp.val('SELECT sum(q.f * q.c) FROM (SELECT f, dx.count(*) AS c FROM ob GROUP BY f) q')) < 1e-6
       AS float_sum_matches_points;

-- noisy, one seed: the fast paths against the previous plan, serially and in parallel (with and
-- without the leader); several aggregates sharing the state (one column: still the fast path)
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.avg(f) AS m, dx.count(*) AS c FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i) AS s, dx.avg(i) AS m FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(n) AS s, dx.avg(n) AS m FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(h) AS s FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS c FROM ob_noisy');
CREATE TEMP TABLE serial_answers AS
SELECT q, pg_temp.seeded(q) AS a
FROM (VALUES ('SELECT dx.sum(f) AS s, dx.avg(f) AS m FROM ob_noisy'), ('SELECT dx.sum(i) AS s FROM ob_noisy'),
             ('SELECT dx.avg(n) AS m FROM ob_noisy'), ('SELECT dx.count(*) AS c FROM ob_noisy')) AS v(q);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.parallel_plan('SELECT dx.sum(f) FROM ob_noisy') AS parallel;
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.avg(f) AS m, dx.count(*) AS c FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i) AS s, dx.avg(i) AS m FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(n) AS s FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS c FROM ob_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.sum(i) AS s FROM ob');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS c FROM ob');
-- serial and parallel: the same seeded answers
SELECT q, pg_temp.seeded(q) = a AS parallel_equals_serial FROM serial_answers ORDER BY q;
SET parallel_leader_participation = off;
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.count(*) AS c FROM ob_noisy');
SELECT q, pg_temp.seeded(q) = a AS without_leader_equals_serial FROM serial_answers ORDER BY q;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- a table of fewer rows than a buffer (the state never makes one) and an empty table
CREATE TABLE ob_small AS SELECT * FROM ob WHERE k <= 200;
SELECT dx.protect_table('ob_small', 'Infinity');
SELECT dx.set_column('ob_small', c::name, d::jsonb, '{"type": "none"}')
FROM (VALUES ('f', '{"min": 0, "max": 1, "step": 0.001}'), ('i', '{"min": -5, "max": 50}')) AS v(c, d);
SELECT dx.grant_budget(current_user::regrole, 'ob_small'::regclass, 1e9);
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.sum(i) AS t, dx.count(*) AS c FROM ob_small');
DELETE FROM ob_small;
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s FROM ob_small');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS c FROM ob_small');
