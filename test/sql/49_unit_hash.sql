-- Privacy units without a sort (dxpriv.unit_bounding, planner/unit_hash_source.h): the hash pass
-- keeps exactly the rows of the window-function plan, so under the test seed (which fixes the rank
-- key and the noise stream) every statement gives identical answers on both paths: noiseless (the
-- bounded table's exact answers) and noisy (the same cells, scales and draws).
SET client_min_messages = notice;
-- the hash pass itself (unit profiles, regress 66, would bound most statements here by a qual)
SET dxpriv.unit_profiles = off;
-- runs q under 'hash' and under 'sort' with the same seed and a fresh cache; true when the two
-- answers are the same rows (and there is at least one). enable_hashagg off: a hash aggregate draws
-- its groups' noise in the order it first meets them, which follows the row source's order (equal
-- in distribution, not identical); sorted grouping draws them in key order on both paths.
CREATE FUNCTION pg_temp.same_both(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	PERFORM pg_catalog.set_config('enable_hashagg', 'off', true);
	DROP TABLE IF EXISTS pg_temp.uh_hash, pg_temp.uh_sort;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'hash', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '4949', true);
	EXECUTE 'CREATE TEMP TABLE uh_hash AS ' || q;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'sort', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '4949', true);
	EXECUTE 'CREATE TEMP TABLE uh_sort AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'hash', true);
	SELECT count(*) INTO n FROM ((SELECT * FROM uh_hash EXCEPT ALL SELECT * FROM uh_sort)
	                              UNION ALL (SELECT * FROM uh_sort EXCEPT ALL SELECT * FROM uh_hash)) d;
	RETURN n = 0 AND (SELECT count(*) FROM uh_hash) > 0;
END $$;
-- the plan: one hash aggregate over the rows, no sort
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;

