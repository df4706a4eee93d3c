-- One pass over the rows (issue 23): a statement's linear aggregates share one transition that maps
-- each row to its point once and counts it in a per-group histogram; each aggregate weighs the
-- histogram with its per-point table at the end. The answers and noise draws must be exactly those
-- of the previous plan (one dx._weigh lookup and one transition per row and aggregate), which the
-- superuser-only setting dxpriv.one_pass = off still plans: every statement below runs both ways
-- under the same test seed and the two results must be equal row for row (noisy answers included).
SET dxpriv.cache_lifetime = 0; -- no replay: each run draws its own noise
SET dxpriv.group_fold = off; -- (these plans unfolded; the fold of a GROUP BY is compared in 64_group_fold)
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 4848) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_on bigint; plan_on text; plan_off text; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.cmp_on, pg_temp.cmp_off;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'off', true);
	SELECT string_agg(l, E'\n') INTO plan_off FROM (SELECT * FROM pg_temp.plan_lines(q)) p(l);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_off AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_on AS ' || q;
	SELECT count(*) INTO n FROM ((SELECT * FROM cmp_on EXCEPT ALL SELECT * FROM cmp_off)
	                              UNION ALL (SELECT * FROM cmp_off EXCEPT ALL SELECT * FROM cmp_on)) d;
	SELECT count(*) INTO rows_on FROM cmp_on;
	SELECT string_agg(l, E'\n') INTO plan_on FROM (SELECT * FROM pg_temp.plan_lines(q)) p(l);
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_on || ' rows'
	       || CASE WHEN plan_on LIKE '%dx._onepass_%' THEN ', one pass' ELSE ', NOT one pass' END
	       || CASE WHEN plan_off LIKE '%dx._onepass_%' THEN ' (off: one pass!)' ELSE '' END;
END $$;
CREATE FUNCTION pg_temp.plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q; END $$;

CREATE TABLE op (age int, sex text, cty char(3), qty int, grp int, v numeric, f float8, x float8, y float8);
INSERT INTO op
SELECT (i * 37) % 131 - 5, CASE WHEN (i / 3) % 2 = 0 THEN 'M' WHEN i % 17 = 0 THEN 'X' ELSE 'F' END,
       (ARRAY['ab', 'abc', 'zz', 'q'])[1 + i % 4], (i * 13) % 53, i % 10,
       round(((i::bigint * 7919) % 2003)::numeric / 10, i % 3), ((i::bigint * 104729) % 20011) / 10000.0,
       (i % 5) * 1.1, (i % 4) * 0.9
