-- One pass, grouped by declared columns (issue 23): when every GROUP BY key is a declared column
-- and every point of the keys' columns is its own group, the shared transition leaves the key
-- columns out of its histogram (they are constant within a group) and reads the group from them on
-- the group's first row, instead of computing the group index on every row; each aggregate's final
-- function puts the group's key point back beside the histogram's point. The layout shows the key
-- columns in upper case ('E', 'R', or 'Q' for a range column with its constants in the layout). Every statement runs the previous way (dxpriv.one_pass = off:
-- one lookup and one transition per row and aggregate) and the new way under the same test seed,
-- and the two results must be equal row for row, noisy answers included.
SET dxpriv.cache_lifetime = 0; -- no replay: each run draws its own noise
SET dxpriv.group_fold = off; -- (these plans unfolded; the fold of a GROUP BY is compared in 64_group_fold)
CREATE FUNCTION pg_temp.plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q; END $$;
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 5151) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_on bigint; plan_on text; BEGIN
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
	SELECT string_agg(l, E'\n') INTO plan_on FROM (SELECT * FROM pg_temp.plan_lines(q)) p(l);
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_on || ' rows'
	       || CASE WHEN plan_on !~ 'dx\._onepass_' THEN ', NOT one pass'
	               WHEN plan_on ~ $r$'([dgp]*\|)?[-erpqERQ0-9.:;+]*[ERQ][-erpqERQ0-9.:;+]*'::text$r$ THEN ', one pass, keys left out'
	               ELSE ', one pass, keys in the histogram' END;
END $$;

CREATE TABLE rk (age int, sex text, cty char(3), qty int, grp int, v numeric, f float8, half numeric);
INSERT INTO rk
SELECT (i * 37) % 131 - 5, CASE WHEN (i / 3) % 2 = 0 THEN 'M' WHEN i % 17 = 0 THEN 'X' ELSE 'F' END,
       (ARRAY['ab', 'abc', 'zz', 'q'])[1 + i % 4], (i * 13) % 53, i % 12 - 1,
       round(((i::bigint * 7919) % 2003)::numeric / 10, i % 3), ((i::bigint * 104729) % 20011) / 10000.0,
       (i % 9) / 2.0
FROM generate_series(1, 6000) AS i;
-- NULLs and values outside every domain (their points are the clamped ones, in the keys too)
INSERT INTO rk VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (200, 'M', 'ab', 999, 30, 1e9, 'NaN', 9),
                      (NULL, 'F', 'zz', 3, NULL, 5, 0.5, NULL);
