-- Grouped statements over a table with a privacy unit bounded by a unit profile (unitpar,
-- planner/unit_group_profile.h): they are rewritten as over a table without a unit, so the group
-- fold reads the table in ONE ungrouped pass (dx._fold_state) whose scan keeps the profile's qual
-- (dx._unit_keep), and the plan may be parallel (the profile's InitPlan sits in the fold state's
-- aggregate level, not in a UNION ALL arm). Every statement runs three ways under one test seed:
-- the hash pass (dxpriv.unit_profiles = off), the profile without the fold (dxpriv.group_fold = off)
-- and the folded plan; the rows (noisy answers included; groups finalised in key order under
-- sorted grouping) and the ledger rows each run wrote (mechanism, epsilon, delta, scales) must be
-- identical.
SET dxpriv.cache_lifetime = 0; -- no replay: each run draws its own noise
SET enable_hashagg = off;
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
CREATE FUNCTION pg_temp.charges_since(since bigint) RETURNS text LANGUAGE sql AS $$
	SELECT coalesce(string_agg(mechanism || ' ' || epsilon || ' ' || delta || ' ' || scales::text, '; ' ORDER BY id), '')
	FROM dx.ledger WHERE id > since $$;
-- runs q with setting = value under the seed into pg_temp.<into>; returns the ledger rows it wrote
CREATE FUNCTION pg_temp.run_as(q text, setting text, value text, into_table text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE mark bigint; BEGIN
	SELECT coalesce(max(id), 0) INTO mark FROM dx.ledger;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config(setting, value, true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '7070', true);
	EXECUTE 'CREATE TEMP TABLE ' || into_table || ' AS ' || q;
	PERFORM pg_catalog.set_config(setting, 'on', true); -- (both settings' default)
	RETURN pg_temp.charges_since(mark);
END $$;
CREATE FUNCTION pg_temp.diff(a text, b text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	EXECUTE format('SELECT count(*) FROM ((SELECT * FROM %I EXCEPT ALL SELECT * FROM %I) UNION ALL (SELECT * FROM %I EXCEPT ALL SELECT * FROM %I)) d', a, b, b, a) INTO n;
	RETURN n; END $$;
CREATE FUNCTION pg_temp.three_ways(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE c_hash text; c_nofold text; c_fold text; rows_on bigint; plan_on text; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.r_hash, pg_temp.r_nofold, pg_temp.r_fold;
	c_hash := pg_temp.run_as(q, 'dxpriv.unit_profiles', 'off', 'r_hash');
	c_nofold := pg_temp.run_as(q, 'dxpriv.group_fold', 'off', 'r_nofold');
	c_fold := pg_temp.run_as(q, 'dxpriv.group_fold', 'on', 'r_fold');
	SELECT count(*) INTO rows_on FROM r_fold;
	plan_on := pg_temp.plan_text(q);
	RETURN CASE WHEN pg_temp.diff('r_fold', 'r_hash') = 0 AND pg_temp.diff('r_fold', 'r_nofold') = 0 THEN 'equal' ELSE 'DIFFERENT' END
	       || ', ' || rows_on || ' rows'
	       || CASE WHEN c_fold = c_hash AND c_fold = c_nofold AND c_fold <> '' THEN ', same charge'
	               ELSE ', charges differ: ' || c_hash || ' / ' || c_nofold || ' / ' || c_fold END
	       || CASE WHEN plan_on ~ 'dx\._fold_state' THEN ', folded' ELSE ', not folded' END
	       || CASE WHEN plan_on ~ 'dx\._unit_keep\(\$' THEN ', keep qual' ELSE '' END
	       || CASE WHEN plan_on ~ 'Gather' THEN ', parallel' ELSE '' END;
END $$;
CREATE FUNCTION pg_temp.has(p text, s text) RETURNS int LANGUAGE sql AS
$$ SELECT (length(p) - length(replace(p, s, ''))) / length(s) $$;

-- person p has 1 + (p * p) % 17 visits (1..17); person 7 is NULL (one unit); ward and age have NULLs
CREATE TABLE ug_visits (person int, ward text, sex char(1), age int, cost numeric);
INSERT INTO ug_visits
SELECT CASE WHEN p = 7 THEN NULL ELSE p END,
       CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c'])[1 + (p + i) % 3] END,
       CASE WHEN (p * 3 + i) % 5 = 0 THEN 'F' ELSE 'M' END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 400) p, generate_series(1, 1 + (p * p) % 17) i;
SELECT dx.protect_table('ug_visits', 'Infinity');
SELECT dx.set_column('ug_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('ug_visits', 'sex', '{"values":["F","M"]}', '{"type":"none"}');
SELECT dx.set_column('ug_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.set_column('ug_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"absolute","scale":10}');
SELECT dx.grant_budget(current_user::regrole, 'ug_visits', 1e6);
SELECT dx.set_privacy_unit('ug_visits', 'person', 3);
SET dxpriv.epsilon = 0.7;

-- the plan: one fold state over the table's scan filtered by the keep qual (the profile an InitPlan
-- of that level); no hash pass, no UNION ALL of the table's rows
SELECT pg_temp.has(p, 'dx._fold_state') AS fold_states, pg_temp.has(p, 'dx._unit_keep($') AS keep_quals,
       pg_temp.has(p, '_unit_bound(') AS hash_passes, pg_temp.has(p, 'Append') AS appends
FROM pg_temp.plan_text('SELECT ward, dx.count(*), dx.avg(cost) FROM ug_visits GROUP BY ward') p;

-- serial, k = 3
SELECT q, pg_temp.three_ways(q) AS result FROM (VALUES
	('SELECT ward, dx.count(*) AS n FROM ug_visits GROUP BY ward'),
	('SELECT ward, dx.count(*) AS n, dx.sum(cost) AS s, dx.avg(cost) AS a FROM ug_visits GROUP BY ward'),
	('SELECT ward, sex, dx.count(*) AS n, dx.avg(age) AS a FROM ug_visits GROUP BY ward, sex'),
	('SELECT ward, dx.count(*) FILTER (WHERE age >= 40) AS n, dx.sum(cost) FILTER (WHERE sex = ''F'') AS s FROM ug_visits GROUP BY ward'),
	('SELECT sex, dx.sum(cost) AS s FROM ug_visits WHERE age < 50 GROUP BY sex'),
	('SELECT ward, dx.count(*) AS n FROM ug_visits WHERE age > 1000 GROUP BY ward'),
	('SELECT ward, dx.count(*) AS n FROM ug_visits GROUP BY ward HAVING dx.count(*) > 1e9'),
	('SELECT ward, dx.count(*) AS n FROM ug_visits GROUP BY ward ORDER BY ward LIMIT 1'),
	('SELECT ward, age / 20 AS band, dx.count(*) AS n FROM ug_visits GROUP BY ward, age / 20'),
	('SELECT ward, dx.count_units(person) AS u, dx.count(*) AS n FROM ug_visits GROUP BY ward')
) t(q);
-- k = 1 and k = 10
SELECT dx.set_privacy_unit('ug_visits', 'person', 1);
SELECT pg_temp.three_ways('SELECT ward, sex, dx.count(*) AS n, dx.sum(cost) AS s FROM ug_visits GROUP BY ward, sex') AS k1;
SELECT dx.set_privacy_unit('ug_visits', 'person', 10);
SELECT pg_temp.three_ways('SELECT ward, dx.count(*) AS n, dx.avg(cost) AS a FROM ug_visits WHERE age >= 30 GROUP BY ward') AS k10;
-- noiseless: the folded count of each group is the number of rows the rule keeps in it (a unit's
-- 10 rows of smallest rank over the whole table, before WHERE), written with window functions over
-- dx._unit_rank (the same key under the seed); NULL wards are mapped into the domain ('a')
SET dxpriv.test_seed = 7070;
CREATE TEMP TABLE ug_ref AS
SELECT coalesce(ward, 'a') AS ward, count(*) AS n FROM (SELECT ward, row_number() OVER (PARTITION BY person ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r
	FROM ug_visits v) s WHERE r <= 10 GROUP BY 1;
RESET dxpriv.epsilon; -- (the table's default, Infinity: noiseless)
SELECT d.ward, d.n = r.n AS kept_rows_match
FROM (SELECT ward, dx.count(*) AS n FROM ug_visits GROUP BY ward) d JOIN ug_ref r USING (ward) ORDER BY 1;
SET dxpriv.epsilon = 0.7;
SELECT dx.set_privacy_unit('ug_visits', 'person', 3);

-- parallel: the folded statement's plan is parallel (Gather under the fold state's aggregate)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT regexp_replace(l, '[0-9]{4,}', 'N', 'g') AS plan
FROM regexp_split_to_table(pg_temp.plan_text('SELECT ward, dx.count(*), dx.avg(cost) FROM ug_visits GROUP BY ward'), E'\n') l
WHERE l ~ '(Gather|Aggregate|Seq Scan|_unit_keep|Function Scan|InitPlan)' AND l !~ 'Output';
-- (the keep qual passes the table's OID for tableoid, a table without inheritance children: masked)
CREATE FUNCTION pg_temp.explain_masked(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE r text; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP RETURN NEXT regexp_replace(r, '''[0-9]+''::oid', '''N''::oid'); END LOOP;
END $$;
SELECT p AS "QUERY PLAN" FROM pg_temp.explain_masked('SELECT ward, dx.count(*), dx.avg(cost) FROM ug_visits GROUP BY ward') p;
SELECT q, pg_temp.three_ways(q) AS result FROM (VALUES
	('SELECT ward, dx.count(*) AS n, dx.sum(cost) AS s, dx.avg(cost) AS a FROM ug_visits GROUP BY ward'),
	('SELECT ward, sex, dx.count(*) FILTER (WHERE age < 60) AS n FROM ug_visits WHERE cost > 10 GROUP BY ward, sex')
) t(q);
SET force_parallel_mode = on;
SELECT pg_temp.three_ways('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a FROM ug_visits GROUP BY ward') AS forced_parallel;
RESET force_parallel_mode;
SET parallel_leader_participation = off;
SELECT pg_temp.three_ways('SELECT sex, dx.count(*) AS n, dx.sum(cost) AS s FROM ug_visits GROUP BY sex') AS workers_only;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET dxpriv.test_seed;
RESET enable_hashagg;
