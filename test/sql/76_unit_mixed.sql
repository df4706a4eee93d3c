-- count_units mixed with other aggregates, and several grouped count_units (unitmixed): grouped,
-- they keep the per-statement hash pass (dx._unit_bound) with dxpriv.unit_profiles on, because the
-- two profile-based sources tried were slower at 2M rows (doc/performance.md, "Mixed count_units
-- statements"); ungrouped, they run in one scan of the profile's kept rows (unitmixed2,
-- dx._noisy_count_units). Every noisy answer and every charge must be those of profiles off under
-- one test seed, and the path of each shape is checked.
SET client_min_messages = notice;
CREATE FUNCTION pg_temp.um_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
CREATE FUNCTION pg_temp.has(p text, s text) RETURNS int LANGUAGE sql AS
$$ SELECT (length(p) - length(replace(p, s, ''))) / length(s) $$;
CREATE FUNCTION pg_temp.um_spent() RETURNS numeric LANGUAGE sql AS
$$ SELECT coalesce(sum(spent), 0)::numeric FROM dx.budgets $$;
-- the statement run with the profile path and with the hash pass (profiles off), same seed and a
-- fresh answer cache: 'same' when the answers (noisy) and the charges are identical
CREATE FUNCTION pg_temp.same_units(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; c_on numeric; c_off numeric; s numeric; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.um_on, pg_temp.um_off;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '7676', true);
	s := pg_temp.um_spent();
	EXECUTE 'CREATE TEMP TABLE um_on AS ' || q;
	c_on := pg_temp.um_spent() - s;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '7676', true);
	s := pg_temp.um_spent();
	EXECUTE 'CREATE TEMP TABLE um_off AS ' || q;
	c_off := pg_temp.um_spent() - s;
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	SELECT count(*) INTO n FROM ((SELECT * FROM um_on EXCEPT ALL SELECT * FROM um_off)
	                              UNION ALL (SELECT * FROM um_off EXCEPT ALL SELECT * FROM um_on)) d;
	IF (SELECT count(*) FROM um_on) = 0 THEN RETURN 'no rows'; END IF;
	IF n <> 0 THEN RETURN 'answers differ'; END IF;
	IF c_on <> c_off OR c_on <= 0 THEN RETURN format('charges differ: %s / %s', c_on, c_off); END IF;
	RETURN 'same';