ANALYZE rk;
SELECT dx.protect_table('rk', 1.0);
SELECT dx.set_column('rk', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('rk', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('rk', 'cty', '{"values": ["ab", "abc", "zz"]}', '{"type": "discrete"}');
SELECT dx.set_column('rk', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('rk', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('rk', 'v', '{"min": 0, "max": 200, "step": 0.5}', '{"type": "none"}');
SELECT dx.set_column('rk', 'f', '{"min": 0, "max": 2, "step": 0.0001}', '{"type": "none"}');
SELECT dx.set_column('rk', 'half', '{"min": 0, "max": 4, "step": 0.5}', '{"type": "discrete"}');
SELECT dx.set_delta('rk', 1e-9);
SELECT dx.grant_budget(current_user::regrole, 'rk', 1e9, delta => 1.0);

-- sorted grouping: the groups are finalised (and their noise drawn) in the same order both ways
SET enable_hashagg = off;
-- one key (range, enumerated text, char(n), numeric with a step), with and without other columns
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM rk GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n FROM rk GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(age) AS a FROM rk GROUP BY sex');
SELECT pg_temp.same_both_ways('SELECT cty, dx.sum(v) AS s, dx.avg(qty) AS a FROM rk GROUP BY cty');
SELECT pg_temp.same_both_ways('SELECT half, dx.count(*) AS n, dx.sum(qty) AS s FROM rk GROUP BY half');
-- the key also in the aggregates (the key point goes back into the point of their tables)
SELECT pg_temp.same_both_ways('SELECT grp, dx.sum(grp) AS s, dx.avg(grp + qty) AS a, dx.count(*) FILTER (WHERE grp > 4) AS n FROM rk GROUP BY grp');
SELECT pg_temp.same_both_ways($q$SELECT sex, dx.sum(age) FILTER (WHERE sex = 'F') AS s, dx.count(*) FILTER (WHERE sex = 'M') AS m FROM rk GROUP BY sex$q$);
-- two and three keys, in another order than the columns', WHERE, FILTER, HAVING, ORDER BY
SELECT pg_temp.same_both_ways('SELECT sex, grp, dx.count(*) AS n, dx.sum(qty) AS s FROM rk GROUP BY sex, grp');
SELECT pg_temp.same_both_ways('SELECT cty, sex, grp, dx.avg(age) AS a FROM rk GROUP BY cty, sex, grp');
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.count(*) FILTER (WHERE age > 40) AS o, dx.count(*) FILTER (WHERE qty > 25) AS q, dx.sum(qty) AS s,
       dx.sum(age) AS sa, dx.sum(qty) FILTER (WHERE sex = 'F') AS sf, dx.avg(qty) AS aq, dx.avg(age) AS aa,
       dx.avg(age) FILTER (WHERE sex = 'M') AS am FROM rk GROUP BY grp$q$);
SELECT pg_temp.same_both_ways($q$SELECT cty, dx.count(*) AS n, dx.count(*) + 1 AS n1, dx.avg(v) AS a FROM rk
       WHERE age > 20 GROUP BY cty HAVING dx.count(*) > -100 ORDER BY cty DESC$q$);
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.sum(v) AS s, dx.count(*) AS n FROM rk WHERE cty = 'ab'
       GROUP BY grp, sex HAVING dx.sum(v) IS NOT NULL ORDER BY sex, grp$q$);
-- the same key twice, and a key expression beside a column key: not every key is a plain column,
-- so the keys stay in the histogram
SELECT pg_temp.same_both_ways('SELECT grp, grp AS g2, dx.count(*) AS n FROM rk GROUP BY grp, grp');
SELECT pg_temp.same_both_ways('SELECT grp, age / 40 AS band, dx.count(*) AS n FROM rk GROUP BY grp, age / 40');
-- 400,020 points in 20 groups, a hashed histogram per group before; now 20,001 points per group
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s, dx.count(*) AS n FROM rk GROUP BY grp, sex');
RESET enable_hashagg;
-- hashed grouping: compared where the hash tables agree (PostgreSQL sizes them from its estimate of
-- a group's state), and every answer on the noiseless table below
SET enable_sort = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.sum(qty) AS s FROM rk GROUP BY sex');
RESET enable_sort;

-- an empty table: every group still gets its (noisy) answer
CREATE TABLE rk_empty (LIKE rk);
SELECT dx.protect_table('rk_empty', 1.0);
SELECT dx.set_column('rk_empty', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('rk_empty', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'rk_empty', 1e9);
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM rk_empty GROUP BY grp');
RESET enable_hashagg;

-- in parallel (partial histograms without the key columns, combined in the leader)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.avg(age) AS aa FROM rk GROUP BY grp$q$);
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s FROM rk GROUP BY grp, sex');
SET parallel_leader_participation = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(f) AS a FROM rk GROUP BY sex');
RESET enable_hashagg;
RESET parallel_leader_participation;

-- the answers themselves (noiseless): a native reference of the clamping rule gives the same, also
-- hashed and in parallel
CREATE TABLE rk_exact AS SELECT qty, grp, sex, half FROM rk;
SELECT dx.protect_table('rk_exact', 'Infinity');
SELECT dx.set_column('rk_exact', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('rk_exact', 'grp', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.set_column('rk_exact', 'sex', '{"values": ["M", "F"]}', '{"type": "none"}');
SELECT dx.set_column('rk_exact', 'half', '{"min": 0, "max": 4, "step": 0.5}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rk_exact', 1000);
SELECT count(*) AS differences FROM (
  (SELECT * FROM (SELECT grp, sex, dx.count(*) AS n, dx.sum(qty)::numeric AS s,
                          dx.count(*) FILTER (WHERE qty > 25) AS q, dx.avg(half)::numeric(10, 6) AS h
                   FROM rk_exact GROUP BY grp, sex) g WHERE n > 0) -- (the groups without a row: below)
  EXCEPT ALL
  (SELECT least(greatest(coalesce(grp, 0), 0), 9), CASE WHEN sex = 'F' THEN 'F' ELSE 'M' END, count(*),
          sum(least(greatest(coalesce(qty, 0), 0), 50)), count(*) FILTER (WHERE least(greatest(coalesce(qty, 0), 0), 50) > 25),
          avg(least(greatest(coalesce(half, 0), 0), 4))::numeric(10, 6)
   FROM rk_exact GROUP BY 1, 2)) d;
SELECT grp, sex, dx.count(*) AS n, dx.avg(half) AS h FROM rk_exact WHERE grp = 2 GROUP BY grp, sex ORDER BY sex;
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.count(*) AS n, dx.sum(qty) AS s FROM rk_exact GROUP BY grp, sex$q$);
SELECT pg_temp.same_both_ways($q$SELECT half, dx.count(*) AS n, dx.avg(qty) AS a FROM rk_exact GROUP BY half$q$);
SET enable_sort = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.count(*) AS n, dx.sum(qty) AS s FROM rk_exact GROUP BY grp, sex$q$);
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM rk_exact GROUP BY grp$q$);
RESET enable_sort;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- one charge per statement: the new shape is charged once, like the previous one
SELECT count(*) AS charges_before FROM dx.ledger WHERE relid = 'rk'::regclass \gset
SELECT grp, dx.count(*) IS NOT NULL AS n, dx.sum(qty) IS NOT NULL AS s FROM rk GROUP BY grp ORDER BY grp LIMIT 1;
SELECT count(*) - :charges_before AS new_charges FROM dx.ledger WHERE relid = 'rk'::regclass;

-- the shared aggregates with key columns cannot be written by a client
SELECT dx._onepass_count('R', true, 0, true, grp, 0::float8, 9::float8, 1::float8) FROM rk GROUP BY grp;
