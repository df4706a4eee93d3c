-- review9: adversarial review of the one-pass transition's Int4Dense path (executor/one_pass.cpp,
-- since ef747b8: an ungrouped int4 column of step 1 in a dense histogram of at most 8,192 points is
-- counted at once, unit_int_index(value, lo, size), NULL at point 0, a 16-bit counter and a carry of
-- 65,536). Nothing below found a wrong count; each line is what must hold for an attack to fail.
-- A. the histogram itself, point by point, against the native clamped GROUP BY: a superuser's own
--    aggregate over dx._onepass_transfn with dx._onepass_serialize as its final function (the
--    shape of dx._fold_state) shows every point's count. 65,535 / 65,536 / 131,072 / 262,144 rows at four
--    points (no carry, one, two, four), NULLs, INT_MIN and INT_MAX, over: exactly 8,192 points (Int4Dense)
--    and 8,193 (the buffered Int4 path), a layout at INT_MIN and one ending at INT_MAX, one point,
--    a lower bound far below int4 (every value at the last point); serially, in parallel (workers'
--    states serialised and combined by the leader) and without the leader; one state per group of a
--    hash aggregate (spilled to disk; partial states in parallel) and at each rescan of a subquery.
-- B. the same shapes through dx.sum / dx.count on noiseless tables: the native clamped sum, with
--    dxpriv.one_pass on and off; a NULL-only table and an empty one.
-- C. the folded GROUP BY (dx._fold_state over the key column alone takes Int4Dense) and open-key
--    partitions (one Int4Dense state per partition): per group, the native count / the plan with
--    one pass off under one seed.
-- D. odd layouts in a superuser's direct calls: clean errors; the internal aggregates refused to
--    the superuser and to an analyst; an analyst cannot build an aggregate over the transition.
SET dxpriv.cache_lifetime = 0;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE r9_raw (i int);
INSERT INTO r9_raw SELECT 1 FROM generate_series(1, 65535);
INSERT INTO r9_raw SELECT 2 FROM generate_series(1, 65536);
INSERT INTO r9_raw SELECT 3 FROM generate_series(1, 131072);
INSERT INTO r9_raw SELECT 5 FROM generate_series(1, 262144); -- (in parallel: a carry in every process's state)
INSERT INTO r9_raw SELECT CASE g % 7 WHEN 0 THEN NULL WHEN 1 THEN -2147483648 WHEN 2 THEN 2147483647
                                    WHEN 3 THEN 0 WHEN 4 THEN 8191 WHEN 5 THEN 8192 ELSE g % 23 - 4 END
FROM generate_series(1, 2001) g;
ANALYZE r9_raw;
CREATE TABLE r9_native AS SELECT i, count(*) AS n FROM r9_raw GROUP BY i; -- (the native reference's rows)

-- A. the histogram point by point
CREATE AGGREGATE public.r9_hist(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, FINALFUNC = dx._onepass_serialize,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
-- (public.onepass_hist, 00_setup: every point met, read from either version of the bytes)
-- the histogram of layout 'd|q<lo>:<hi>:1;' over r9_raw.i against the native count of each clamped value
CREATE FUNCTION pg_temp.points_match(lo bigint, hi bigint) RETURNS text LANGUAGE plpgsql AS $$
DECLARE b bytea; bad bigint; npoints bigint; nrows bigint; BEGIN
	EXECUTE format('SELECT public.r9_hist(%L, i) FROM r9_raw', format('d|q%s:%s:1;', lo, hi)) INTO b;
	SELECT count(*) INTO bad FROM ((SELECT * FROM public.onepass_hist(b)
	     EXCEPT ALL SELECT least(greatest(coalesce(i - lo, 0), 0), hi - lo), sum(n) FROM r9_native GROUP BY 1)
	  UNION ALL (SELECT least(greatest(coalesce(i - lo, 0), 0), hi - lo), sum(n) FROM r9_native GROUP BY 1
	     EXCEPT ALL SELECT * FROM public.onepass_hist(b))) d;
	SELECT count(*), sum(n) INTO npoints, nrows FROM public.onepass_hist(b);
	RETURN CASE WHEN bad = 0 AND get_byte(b, 5) = 1 AND ('x' || encode(substring(b FROM 7 FOR 8), 'hex'))::bit(64)::bigint = hi - lo + 1
	            THEN format('matches (%s points met, %s rows)', npoints, nrows)
	            ELSE format('DIFFERENT: %s points differ', bad) END;
END $$;
CREATE FUNCTION pg_temp.all_layouts() RETURNS TABLE (layout text, result text) LANGUAGE sql AS $$
SELECT l, pg_temp.points_match(lo, hi) FROM (VALUES
	('8,192 points (Int4Dense)', 0, 8191), ('8,193 points (buffered)', 0, 8192),
	('8,192 from INT_MIN', -2147483648, -2147475457), ('8,192 to INT_MAX', 2147475456, 2147483647),
	('one point', 2, 2), ('far below int4', -1000000000000, -999999991809),
	('-4 .. 18', -4, 18)) AS v(l, lo, hi) $$;
SELECT * FROM pg_temp.all_layouts();
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT public.r9_hist(''d|q0:8191:1;'', i) FROM r9_raw', '%Partial Aggregate%') AS parallel;
SELECT * FROM pg_temp.all_layouts();
SET parallel_leader_participation = off;
SELECT * FROM pg_temp.all_layouts();
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 0;
-- one Int4Dense state per group of a hash aggregate (as open-key partitions have them): spilled to
-- disk under a small work_mem (its groups' rows counted again from the spill files), and partial
-- states of a parallel hash aggregate combined by the leader; a state rebuilt at each rescan of a
-- correlated subquery. Per group and point, the native count.
CREATE TABLE r9_keys AS SELECT (k::bigint * 7919) % 5000 AS key, CASE WHEN k % 11 = 0 THEN NULL ELSE k % 19 - 2 END AS v
FROM generate_series(1, 150000) k;
INSERT INTO r9_keys SELECT 5, 3 FROM generate_series(1, 70000);
ANALYZE r9_keys;
CREATE FUNCTION pg_temp.groups_match() RETURNS text LANGUAGE plpgsql AS $$
DECLARE bad bigint; ngroups bigint; BEGIN
	CREATE TEMP TABLE r9_h AS SELECT key, public.r9_hist('d|q0:15:1;', v) AS b FROM r9_keys GROUP BY key;
	SELECT count(*) INTO bad FROM (
	  (SELECT h.key, x.point, x.n FROM r9_h h, LATERAL public.onepass_hist(h.b) x
	   EXCEPT ALL SELECT key, least(greatest(coalesce(v, 0), 0), 15), count(*) FROM r9_keys GROUP BY 1, 2)
	  UNION ALL
	  (SELECT key, least(greatest(coalesce(v, 0), 0), 15), count(*) FROM r9_keys GROUP BY 1, 2
	   EXCEPT ALL SELECT h.key, x.point, x.n FROM r9_h h, LATERAL public.onepass_hist(h.b) x)) d;
	SELECT count(*) INTO ngroups FROM r9_h;
	DROP TABLE r9_h;
	RETURN CASE WHEN bad = 0 THEN format('matches (%s groups)', ngroups) ELSE format('DIFFERENT: %s (group, point) counts differ', bad) END;
END $$;
CREATE FUNCTION pg_temp.plan_analyze_has(q text, pattern text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false; BEGIN
	FOR l IN EXECUTE 'EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ' || q LOOP
		found := found OR l ~ pattern;
	END LOOP;
	RETURN found;
END $$;
SET enable_sort = off;
SET work_mem = '64kB';
SELECT pg_temp.plan_analyze_has('SELECT key, public.r9_hist(''d|q0:15:1;'', v) FROM r9_keys GROUP BY key',
                                'Batches: ([2-9]|[1-9][0-9]+) ') AS spilled,
       pg_temp.groups_match() AS hash_spilled;
RESET work_mem;
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT key, public.r9_hist(''d|q0:15:1;'', v) FROM r9_keys GROUP BY key', '%Partial HashAggregate%') AS parallel_hash,
       pg_temp.groups_match() AS hash_parallel;
SET max_parallel_workers_per_gather = 0;
RESET enable_sort;
SELECT t.key, (SELECT string_agg(point || ':' || n, ' ' ORDER BY point)
               FROM public.onepass_hist((SELECT public.r9_hist('d|q0:3:1;', v) FROM r9_keys k WHERE k.key = t.key))) AS rescanned,
       (SELECT string_agg(p || ':' || n, ' ' ORDER BY p) FROM (SELECT least(greatest(coalesce(v, 0), 0), 3) AS p, count(*) AS n
                                                               FROM r9_keys k WHERE k.key = t.key GROUP BY 1) x) AS native
FROM (VALUES (1), (2), (5), (4999), (5000)) AS t(key);

-- B. through dx.sum / dx.count (noiseless): the native clamped sum, one pass on and off. i over
-- 0..8191 (Int4Dense), k over 0..8192 (buffered), lo over the 8,192 lowest declarable values (a
-- declared bound is at most 2147483647 in absolute value), hi over the 8,192 highest, one over 2..2.
CREATE TABLE r9_t AS SELECT i, i AS k,
       CASE WHEN i < -100 THEN i WHEN i > 100000 THEN 0 ELSE -2147483643 + i END AS lo,
       CASE WHEN i > 100000 THEN i WHEN i < -100 THEN 0 ELSE 2147475453 + i END AS hi, i AS one FROM r9_raw;
ANALYZE r9_t;
SELECT dx.protect_table('r9_t', 'Infinity');
SELECT dx.set_column('r9_t', 'i', '{"min": 0, "max": 8191}', '{"type": "none"}'),
       dx.set_column('r9_t', 'k', '{"min": 0, "max": 8192}', '{"type": "none"}'),
       dx.set_column('r9_t', 'lo', '{"min": -2147483647, "max": -2147475456}', '{"type": "none"}'),
       dx.set_column('r9_t', 'hi', '{"min": 2147475456, "max": 2147483647}', '{"type": "none"}'),
       dx.set_column('r9_t', 'one', '{"min": 2, "max": 2}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'r9_t'::regclass, 1e9);
CREATE FUNCTION pg_temp.sums() RETURNS TABLE (col text, result text) LANGUAGE sql AS $$
SELECT c, public.one_pass_matches(format('SELECT dx.sum(%I) FROM r9_t', c),
                            format('SELECT sum(least(greatest(coalesce(%I::bigint, %s), %s), %s)) FROM r9_t', c, lo, lo, hi))
FROM (VALUES ('i', 0, 8191), ('k', 0, 8192), ('lo', -2147483647, -2147475456), ('hi', 2147475456, 2147483647),
             ('one', 2, 2)) AS v(c, lo, hi)
UNION ALL
SELECT 'count(one)', public.one_pass_matches('SELECT dx.count(one) FROM r9_t', 'SELECT count(*) FROM r9_t') $$;
SELECT public.plan_has('SELECT dx.sum(i) FROM r9_t', '%dx._onepass_sum(''d|q0:8191:1;''::text, i)%') AS dense_layout;
SELECT * FROM pg_temp.sums();
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT dx.sum(i) FROM r9_t', '%Partial Aggregate%') AS parallel;
SELECT * FROM pg_temp.sums();
SET parallel_leader_participation = off;
SELECT * FROM pg_temp.sums();
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 0;
-- a NULL-only table (every row at the first point) and an empty one
CREATE TABLE r9_nulls (i int);
INSERT INTO r9_nulls SELECT NULL FROM generate_series(1, 70000);
CREATE TABLE r9_empty (i int);
SELECT dx.protect_table('r9_nulls', 'Infinity'), dx.protect_table('r9_empty', 'Infinity');
SELECT dx.set_column('r9_nulls', 'i', '{"min": -7, "max": 100}', '{"type": "none"}'),
       dx.set_column('r9_empty', 'i', '{"min": -7, "max": 100}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'r9_nulls'::regclass, 1e9),
       dx.grant_budget(current_user::regrole, 'r9_empty'::regclass, 1e9);
SELECT public.one_pass_matches('SELECT dx.sum(i) FROM r9_nulls', 'SELECT -7 * 70000') AS nulls_sum,
       public.one_pass_matches('SELECT dx.count(i) FROM r9_nulls', 'SELECT 70000') AS nulls_count,
       public.one_pass_matches('SELECT dx.sum(i) FROM r9_empty', 'SELECT 0') AS empty_sum;

-- C. the folded GROUP BY over an int key alone (dx._fold_state('d|q0:15:1;', g): Int4Dense), with
-- 65,536 and 65,535 rows in two groups; per group the native count of the clamped key (the 14
-- groups without rows: 0)
CREATE TABLE r9_g (g int, city text);
INSERT INTO r9_g SELECT 3, 'a' FROM generate_series(1, 65536);
INSERT INTO r9_g SELECT 4, 'b' FROM generate_series(1, 65535);
INSERT INTO r9_g SELECT CASE k % 4 WHEN 0 THEN NULL WHEN 1 THEN -2147483648 WHEN 2 THEN 2147483647 ELSE k % 16 END,
                        'c' || (k % 3) FROM generate_series(1, 3001) k;
ANALYZE r9_g;
SELECT dx.protect_table('r9_g', 'Infinity');
SELECT dx.set_column('r9_g', 'g', '{"min": 0, "max": 15}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'r9_g'::regclass, 1e9);
SELECT public.plan_has('SELECT g, dx.count(*) FROM r9_g GROUP BY g', '%dx._fold_state(''d|q0:15:1;''::text, r9_g.g)%') AS folded;
CREATE TEMP TABLE r9_fold AS SELECT g, dx.count(*) AS n FROM r9_g GROUP BY g;
SELECT count(*) AS groups, count(*) FILTER (WHERE n = 0) AS empty_groups,
       (SELECT count(*) FROM ((SELECT g, n::bigint FROM r9_fold WHERE n <> 0)
                              EXCEPT ALL (SELECT least(greatest(coalesce(g, 0), 0), 15), count(*) FROM r9_g GROUP BY 1)) d) AS differ
FROM r9_fold;
-- open-key partitions: one Int4Dense state per city (a noisy table: the plan with one pass off, one seed)
SELECT dx.protect_table('r9_g', 1.0);
SELECT dx.set_column('r9_g', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}'),
       dx.set_delta('r9_g', 1e-7),
       dx.grant_budget(current_user::regrole, 'r9_g'::regclass, 1e9, delta => 1.0);
SET enable_hashagg = off; -- (the seeded draws follow the partitions' order)
SET dxpriv.epsilon = 4.0;
SELECT public.plan_has('SELECT city, dx.sum(g) FROM r9_g GROUP BY city', '%dx._onepass_sum(''d|q0:15:1;''::text, g)%') AS open_dense;
CREATE FUNCTION pg_temp.seeded_both_ways(q text, seed int DEFAULT 1049) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a text; b text; BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'SELECT string_agg(row(t.*)::text, '';'' ORDER BY row(t.*)::text) FROM (' || q || ') t' INTO a;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'SELECT string_agg(row(t.*)::text, '';'' ORDER BY row(t.*)::text) FROM (' || q || ') t' INTO b;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	RETURN CASE WHEN a = b THEN 'equal' ELSE 'DIFFERENT' END;
END $$;
SELECT pg_temp.seeded_both_ways('SELECT city, dx.sum(g) AS s, dx.count(*) AS n FROM r9_g GROUP BY city') AS open_partitions;
RESET enable_hashagg;
RESET dxpriv.epsilon;

-- D. odd layouts in a superuser's direct calls: clean errors, never a crash
SELECT l AS layout, err(format('SELECT public.r9_hist(%L, i) FROM r9_raw', l)) AS result
FROM (VALUES ('d|q0:9:0;'), ('d|qnan:9:1;'), ('d|q0:1e300:1;'), ('d|q9:0:1;'), ('dx|q0:9:1;'), ('gd|q0:9:1;'),
             ('d|'), ('d|q0:9:1'), ('d|r'), ('d|Q0:9:1;')) AS v(l);
-- (a final function of the one-pass aggregates without the analyzer's direct arguments: refused,
-- with rows and without)
CREATE AGGREGATE public.r9_sum(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, FINALFUNC = dx._onepass_sum_finalfn, FINALFUNC_MODIFY = SHAREABLE);
SELECT c AS call, err(q) AS result FROM (VALUES
	('a sum without its parameters', 'SELECT public.r9_sum(''d|q0:8191:1;'', i) FROM r9_raw'),
	('the same over no row', 'SELECT public.r9_sum(''d|q0:8191:1;'', i) FROM r9_raw WHERE false'),
	('an extra value', 'SELECT public.r9_hist(''d|q0:9:1;'', i, i) FROM r9_raw'),
	('a NULL layout', 'SELECT public.r9_hist(NULL, i) FROM r9_raw'),
	('a float8 group', 'SELECT public.r9_hist(''dg|q0:9:1;'', 1.5::float8, i) FROM r9_raw'),
	-- the internal aggregates are refused, to a superuser too
	('dx._onepass_sum', 'SELECT dx._onepass_sum(''d|q0:8191:1;'', i) FROM r9_raw'),
	('dx._fold_state', 'SELECT dx._fold_state(''d|q0:8191:1;'', i) FROM r9_raw')) AS v(c, q);
-- an analyst: the internal aggregates refused, the superuser's aggregate refused on a protected
-- table, no aggregate of her own over the transition
CREATE ROLE dx_regress_r9;
SELECT dx.add_analyst('dx_regress_r9');
GRANT SELECT ON r9_raw, r9_t TO dx_regress_r9;
GRANT CREATE ON SCHEMA public TO dx_regress_r9;
SET ROLE dx_regress_r9;
SELECT c AS call, err(q) AS result FROM (VALUES
	('dx._onepass_sum', 'SELECT dx._onepass_sum(''d|q0:8191:1;'', i) FROM r9_t'),
	('dx._fold_state', 'SELECT dx._fold_state(''d|q0:8191:1;'', i) FROM r9_raw'),
	('public.r9_hist', 'SELECT public.r9_hist(''d|q0:8191:1;'', i) FROM r9_t'),
	('her own aggregate', 'CREATE AGGREGATE public.r9_mine(text, VARIADIC "any") (SFUNC = dx._onepass_transfn,
	     STYPE = internal, FINALFUNC = dx._onepass_serialize)')) AS v(c, q);
RESET ROLE;

DROP AGGREGATE public.r9_hist(text, VARIADIC "any");
DROP AGGREGATE public.r9_sum(text, VARIADIC "any");
REVOKE CREATE ON SCHEMA public FROM dx_regress_r9;
SELECT dx.unprotect_table('r9_t'), dx.unprotect_table('r9_g'), dx.unprotect_table('r9_nulls'), dx.unprotect_table('r9_empty');
DROP TABLE r9_raw, r9_native, r9_keys, r9_t, r9_g, r9_nulls, r9_empty;
SELECT dx.remove_analyst('dx_regress_r9');
DROP ROLE dx_regress_r9;