END $$;
-- which path: 'hash pass', 'mixed' (keep qual and a window), 'distinct' (keep qual, one row per unit),
-- 'one scan' (keep qual, dx._noisy_count_units beside the other aggregates: unitmixed2, regress 81)
CREATE FUNCTION pg_temp.um_path(q text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN pg_temp.has(p, '_unit_bound(') > 0 THEN 'hash pass'
	            WHEN pg_temp.has(p, 'WindowAgg') > 0 AND pg_temp.has(p, '_unit_keep(') > 0 THEN 'mixed'
	            WHEN pg_temp.has(p, 'Group Key: ') + pg_temp.has(p, 'Unique') > 0 AND pg_temp.has(p, '_unit_keep(') > 0 THEN 'distinct'
	            WHEN pg_temp.has(p, '_noisy_count_units(') > 0 AND pg_temp.has(p, '_unit_keep(') > 0 THEN 'one scan'
	            WHEN pg_temp.has(p, '_unit_keep(') > 0 THEN 'profile rows' ELSE 'other' END
	FROM pg_temp.um_plan(q) p $$;

-- person p has 1 + (p * p) % 17 visits; person 7 is NULL (one unit in the bounding)
CREATE TABLE um_visits (person int, ward text, age int, cost numeric);
INSERT INTO um_visits
SELECT CASE WHEN p = 7 THEN NULL ELSE p END,
       CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c'])[1 + (p + i) % 3] END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 400) p, generate_series(1, 1 + (p * p) % 17) i;
SELECT dx.protect_table('um_visits', 1.0);
SELECT dx.set_column('um_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('um_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SELECT dx.set_column('um_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'um_visits', 1e6);
SELECT dx.set_privacy_unit('um_visits', 'person', 3);
SET dxpriv.epsilon = 1;
SET dxpriv.test_seed = 7676;
-- the paths: count_units with other aggregates ungrouped: one scan (unitmixed2); grouped, and several
-- grouped count_units: the hash pass; count_units alone keeps one row per unit
SELECT q, pg_temp.um_path(q) AS path FROM (VALUES
	('SELECT dx.count_units(person), dx.count(*) FROM um_visits'),
	('SELECT dx.count_units(person), dx.count(*), dx.sum(age), dx.avg(cost) FROM um_visits WHERE ward = ''a'''),
	('SELECT ward, dx.count_units(person), dx.count(*) FROM um_visits GROUP BY ward'),
	('SELECT ward, dx.count_units(person), dx.count_units(person) FILTER (WHERE age > 50) FROM um_visits GROUP BY ward'),
	('SELECT dx.count_units(person) FROM um_visits')
) t(q);
-- without the profile (dxpriv.unit_profiles off): the hash pass
SET dxpriv.unit_profiles = off;
SELECT pg_temp.um_path('SELECT dx.count_units(person), dx.count(*) FROM um_visits') AS profiles_off;
RESET dxpriv.unit_profiles;
-- noisy answers and charges, path on and off
SELECT q, pg_temp.same_units(q) AS same FROM (VALUES
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(age) AS s, dx.avg(age) AS a FROM um_visits'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(cost) AS s FROM um_visits WHERE age > 30 AND ward <> ''c'''),
	('SELECT dx.count(*) FILTER (WHERE age > 30) AS n, dx.count_units(person) AS u, dx.count_units(person) FILTER (WHERE ward = ''b'') AS b FROM um_visits'),
	('SELECT dx.count_units(person) FILTER (WHERE cost < 20) AS u, dx.avg(cost) FILTER (WHERE age < 40) AS a FROM um_visits'),
	('SELECT dx.count_units(person) + dx.count(*) AS x FROM um_visits HAVING dx.count(*) > 0'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM um_visits WHERE age > 1000'),
	('SELECT ward, dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(age) AS s FROM um_visits GROUP BY ward'),
	('SELECT ward, age / 20 AS band, dx.count_units(person) AS u, dx.count(*) AS n FROM um_visits GROUP BY ward, age / 20'),
	('SELECT ward, dx.count_units(person) AS u, dx.count_units(person) FILTER (WHERE age > 50) AS o FROM um_visits GROUP BY ward'),
	('SELECT age / 10 AS band, dx.count_units(person) AS u, dx.avg(cost) AS c FROM um_visits WHERE cost < 70 GROUP BY 1 HAVING dx.count(*) > 3')
) t(q);
-- k = 1 and k = 10
SELECT dx.set_privacy_unit('um_visits', 'person', 1);
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM um_visits WHERE age < 50') AS k1,
       pg_temp.same_units('SELECT ward, dx.count_units(person) AS u, dx.sum(age) AS s FROM um_visits GROUP BY ward') AS k1_grouped;
SELECT dx.set_privacy_unit('um_visits', 'person', 10);
SELECT pg_temp.same_units('SELECT dx.count_units(person) FILTER (WHERE ward = ''c'') AS c, dx.count(*) AS n FROM um_visits') AS k10,
       pg_temp.same_units('SELECT age / 10 AS band, dx.count_units(person) AS u, dx.count(*) AS n FROM um_visits GROUP BY 1') AS k10_grouped;
SELECT dx.set_privacy_unit('um_visits', 'person', 3);
-- parallel (cheap workers), sorted, forced parallel
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT q, pg_temp.same_units(q) AS same FROM (VALUES
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(age) AS s FROM um_visits'),
	('SELECT dx.count_units(person) FILTER (WHERE ward = ''a'') AS a, dx.avg(cost) AS c FROM um_visits WHERE age > 25'),
	('SELECT ward, dx.count_units(person) AS u, dx.count(*) AS n FROM um_visits GROUP BY ward')
) t(q);
SET enable_hashagg = off;
SET enable_hashjoin = off;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM um_visits WHERE cost < 60') AS sorted_parallel;
RESET enable_hashagg;
RESET enable_hashjoin;
SET force_parallel_mode = on;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.sum(age) AS s FROM um_visits') AS forced_parallel;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- text units (NULL among them) and numeric units (1.0 and 1.00 are one unit)
CREATE TABLE um_text (who text, age int);
INSERT INTO um_text SELECT CASE WHEN p = 1 THEN NULL ELSE 'u' || p END, (p * 7 + i) % 100
FROM generate_series(1, 60) p, generate_series(1, p % 7 + 1) i;
SELECT dx.protect_table('um_text', 1.0);
SELECT dx.set_column('um_text', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'um_text', 1e6);
SELECT dx.set_privacy_unit('um_text', 'who', 3);
SELECT pg_temp.um_path('SELECT dx.count_units(who), dx.count(*) FROM um_text') AS text_path,
       pg_temp.same_units('SELECT dx.count_units(who) AS u, dx.count(*) AS n FROM um_text WHERE age > 20') AS text_unit,
       pg_temp.same_units('SELECT age / 20 AS band, dx.count_units(who) AS u, dx.sum(age) AS s FROM um_text GROUP BY 1') AS text_grouped;
CREATE TABLE um_num (who numeric, age int);
INSERT INTO um_num SELECT CASE WHEN p = 3 THEN NULL ELSE (p % 50)::numeric + CASE WHEN i % 2 = 0 THEN 0.00 ELSE 0.0 END END, (p * 7 + i) % 100
FROM generate_series(1, 80) p, generate_series(1, 9) i;
SELECT dx.protect_table('um_num', 1.0);
SELECT dx.set_column('um_num', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'um_num', 1e6);
SELECT dx.set_privacy_unit('um_num', 'who', 2);
SELECT pg_temp.same_units('SELECT dx.count_units(who) AS u, dx.count(*) AS n, dx.count_units(who) FILTER (WHERE age < 50) AS y FROM um_num') AS numeric_unit,
       pg_temp.same_units('SELECT age / 20 AS band, dx.count_units(who) AS u, dx.count(*) AS n FROM um_num GROUP BY 1') AS numeric_grouped;
-- a partitioned table (partitions order their columns differently), an inherited one, ONLY
CREATE TABLE um_part (person int, age int) PARTITION BY RANGE (age);
CREATE TABLE um_part_1 PARTITION OF um_part FOR VALUES FROM (0) TO (50);
CREATE TABLE um_part_2 (age int, person int);
ALTER TABLE um_part ATTACH PARTITION um_part_2 FOR VALUES FROM (50) TO (101);
INSERT INTO um_part SELECT p, (p * 13 + i * 29) % 100 FROM generate_series(1, 200) p, generate_series(1, p % 9 + 1) i;
SELECT dx.protect_table('um_part', 1.0);
SELECT dx.set_column('um_part', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'um_part', 1e6);
SELECT dx.set_privacy_unit('um_part', 'person', 4);
SELECT pg_temp.um_path('SELECT dx.count_units(person), dx.count(*) FROM um_part') AS partitioned_path,
       pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM um_part WHERE age > 30') AS partitioned,
       pg_temp.same_units('SELECT age / 10 AS band, dx.count_units(person) AS u, dx.sum(age) AS s FROM um_part GROUP BY 1') AS partitioned_grouped;
CREATE TABLE um_parent (person int, age int);
CREATE TABLE um_child () INHERITS (um_parent);
INSERT INTO um_parent SELECT p, p % 100 FROM generate_series(1, 100) p, generate_series(1, 3) i;
INSERT INTO um_child SELECT p, (p * 3) % 100 FROM generate_series(1, 150) p, generate_series(1, 4) i;
SELECT dx.protect_table('um_parent', 1.0);
SELECT dx.set_column('um_parent', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'um_parent', 1e6);
SELECT dx.set_privacy_unit('um_parent', 'person', 5);
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM um_parent') AS inherited,
       pg_temp.same_units('SELECT age / 30 AS band, dx.count_units(person) AS u, dx.count(*) AS n FROM um_parent GROUP BY 1') AS inherited_grouped,
       pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.sum(age) AS s FROM ONLY um_parent') AS only_parent;

-- noiseless: a unit counts once (persons in both parent and child too); the rows counted are the kept ones
SELECT dx.protect_table('um_parent', 'Infinity');
SELECT dx.count_units(person) AS units, dx.count(*) AS rows_kept FROM um_parent; -- 150 units; 100 * 5 + 50 * 4 rows
SELECT count(DISTINCT person) AS native_units FROM um_parent;