FROM generate_series(1, 6000) AS i;
INSERT INTO op VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (200, 'M', 'ab', 999, 3, 1e9, 'NaN', 100, -100);
ANALYZE op;
SELECT dx.protect_table('op', 1.0);
SELECT dx.set_column('op', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('op', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('op', 'cty', '{"values": ["ab", "abc", "zz"]}', '{"type": "discrete"}');
SELECT dx.set_column('op', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('op', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('op', 'v', '{"min": 0, "max": 200, "step": 0.5}', '{"type": "none"}');
SELECT dx.set_column('op', 'f', '{"min": 0, "max": 2, "step": 0.0001}', '{"type": "none"}');
SELECT dx.set_column_group('op', '{x,y}', '{"points": [[0, 0], [2.2, 0.9], [4.4, 2.7]]}', '{"type": "none"}');
SELECT dx.set_delta('op', 1e-9);
SELECT dx.grant_budget(current_user::regrole, 'op', 1e9, delta => 1.0);

-- one aggregate, several, FILTERs, WHERE, every column kind (range, enumerated text and char(n),
-- numeric, float8, a column group), NULLs and values outside the domain
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n FROM op');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n, dx.sum(qty) AS s, dx.avg(qty) AS a FROM op');
SELECT pg_temp.same_both_ways($q$SELECT dx.count(*) FILTER (WHERE sex = 'M') AS m, dx.count(cty) AS c,
       dx.sum(v) FILTER (WHERE cty = 'abc') AS sv, dx.avg(age) FILTER (WHERE sex = 'F') AS aa,
       dx.linear(CASE WHEN sex = 'F' THEN 2 ELSE 1 END) AS l FROM op WHERE age > 30$q$);
SELECT pg_temp.same_both_ways('SELECT dx.count(*) FILTER (WHERE x > 1) AS far, dx.sum(x + y) AS total, dx.avg(qty) AS a FROM op');
SELECT pg_temp.same_both_ways('SELECT dx.sum(f) AS s, dx.avg(f) AS a, dx.count(*) FILTER (WHERE f > 1.5) AS n FROM op');
-- GROUP BY, HAVING, ORDER BY, the same aggregate twice, empty groups. The noise of a group is drawn
-- when its answer is finalised, so in the order in which the plan finalises groups (sorted or
-- hashed, as before): both ways are compared under the same grouping strategy, sorted, then hashed.
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.sum(qty) AS s FROM op GROUP BY sex');
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.count(*) FILTER (WHERE age > 40) AS o, dx.count(*) FILTER (WHERE qty > 25) AS q, dx.sum(qty) AS s,
       dx.sum(age) AS sa, dx.sum(qty) FILTER (WHERE sex = 'F') AS sf, dx.avg(qty) AS aq, dx.avg(age) AS aa,
       dx.avg(age) FILTER (WHERE sex = 'M') AS am FROM op GROUP BY grp$q$);
SELECT pg_temp.same_both_ways('SELECT cty, dx.count(*) AS n, dx.count(*) + 1 AS n1, dx.avg(v) AS a FROM op GROUP BY cty HAVING dx.count(*) > -100 ORDER BY cty');
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.sum(f) AS s FROM op WHERE sex = 'M' GROUP BY grp$q$);
-- 400,020 points in 20 groups: the histograms are hashes of the points met
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s, dx.count(*) AS n FROM op GROUP BY grp, sex');
SELECT pg_temp.same_both_ways('SELECT sex, cty, dx.count(*) AS n, dx.avg(qty) AS a FROM op GROUP BY sex, cty');
RESET enable_hashagg;
-- Hashed, the order of the groups in the hash table follows its size, which PostgreSQL derives from
-- its estimate of a group's memory (one shared state now, one state per aggregate before): the
-- noisy answers are compared where the sizes agree, every answer on a noiseless table below.
SET enable_sort = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.sum(qty) AS s FROM op GROUP BY sex');
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.sum(qty) FILTER (WHERE sex = 'F') AS sf, dx.avg(age) AS aa FROM op GROUP BY grp$q$);
RESET enable_sort;
-- no row at all (the aggregates' states are never created), and no row in any group
CREATE TABLE op_empty (LIKE op);
SELECT dx.protect_table('op_empty', 1.0);
SELECT dx.set_column('op_empty', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('op_empty', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'op_empty', 1e9);
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n, dx.sum(qty) AS s, dx.avg(qty) AS a FROM op_empty');
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM op_empty GROUP BY grp');

-- in parallel (partial histograms serialised, combined in the leader), also without the leader
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT grp, dx.count(*), dx.avg(qty) FROM op GROUP BY grp;
EXPLAIN (COSTS OFF) SELECT dx.count(*), dx.sum(f) FROM op;
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n, dx.sum(qty) AS s, dx.avg(f) AS a FROM op');
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.avg(age) AS aa FROM op GROUP BY grp$q$);
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s FROM op GROUP BY grp, sex');
SET parallel_leader_participation = off;
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n, dx.sum(qty) AS s, dx.avg(f) AS a FROM op');
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(f) AS a FROM op GROUP BY sex');
RESET enable_hashagg;
RESET parallel_leader_participation;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- privacy units: the bounded rows of each unit feed the shared transition; COUNT(DISTINCT unit)
-- keeps its own transition in the same statement
CREATE TABLE op_visits (person int NOT NULL, ward text, age int);
INSERT INTO op_visits
SELECT p, (ARRAY['a','b','c'])[1 + (p + i) % 3], 20 + (p * 7 + i) % 60
FROM generate_series(1, 300) p, generate_series(1, 1 + (p * p) % 13) i;
SELECT dx.protect_table('op_visits', 1.0);
SELECT dx.set_column('op_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"discrete"}');
SELECT dx.set_column('op_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.set_privacy_unit('op_visits', 'person', 3);
SELECT dx.grant_budget(current_user::regrole, 'op_visits', 1e9);
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM op_visits');
SELECT pg_temp.same_both_ways('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a FROM op_visits GROUP BY ward');
SELECT pg_temp.same_both_ways('SELECT dx.count(*) AS n, dx.count(DISTINCT person) AS u FROM op_visits WHERE age < 50');
SELECT pg_temp.same_both_ways('SELECT ward, dx.count(DISTINCT person) AS u, dx.sum(age) AS s FROM op_visits GROUP BY ward');

-- the answers themselves (noiseless): a native reference of the clamping rule gives the same
CREATE TABLE op_exact AS SELECT qty, grp, sex FROM op;
SELECT dx.protect_table('op_exact', 'Infinity');
SELECT dx.set_column('op_exact', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('op_exact', 'grp', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.set_column('op_exact', 'sex', '{"values": ["M", "F"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'op_exact', 1000);
SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s, dx.count(*) FILTER (WHERE sex = 'F') AS f
FROM op_exact GROUP BY grp ORDER BY grp;
SELECT least(greatest(coalesce(grp, 0), 0), 9) AS g, count(*) AS n, sum(least(greatest(coalesce(qty, 0), 0), 50)) AS s,
       count(*) FILTER (WHERE sex = 'F') AS f
FROM op_exact GROUP BY 1 ORDER BY 1;
-- hashed (serially and in parallel): the same exact answers both ways
SET enable_sort = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.count(*) AS n, dx.sum(qty) AS s FROM op_exact GROUP BY grp, sex$q$);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM op_exact GROUP BY grp$q$);
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET enable_sort;

-- the setting is superuser-only; the shared aggregates cannot be written by a client
CREATE ROLE op_analyst;
SET ROLE op_analyst;
SET dxpriv.one_pass = off;
RESET ROLE;
DROP ROLE op_analyst;
SELECT dx._onepass_sum('r', true, 0, true, qty, 0::float8, 50::float8, 1::float8) FROM op;
