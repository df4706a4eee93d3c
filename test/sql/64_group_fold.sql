-- A GROUP BY over declared columns folded into one pass (issue 23, planner/group_fold.h): the rows
-- are counted once in ONE ungrouped histogram over the sub-universe with the key columns
-- (dx._fold_state), which is cut into one state per declared group (dx._fold_slices; empty groups
-- included) and released per group by the one-pass final functions. Every statement runs the
-- previous way (dxpriv.group_fold = off: the rows grouped by their keys) and folded under the same
-- test seed: the two results must be equal row for row (noisy answers included; the groups are
-- finalised in key order both ways under sorted grouping), and the charges written to the ledger
-- (epsilon, delta, scales, mechanism) identical.
SET dxpriv.cache_lifetime = 0; -- no replay: each run draws its own noise
CREATE FUNCTION pg_temp.plan_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN RETURN QUERY EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q; END $$;
CREATE FUNCTION pg_temp.charges_since(since bigint) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(mechanism || ' ' || epsilon || ' ' || delta || ' ' || scales::text, '; ' ORDER BY id), '')
	FROM dx.ledger WHERE id > since $$;
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 6464) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_on bigint; plan_on text; mark bigint; charged_off text; charged_on text; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.cmp_on, pg_temp.cmp_off;
	SELECT coalesce(max(id), 0) INTO mark FROM dx.ledger;
	PERFORM pg_catalog.set_config('dxpriv.group_fold', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_off AS ' || q;
	charged_off := pg_temp.charges_since(mark);
	SELECT coalesce(max(id), 0) INTO mark FROM dx.ledger;
	PERFORM pg_catalog.set_config('dxpriv.group_fold', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_on AS ' || q;
	charged_on := pg_temp.charges_since(mark);
	SELECT count(*) INTO n FROM ((SELECT * FROM cmp_on EXCEPT ALL SELECT * FROM cmp_off)
	                              UNION ALL (SELECT * FROM cmp_off EXCEPT ALL SELECT * FROM cmp_on)) d;
	SELECT count(*) INTO rows_on FROM cmp_on;
	SELECT string_agg(l, E'\n') INTO plan_on FROM (SELECT * FROM pg_temp.plan_lines(q)) p(l);
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_on || ' rows'
	       || CASE WHEN charged_on = charged_off AND charged_on <> '' THEN ', same charge'
	               ELSE ', charges differ: ' || charged_off || ' / ' || charged_on END
	       || CASE WHEN plan_on ~ 'dx\._fold_state' THEN ', folded' ELSE ', not folded' END;
END $$;

CREATE TABLE gf (age int, sex text, cty char(3), qty int, grp int, v numeric, f float8, half numeric);
INSERT INTO gf
SELECT (i * 37) % 131 - 5, CASE WHEN (i / 3) % 2 = 0 THEN 'M' WHEN i % 17 = 0 THEN 'X' ELSE 'F' END,
       (ARRAY['ab', 'abc', 'zz', 'q'])[1 + i % 4], (i * 13) % 53, i % 12 - 1,
       round(((i::bigint * 7919) % 2003)::numeric / 10, i % 3), ((i::bigint * 104729) % 20011) / 10000.0,
       (i % 9) / 2.0
FROM generate_series(1, 6000) AS i;
-- NULLs and values outside every domain (their points are the clamped ones, in the keys too)
INSERT INTO gf VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL), (200, 'M', 'ab', 999, 30, 1e9, 'NaN', 9),
                      (NULL, 'F', 'zz', 3, NULL, 5, 0.5, NULL);
ANALYZE gf;
SELECT dx.protect_table('gf', 1.0);
SELECT dx.set_column('gf', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('gf', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('gf', 'cty', '{"values": ["ab", "abc", "zz"]}', '{"type": "discrete"}');
SELECT dx.set_column('gf', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('gf', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('gf', 'v', '{"min": 0, "max": 200, "step": 0.5}', '{"type": "none"}');
SELECT dx.set_column('gf', 'f', '{"min": 0, "max": 2, "step": 0.0001}', '{"type": "none"}');
SELECT dx.set_column('gf', 'half', '{"min": 0, "max": 4, "step": 0.5}', '{"type": "discrete"}');
SELECT dx.set_delta('gf', 1e-9);
SELECT dx.grant_budget(current_user::regrole, 'gf', 1e9, delta => 1.0);

-- sorted grouping: the groups are finalised (and their noise drawn) in the same order both ways
SET enable_hashagg = off;
-- one key (range, enumerated text, char(n), numeric with a step), with and without other columns
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n FROM gf GROUP BY grp');
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(age) AS a FROM gf GROUP BY sex');
SELECT pg_temp.same_both_ways('SELECT cty, dx.sum(v) AS s, dx.avg(qty) AS a FROM gf GROUP BY cty');
SELECT pg_temp.same_both_ways('SELECT half, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY half');
-- the key also in the aggregates (the key point goes back into the point of their tables)
SELECT pg_temp.same_both_ways('SELECT grp, dx.sum(grp) AS s, dx.avg(grp + qty) AS a, dx.count(*) FILTER (WHERE grp > 4) AS n FROM gf GROUP BY grp');
SELECT pg_temp.same_both_ways($q$SELECT sex, dx.sum(age) FILTER (WHERE sex = 'F') AS s, dx.count(*) FILTER (WHERE sex = 'M') AS m FROM gf GROUP BY sex$q$);
-- two and three keys, in another order than the columns', WHERE, FILTER, HAVING, ORDER BY
SELECT pg_temp.same_both_ways('SELECT sex, grp, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY sex, grp');
SELECT pg_temp.same_both_ways('SELECT cty, sex, grp, dx.avg(age) AS a FROM gf GROUP BY cty, sex, grp');
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.count(*) FILTER (WHERE age > 40) AS o, dx.count(*) FILTER (WHERE qty > 25) AS q, dx.sum(qty) AS s,
       dx.sum(age) AS sa, dx.sum(qty) FILTER (WHERE sex = 'F') AS sf, dx.avg(qty) AS aq, dx.avg(age) AS aa,
       dx.avg(age) FILTER (WHERE sex = 'M') AS am FROM gf GROUP BY grp$q$);
SELECT pg_temp.same_both_ways($q$SELECT cty, dx.count(*) AS n, dx.count(*) + 1 AS n1, dx.avg(v) AS a FROM gf
       WHERE age > 20 GROUP BY cty HAVING dx.count(*) > -100 ORDER BY cty DESC$q$);
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.sum(v) AS s, dx.count(*) AS n FROM gf WHERE cty = 'ab'
       GROUP BY grp, sex HAVING dx.sum(v) IS NOT NULL ORDER BY sex, grp$q$);
-- the same key twice, and a key expression beside a column key: not every key is a plain column,
-- so the keys stay in the histogram
SELECT pg_temp.same_both_ways('SELECT grp, grp AS g2, dx.count(*) AS n FROM gf GROUP BY grp, grp');
SELECT pg_temp.same_both_ways('SELECT grp, age / 40 AS band, dx.count(*) AS n FROM gf GROUP BY grp, age / 40');
-- 400,020 points in 20 groups, a hashed histogram per group before; now 20,001 points per group
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s, dx.count(*) AS n FROM gf GROUP BY grp, sex');
-- the keys computed above the row source (dxpriv.keys_in_scan = off): the groups' values carry the
-- columns' type modifiers (a char(n) key's lookup reads the column's)
SET dxpriv.keys_in_scan = off;
SELECT pg_temp.same_both_ways('SELECT cty, dx.sum(v) AS s, dx.avg(qty) AS a FROM gf GROUP BY cty');
SELECT pg_temp.same_both_ways('SELECT cty, sex, grp, dx.avg(age) AS a FROM gf GROUP BY cty, sex, grp');
RESET dxpriv.keys_in_scan;
RESET enable_hashagg;
-- hashed grouping: compared where the hash tables agree (PostgreSQL sizes them from its estimate of
-- a group's state), and every answer on the noiseless table below
SET enable_sort = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY sex');
RESET enable_sort;

-- an empty table: every group still gets its (noisy) answer
CREATE TABLE gf_empty (LIKE gf);
SELECT dx.protect_table('gf_empty', 1.0);
SELECT dx.set_column('gf_empty', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('gf_empty', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'gf_empty', 1e9);
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM gf_empty GROUP BY grp');
RESET enable_hashagg;

-- in parallel (partial histograms without the key columns, combined in the leader)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.count(*) FILTER (WHERE sex = 'M') AS m,
       dx.avg(age) AS aa FROM gf GROUP BY grp$q$);
SELECT pg_temp.same_both_ways('SELECT grp, sex, dx.sum(f) AS s FROM gf GROUP BY grp, sex');
SET parallel_leader_participation = off;
SELECT pg_temp.same_both_ways('SELECT sex, dx.count(*) AS n, dx.avg(f) AS a FROM gf GROUP BY sex');
RESET enable_hashagg;
RESET parallel_leader_participation;

-- the answers themselves (noiseless): a native reference of the clamping rule gives the same, also
-- hashed and in parallel
CREATE TABLE gf_exact AS SELECT qty, grp, sex, half FROM gf;
SELECT dx.protect_table('gf_exact', 'Infinity');
SELECT dx.set_column('gf_exact', 'qty', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('gf_exact', 'grp', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.set_column('gf_exact', 'sex', '{"values": ["M", "F"]}', '{"type": "none"}');
SELECT dx.set_column('gf_exact', 'half', '{"min": 0, "max": 4, "step": 0.5}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'gf_exact', 1000);
SELECT count(*) AS differences FROM (
  (SELECT * FROM (SELECT grp, sex, dx.count(*) AS n, dx.sum(qty)::numeric AS s,
                          dx.count(*) FILTER (WHERE qty > 25) AS q, dx.avg(half)::numeric(10, 6) AS h
                   FROM gf_exact GROUP BY grp, sex) g WHERE n > 0) -- (the groups without a row: below)
  EXCEPT ALL
  (SELECT least(greatest(coalesce(grp, 0), 0), 9), CASE WHEN sex = 'F' THEN 'F' ELSE 'M' END, count(*),
          sum(least(greatest(coalesce(qty, 0), 0), 50)), count(*) FILTER (WHERE least(greatest(coalesce(qty, 0), 0), 50) > 25),
          avg(least(greatest(coalesce(half, 0), 0), 4))::numeric(10, 6)
   FROM gf_exact GROUP BY 1, 2)) d;
SELECT grp, sex, dx.count(*) AS n, dx.avg(half) AS h FROM gf_exact WHERE grp = 2 GROUP BY grp, sex ORDER BY sex;
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.count(*) AS n, dx.sum(qty) AS s FROM gf_exact GROUP BY grp, sex$q$);
SELECT pg_temp.same_both_ways($q$SELECT half, dx.count(*) AS n, dx.avg(qty) AS a FROM gf_exact GROUP BY half$q$);
SET enable_sort = off;
SELECT pg_temp.same_both_ways($q$SELECT grp, sex, dx.count(*) AS n, dx.sum(qty) AS s FROM gf_exact GROUP BY grp, sex$q$);
SELECT pg_temp.same_both_ways($q$SELECT grp, dx.count(*) AS n, dx.avg(qty) AS a FROM gf_exact GROUP BY grp$q$);
RESET enable_sort;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- one charge per statement, also when HAVING, LIMIT or a wrapper drops groups or aggregates: the
-- charge is that of every cell the analysis allocated (compared with the previous plan above and here)
-- (sorted grouping: under hashed grouping the previous plan finalises every group before its Sort
-- and LIMIT, the folded one sorts 10 rows, so group 0 would get another draw; the charge is the same)
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY grp HAVING dx.count(*) > 1e9');
SELECT pg_temp.same_both_ways('SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY grp ORDER BY grp LIMIT 1');
SELECT pg_temp.same_both_ways('SELECT * FROM (SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY grp) w WHERE grp = 3');
SELECT pg_temp.same_both_ways('SELECT n FROM (SELECT grp, dx.count(*) AS n, dx.sum(qty) AS s FROM gf GROUP BY grp) w LIMIT 0');
RESET enable_hashagg;
SELECT count(*) AS charges_before FROM dx.ledger WHERE relid = 'gf'::regclass \gset
SELECT grp, dx.count(*) IS NOT NULL AS n, dx.sum(qty) IS NOT NULL AS s FROM gf GROUP BY grp ORDER BY grp LIMIT 1;
SELECT count(*) - :charges_before AS new_charges FROM dx.ledger WHERE relid = 'gf'::regclass;

-- the plan: one ungrouped aggregate over the table, its cut beside the groups' values, no Append
SET enable_hashagg = off;
SET max_parallel_workers_per_gather = 0;
SELECT regexp_replace(l, '\(.*', '') AS node FROM pg_temp.plan_lines('SELECT grp, dx.count(*), dx.sum(qty) FROM gf GROUP BY grp') p(l)
WHERE l ~ '^ *(->  )?[A-Z][A-Za-z ]+(  |$)';
RESET enable_hashagg;
RESET max_parallel_workers_per_gather;

-- the fold's state, its cut and its aggregates cannot be written by a client (not even a superuser)
SELECT dx._fold_state('r', true, 0, true, grp, 0::float8, 9::float8, 1::float8) FROM gf;
SELECT dx._fold_slices(NULL, '{1,10,-1,0}');
SELECT * FROM dx._fold_slices(NULL, '{1,10,-1,0}');
SELECT grp, dx._fold_count(NULL::bytea) FROM gf GROUP BY grp;
