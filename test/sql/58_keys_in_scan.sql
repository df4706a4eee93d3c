-- GROUP BY keys computed in the row source (issue 23, per-row cost of grouped statements): each
-- key's lookup (dx._group_key(dx._weigh_int(...))) is a column of the table-plus-empty-groups
-- subquery, computed by the scan on the stored row's columns and by the empty-group branch on the
-- group's representative values, so no projection (Result) node runs above the UNION ALL. Every
-- statement runs the previous way (dxpriv.keys_in_scan = off: the keys computed above the source)
-- and the new way under the same test seed; the two results must be equal row for row, noisy
-- answers included, and the plan must show where the keys are computed.
SET dxpriv.cache_lifetime = 0; -- no replay: each run draws its own noise
SET dxpriv.group_fold = off; -- (these plans unfolded; the fold of a GROUP BY is compared in 64_group_fold)
CREATE FUNCTION pg_temp.plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q; END $$;
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 5858) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_on bigint; plan_on text; plan_off text; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.cmp_on, pg_temp.cmp_off;
	PERFORM pg_catalog.set_config('dxpriv.keys_in_scan', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_off AS ' || q;
	SELECT string_agg(l, E'\n') INTO plan_off FROM (SELECT * FROM pg_temp.plan_lines(q)) p(l);
	PERFORM pg_catalog.set_config('dxpriv.keys_in_scan', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_on AS ' || q;
	SELECT count(*) INTO n FROM ((SELECT * FROM cmp_on EXCEPT ALL SELECT * FROM cmp_off)
	                              UNION ALL (SELECT * FROM cmp_off EXCEPT ALL SELECT * FROM cmp_on)) d;
	SELECT count(*) INTO rows_on FROM cmp_on;
	SELECT string_agg(l, E'\n') INTO plan_on FROM (SELECT * FROM pg_temp.plan_lines(q)) p(l);
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_on || ' rows'
	       || CASE WHEN plan_on ~ 'Seq Scan[^\n]*\n *Output: [^\n]*dx\._group_key(_int)?\(' THEN ', keys in the scan' ELSE ', keys NOT in the scan' END
	       || CASE WHEN plan_off ~ 'Seq Scan[^\n]*\n *Output: [^\n]*dx\._group_key(_int)?\(' THEN ', before: in the scan' ELSE '' END
	       || CASE WHEN plan_on ~ 'dx\._onepass_' THEN ', one pass' ELSE ', previous plan' END;
END $$;

CREATE TABLE ks (age int, sex text, cty char(3), qty int, grp int, v numeric, f float8, half numeric, day date);
INSERT INTO ks
SELECT (i * 37) % 131 - 5, CASE WHEN (i / 3) % 2 = 0 THEN 'M' WHEN i % 17 = 0 THEN 'X' ELSE 'F' END,
       (ARRAY['ab', 'abc', 'zz', 'q'])[1 + i % 4], (i * 13) % 53, i % 12 - 1,
       round(((i::bigint * 7919) % 2003)::numeric / 10, i % 3), ((i::bigint * 104729) % 20011) / 10000.0,
       (i % 9) / 2.0, date '2024-01-01' + (i * 7) % 400
FROM generate_series(1, 6000) AS i;
-- NULLs and values outside every domain (their points are the clamped ones, in the keys too)
INSERT INTO ks VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                      (200, 'M', 'ab', 999, 30, 1e9, 'NaN', 9, '2030-01-01'),
                      (NULL, 'F', 'zz', 3, NULL, 5, 0.5, NULL, NULL);
ANALYZE ks;
SELECT dx.protect_table('ks', 1.0);
SELECT dx.set_column('ks', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('ks', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('ks', 'cty', '{"values": ["ab", "abc", "zz"]}', '{"type": "discrete"}');
SELECT dx.set_column('ks', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('ks', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('ks', 'v', '{"min": 0, "max": 200, "step": 0.5}', '{"type": "none"}');
SELECT dx.set_column('ks', 'f', '{"min": 0, "max": 2, "step": 0.0001}', '{"type": "none"}');
SELECT dx.set_column('ks', 'half', '{"min": 0, "max": 4, "step": 0.5}', '{"type": "discrete"}');
SELECT dx.set_column('ks', 'day', '{"min": "2024-01-01", "max": "2025-02-03"}', '{"type": "discrete"}');
SELECT dx.set_delta('ks', 1e-9);
SELECT dx.grant_budget(current_user::regrole, 'ks', 1e9, delta => 1.0);

-- sorted grouping: the groups are finalised (and their noise drawn) in key order both ways
SET enable_hashagg = off;
-- one key: range, enumerated text, char(n), numeric with a step
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM ks GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(age) AS a FROM ks GROUP BY sex');
SELECT pg_temp.same_both_ways('SELECT cty, dx.sum(v) AS s, dx.avg(qty) AS a FROM ks GROUP BY cty');
SELECT pg_temp.same_both_ways('SELECT half, dx.count(*) AS n, dx.sum(qty) AS s FROM ks GROUP BY half');
-- the key also inside the aggregates and their FILTERs
SELECT pg_temp.same_both_ways('SELECT grp, dx.sum(grp) AS s, dx.avg(grp + qty) AS a, dx.count(*) FILTER (WHERE grp > 4) AS n FROM ks GROUP BY grp');
SELECT pg_temp.same_both_ways($q$SELECT sex, dx.sum(age) FILTER (WHERE sex = 'F') AS s, dx.count(*) FILTER (WHERE sex = 'M') AS m FROM ks GROUP BY sex$q$);
-- two and three keys (in another order than the columns'), WHERE, HAVING, ORDER BY
SELECT pg_temp.same_both_ways('SELECT sex, grp, dx.count(*) AS n, dx.sum(qty) AS s FROM ks GROUP BY sex, grp');
SELECT pg_temp.same_both_ways('SELECT cty, sex, grp, dx.avg(age) AS a FROM ks GROUP BY cty, sex, grp');
SELECT pg_temp.same_both_ways($q$SELECT cty, dx.count(*) AS n, dx.count(*) + 1 AS n1, dx.avg(v) AS a FROM ks
       WHERE age > 20 GROUP BY cty HAVING dx.count(*) > -100 ORDER BY cty DESC$q$);
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.sum(v) AS s, dx.count(*) AS n FROM ks WHERE cty = 'ab'
       GROUP BY grp, sex HAVING dx.sum(v) IS NOT NULL AND grp > 2 ORDER BY sex, grp$q$);
-- the key in HAVING and in an expression of the output
SELECT pg_temp.same_both_ways($q$SELECT grp * 10 AS g10, sex || '!' AS s, dx.count(*) AS n FROM ks
       GROUP BY grp, sex HAVING grp <> 3 AND sex = 'F'$q$);
-- the 10-aggregate statement of the benchmark
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.count(*) FILTER (WHERE age > 40) AS o, dx.count(*) FILTER (WHERE qty > 25) AS q, dx.sum(qty) AS s,
       dx.sum(age) AS sa, dx.sum(qty) FILTER (WHERE sex = 'F') AS sf, dx.avg(qty) AS aq, dx.avg(age) AS aa,
       dx.avg(age) FILTER (WHERE sex = 'M') AS am FROM ks GROUP BY grp$q$);
-- expression keys (the keys stay in the histogram; several groups per point), NULL keys
SELECT pg_temp.same_both_ways('SELECT age / 40 AS band, dx.count(*) AS n, dx.sum(qty) AS s FROM ks GROUP BY age / 40');
SELECT pg_temp.same_both_ways('SELECT grp, age / 40 AS band, dx.count(*) AS n FROM ks GROUP BY grp, age / 40');
SELECT pg_temp.same_both_ways($q$SELECT date_trunc('month', day) AS m, dx.count(*) AS n FROM ks GROUP BY 1$q$);
SELECT pg_temp.same_both_ways($q$SELECT extract(year FROM day) AS y, date_trunc('quarter', day) AS q, dx.avg(qty) AS a
       FROM ks GROUP BY 1, 2 ORDER BY 1, 2$q$);
SELECT pg_temp.same_both_ways($q$SELECT CASE WHEN age > 60 THEN NULL ELSE age / 30 END AS b, dx.count(*) AS n FROM ks GROUP BY 1$q$);
SELECT pg_temp.same_both_ways($q$SELECT nullif(sex, 'M') AS s, dx.count(*) AS n, dx.sum(f) AS sf FROM ks GROUP BY 1$q$);
SELECT pg_temp.same_both_ways('SELECT grp, grp AS g2, dx.count(*) AS n FROM ks GROUP BY grp, grp');
-- 400,020 points in 20 groups
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s, dx.count(*) AS n FROM ks GROUP BY grp, sex');
-- the previous plan (one lookup and transition per row and aggregate)
SET dxpriv.one_pass = off;
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM ks GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT age / 40 AS band, sex, dx.sum(v) AS s FROM ks GROUP BY 1, 2');
RESET dxpriv.one_pass;
RESET enable_hashagg;
-- hashed grouping (the same key values hashed into a table of the same size)
SET enable_sort = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.sum(qty) AS s FROM ks GROUP BY sex');
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.avg(age) AS a FROM ks GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT sex, grp, dx.count(*) AS n FROM ks GROUP BY sex, grp');
RESET enable_sort;

-- an empty table: every group still gets its (noisy) answer
CREATE TABLE ks_empty (LIKE ks);
SELECT dx.protect_table('ks_empty', 1.0);
SELECT dx.set_column('ks_empty', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('ks_empty', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('ks_empty', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'ks_empty', 1e9);
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM ks_empty GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT sex, grp, dx.count(*) AS n FROM ks_empty GROUP BY sex, grp');
RESET enable_hashagg;

-- in parallel (the keys computed by the workers' scans), with and without the leader
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.avg(age) AS aa FROM ks GROUP BY grp$q$);
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s FROM ks GROUP BY grp, sex');
SELECT pg_temp.same_both_ways('SELECT age / 40 AS band, dx.count(*) AS n FROM ks GROUP BY 1');
SET parallel_leader_participation = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(f) AS a FROM ks GROUP BY sex');
RESET enable_hashagg;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- the answers themselves (noiseless): a native reference of the clamping rule gives the same
CREATE TABLE ks_exact AS SELECT qty, grp, sex, age FROM ks;
SELECT dx.protect_table('ks_exact', 'Infinity');
SELECT dx.set_column('ks_exact', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('ks_exact', 'grp', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.set_column('ks_exact', 'sex', '{"values": ["M", "F"]}', '{"type": "none"}');
SELECT dx.set_column('ks_exact', 'age', '{"min": 0, "max": 120}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'ks_exact', 1e9);
WITH d AS (SELECT grp, sex, count(*) AS n, sum(qty) AS s FROM (
             SELECT least(greatest(coalesce(grp, 0), 0), 9) AS grp,
                    CASE WHEN sex = 'F' THEN 'F' ELSE 'M' END AS sex, least(greatest(coalesce(qty, 0), 0), 50) AS qty
             FROM ks_exact) c GROUP BY 1, 2),
     x AS (SELECT grp, sex, dx.count(*) AS n, dx.sum(qty) AS s FROM ks_exact GROUP BY grp, sex)
SELECT count(*) AS groups, count(*) FILTER (WHERE d.n = x.n AND d.s = x.s) AS equal,
       count(*) FILTER (WHERE d.n IS NULL AND x.n = 0 AND x.s = 0) AS empty_and_zero
FROM x LEFT JOIN d USING (grp, sex);
SELECT count(*) AS groups, sum(n) AS n FROM (SELECT age / 40 AS band, dx.count(*) AS n FROM ks_exact GROUP BY 1) b;

-- only a superuser may switch the placement
CREATE ROLE dx_regress_keys_in_scan;
SET ROLE dx_regress_keys_in_scan;
SET dxpriv.keys_in_scan = off;
RESET ROLE;
DROP ROLE dx_regress_keys_in_scan;

-- more than 65,535 rows at one point of a group: the one-pass histogram's 16-bit counters carry
-- (serially, and in parallel where the leader adds the workers' partial counts)
CREATE TABLE ks_many AS SELECT i % 2 AS grp, 7 AS qty, (i % 3 = 0) AS odd FROM generate_series(1, 140001) AS i;
SELECT dx.protect_table('ks_many', 'Infinity');
SELECT dx.set_column('ks_many', 'grp', '{"min": 0, "max": 1}', '{"type": "none"}');
SELECT dx.set_column('ks_many', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('ks_many', 'odd', '{"values": [true, false]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'ks_many', 1e9);
ANALYZE ks_many;
SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s, dx.count(*) FILTER (WHERE odd) AS o, dx.avg(qty) AS a
FROM ks_many GROUP BY grp ORDER BY grp;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s, dx.count(*) FILTER (WHERE odd) AS o FROM ks_many GROUP BY grp ORDER BY grp;
SELECT dx.count(*) AS n, dx.sum(qty) AS s FROM ks_many;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SELECT grp, count(*) AS n, sum(qty) AS s, count(*) FILTER (WHERE odd) AS o FROM ks_many GROUP BY grp ORDER BY grp; -- the reference