-- person p has 1 + (p * p) % 17 visits (1..17); some ages and wards NULL
CREATE TABLE uh_visits (person int NOT NULL, ward text, age int, cost numeric);
INSERT INTO uh_visits
SELECT p, CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c'])[1 + (p + i) % 3] END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 400) p, generate_series(1, 1 + (p * p) % 17) i;
SELECT dx.protect_table('uh_visits', 'Infinity');
SELECT dx.set_column('uh_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('uh_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.set_column('uh_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uh_visits', 1e6);
SELECT dx.set_privacy_unit('uh_visits', 'person', 3);
SET dxpriv.test_seed = 4949;
SELECT (length(p) - length(replace(p, 'Sort Key', ''))) / length('Sort Key') AS sorts,
       (length(p) - length(replace(p, ' dx._unit_bound(', ''))) / length(' dx._unit_bound(') AS hash_passes
FROM pg_temp.plan_text('SELECT ward, dx.count(*), dx.count_units(person) FROM uh_visits GROUP BY ward') p;
-- the old plan stays available to superusers (equality tests), and only to them
SET dxpriv.unit_bounding = sort;
SELECT (length(p) - length(replace(p, 'Sort Key', ''))) / length('Sort Key') > 0 AS sorts
FROM pg_temp.plan_text('SELECT dx.count(*) FROM uh_visits') p;
RESET dxpriv.unit_bounding;
-- the hash pass at every size: beyond work_mem × hash_mem_multiplier it spills partitions of units
-- to a temporary tape set (20,000 rows: about 1.2 MB of kept rows against 128 kB at the smallest
-- work_mem, where it spills, and well under the default 8 MB); the same answers as the sort
-- (regress 54_unit_spill checks larger spills)
CREATE TABLE uh_big (person int NOT NULL, ward text);
INSERT INTO uh_big SELECT i % 5000, (ARRAY['a','b','c'])[1 + i % 3] FROM generate_series(1, 20000) i;
ANALYZE uh_big;
SELECT dx.protect_table('uh_big', 'Infinity');
SELECT dx.set_column('uh_big', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uh_big', 1e6);
SELECT dx.set_privacy_unit('uh_big', 'person', 3);
SELECT (length(p) - length(replace(p, 'Sort Key', ''))) / length('Sort Key') > 0 AS sorts,
       (length(p) - length(replace(p, ' dx._unit_bound(', ''))) / length(' dx._unit_bound(') AS hash_passes
FROM pg_temp.plan_text('SELECT ward, dx.count(*) FROM uh_big GROUP BY ward') p;
SET work_mem = '64kB';
SELECT (length(p) - length(replace(p, 'WindowAgg', ''))) / length('WindowAgg') AS window_passes,
       (length(p) - length(replace(p, ' dx._unit_bound(', ''))) / length(' dx._unit_bound(') AS hash_passes
FROM pg_temp.plan_text('SELECT ward, dx.count(*) FROM uh_big GROUP BY ward') p;
SELECT pg_temp.same_both('SELECT ward, dx.count(*) FROM uh_big GROUP BY ward ORDER BY ward') AS same_small_work_mem;
RESET work_mem;
CREATE ROLE dx_regress_uh;
SET ROLE dx_regress_uh;
SET dxpriv.unit_bounding = sort;
RESET ROLE;
DROP ROLE dx_regress_uh;

-- noiseless: the same answers, statement by statement
SELECT q, pg_temp.same_both(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n FROM uh_visits'),
	('SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.avg(cost) AS a FROM uh_visits'),
	('SELECT dx.sum(cost) AS s FROM uh_visits WHERE age >= 40'),
	('SELECT dx.count(*) FILTER (WHERE ward = ''a'') AS n, dx.sum(age) FILTER (WHERE cost < 50) AS s FROM uh_visits'),
	('SELECT dx.count_units(person) AS u FROM uh_visits'),
	('SELECT dx.count(DISTINCT person) AS u, dx.count(*) AS n FROM uh_visits WHERE age < 50'),
	('SELECT dx.count_units(person) FILTER (WHERE age >= 50) AS u, dx.count_units(person) FILTER (WHERE ward = ''b'') AS v FROM uh_visits'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a FROM uh_visits GROUP BY ward'),
	('SELECT ward, dx.count_units(person) AS u, dx.sum(cost) AS s FROM uh_visits GROUP BY ward'),
	('SELECT ward, dx.count_units(person) FILTER (WHERE age >= 40) AS u FROM uh_visits WHERE cost > 10 GROUP BY ward'),
	('SELECT ward, age / 20 AS band, dx.count(*) AS n, dx.count_units(person) AS u FROM uh_visits GROUP BY ward, age / 20'),
	('SELECT dx.count(*) AS n FROM uh_visits WHERE age > 1000')
) t(q);
-- k = 1 and k = 12 (most units keep every row)
SELECT dx.set_privacy_unit('uh_visits', 'person', 1);
SELECT pg_temp.same_both('SELECT ward, dx.count(*) AS n, dx.sum(age) AS s, dx.count_units(person) AS u FROM uh_visits GROUP BY ward') AS k1;
SELECT dx.set_privacy_unit('uh_visits', 'person', 12);
SELECT pg_temp.same_both('SELECT dx.count(*) AS n, dx.sum(cost) AS s, dx.count_units(person) FILTER (WHERE age < 30) AS u FROM uh_visits') AS k12;
-- the bounded count is the number of rows the rule keeps: sum over persons of min(rows, 12)
SELECT sum(least(12, 1 + (p * p) % 17)) AS expected_rows FROM generate_series(1, 400) p \gset
SELECT dx.count(*) = :expected_rows AS bounded_count FROM uh_visits;

-- noisy answers (presence 1, metrics): the same draws on both paths
SELECT dx.protect_table('uh_visits', 1.0);
SELECT dx.set_column('uh_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"discrete"}');
SELECT dx.set_column('uh_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SELECT dx.set_privacy_unit('uh_visits', 'person', 3);
SELECT q, pg_temp.same_both(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uh_visits'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a, dx.count_units(person) AS u FROM uh_visits GROUP BY ward'),
	('SELECT dx.count_units(person) FILTER (WHERE age >= 50) AS u FROM uh_visits WHERE ward IS NOT NULL')
) t(q);

-- unit columns of other types: text, and numeric (1.0 and 1.00 are one unit, as in PARTITION BY)
CREATE TABLE uh_num (who numeric NOT NULL, age int);
INSERT INTO uh_num SELECT (p % 50)::numeric + CASE WHEN i % 2 = 0 THEN 0.00 ELSE 0.0 END, (p * 7 + i) % 100
FROM generate_series(1, 50) p, generate_series(1, 9) i;
SELECT count(DISTINCT who) AS units, count(DISTINCT who::text) AS spellings FROM uh_num;
SELECT dx.protect_table('uh_num', 'Infinity');
SELECT dx.set_column('uh_num', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uh_num', 1e6);
SELECT dx.set_privacy_unit('uh_num', 'who', 2);
SELECT dx.count(*) AS kept_rows, dx.count_units(who) AS units FROM uh_num;
SELECT pg_temp.same_both('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uh_num') AS numeric_unit;
CREATE TABLE uh_text (who text, age int);
INSERT INTO uh_text SELECT CASE WHEN p = 1 THEN NULL ELSE 'u' || p END, (p * 7 + i) % 100
FROM generate_series(1, 60) p, generate_series(1, p % 7 + 1) i;
SELECT dx.protect_table('uh_text', 'Infinity');
SELECT dx.set_column('uh_text', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'uh_text', 1e6);
SELECT dx.set_privacy_unit('uh_text', 'who', 3);
SELECT pg_temp.same_both('SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.count_units(who) AS u FROM uh_text') AS text_unit;

-- parallel plans (workers bound their rows, the leader merges): the same answers
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT (length(p) - length(replace(p, 'Partial Aggregate', ''))) / length('Partial Aggregate') > 0 AS partial_bounding
FROM pg_temp.plan_text('SELECT dx.count(*) FROM uh_visits') p;
SELECT q, pg_temp.same_both(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM uh_visits'),
	('SELECT ward, dx.count(*) AS n, dx.count_units(person) AS u FROM uh_visits GROUP BY ward'),
	('SELECT dx.count(*) AS n, dx.count_units(who) AS u FROM uh_text')
) t(q);
SET force_parallel_mode = regress;
SELECT pg_temp.same_both('SELECT ward, dx.sum(age) AS s, dx.count_units(person) FILTER (WHERE age > 30) AS u FROM uh_visits GROUP BY ward') AS forced;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- an empty table
TRUNCATE uh_text;
SELECT dx.count(*) AS n, dx.count_units(who) AS u FROM uh_text;

-- the kept rows cannot be read outside the statement that bounds them
SELECT * FROM dx._unit_rows(12345, 0, 0, -1, NULL::int);
SELECT dx.unprotect_table('uh_visits');
SELECT dx.unprotect_table('uh_num');
SELECT dx.unprotect_table('uh_text');
DROP TABLE uh_visits, uh_num, uh_text;
