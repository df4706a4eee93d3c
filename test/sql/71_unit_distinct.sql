-- count_units through the unit profile (planner/unit_distinct_source.h): a statement whose
-- aggregates are all count_units reads the profile-bounded rows (the dx._unit_keep qual) and keeps
-- one row per unit (ungrouped: DISTINCT ON the unit, or GROUP BY it with one flag per aggregate) or
-- per unit and group (grouped, one count_units: DISTINCT ON (unit, group), the row's own columns)
-- among the rows passing the WHERE/FILTER lookup. Every answer and every charge must be those of
-- the hash pass (dxpriv.unit_profiles off), noisy, under one test seed; statements mixing
-- count_units with other aggregates take one scan ungrouped (unitmixed2, regress 81) and the hash
-- pass grouped, as do several grouped count_units (compared too).
SET client_min_messages = notice;
CREATE FUNCTION pg_temp.ud_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
CREATE FUNCTION pg_temp.has(p text, s text) RETURNS int LANGUAGE sql AS
$$ SELECT (length(p) - length(replace(p, s, ''))) / length(s) $$;
CREATE FUNCTION pg_temp.ud_spent() RETURNS numeric LANGUAGE sql AS
$$ SELECT coalesce(sum(spent), 0)::numeric FROM dx.budgets $$;
-- the statement run with the profile path and with the hash pass (profiles off), same seed and a
-- fresh answer cache: 'same' when the answers (noisy) and the charges are identical
CREATE FUNCTION pg_temp.same_units(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; c_on numeric; c_off numeric; s numeric; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.ud_on, pg_temp.ud_off;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '7171', true);
	s := pg_temp.ud_spent();
	EXECUTE 'CREATE TEMP TABLE ud_on AS ' || q;
	c_on := pg_temp.ud_spent() - s;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '7171', true);
	s := pg_temp.ud_spent();
	EXECUTE 'CREATE TEMP TABLE ud_off AS ' || q;
	c_off := pg_temp.ud_spent() - s;
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	SELECT count(*) INTO n FROM ((SELECT * FROM ud_on EXCEPT ALL SELECT * FROM ud_off)
	                              UNION ALL (SELECT * FROM ud_off EXCEPT ALL SELECT * FROM ud_on)) d;
	IF (SELECT count(*) FROM ud_on) = 0 THEN RETURN 'no rows'; END IF;
	IF n <> 0 THEN RETURN 'answers differ'; END IF;
	IF c_on <> c_off OR c_on <= 0 THEN RETURN format('charges differ: %s / %s', c_on, c_off); END IF;
	RETURN 'same';
END $$;
-- which path a statement takes: 'distinct' (keep qual, a Unique or a grouping, no hash pass), 'hash pass',
-- 'one scan' (keep qual and dx._noisy_count_units: unitmixed2), 'profile rows'
CREATE FUNCTION pg_temp.ud_path(q text) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN pg_temp.has(p, '_unit_bound(') > 0 THEN 'hash pass'
	            WHEN pg_temp.has(p, 'Group Key: ') + pg_temp.has(p, 'Unique') > 0 AND pg_temp.has(p, '_unit_keep(') > 0 THEN 'distinct'
	            WHEN pg_temp.has(p, '_noisy_count_units(') > 0 AND pg_temp.has(p, '_unit_keep(') > 0 THEN 'one scan'
	            WHEN pg_temp.has(p, '_unit_keep(') > 0 THEN 'profile rows' ELSE 'other' END
	FROM pg_temp.ud_plan(q) p $$;

-- person p has 1 + (p * p) % 17 visits; person 7 is NULL (one unit in the bounding)
CREATE TABLE ud_visits (person int, ward text, age int, cost numeric);
INSERT INTO ud_visits
SELECT CASE WHEN p = 7 THEN NULL ELSE p END,
       CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c'])[1 + (p + i) % 3] END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 400) p, generate_series(1, 1 + (p * p) % 17) i;
SELECT dx.protect_table('ud_visits', 1.0);
SELECT dx.set_column('ud_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('ud_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SELECT dx.set_column('ud_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ud_visits', 1e6);
SELECT dx.set_privacy_unit('ud_visits', 'person', 3);
SET dxpriv.epsilon = 1;
SET dxpriv.test_seed = 7171;
-- the paths: count_units alone reads the profile's rows, one row per unit (ungrouped) or per unit
-- and group (grouped, one count_units); mixed statements and several grouped count_units keep the
-- hash pass
SELECT q, pg_temp.ud_path(q) AS path FROM (VALUES
	('SELECT dx.count_units(person) FROM ud_visits'),
	('SELECT dx.count(DISTINCT person) FROM ud_visits WHERE age > 40'),
	('SELECT dx.count_units(person) FILTER (WHERE ward = ''a''), dx.count_units(person) FROM ud_visits'),
	('SELECT dx.count_units(person), dx.count(*) FROM ud_visits'),
	('SELECT dx.count_units(person), dx.sum(age) FROM ud_visits'),
	('SELECT ward, dx.count_units(person) FROM ud_visits GROUP BY ward'),
	('SELECT ward, age / 20, dx.count_units(person) FILTER (WHERE cost > 10) FROM ud_visits WHERE age > 30 GROUP BY 1, 2'),
	('SELECT ward, dx.count_units(person), dx.count(*) FROM ud_visits GROUP BY ward'),
	('SELECT ward, dx.count_units(person), dx.count_units(person) FILTER (WHERE age > 50) FROM ud_visits GROUP BY ward')
) t(q);
-- the profile stays sealed: the plan holds the profile's identity, no hash, no threshold
SELECT regexp_replace(l, '[0-9]{4,}', 'N', 'g') AS profile_lines
FROM regexp_split_to_table(pg_temp.ud_plan('SELECT dx.count_units(person) FROM ud_visits'), E'\n') l WHERE l ~ '_unit_';
-- noisy answers and charges, path on and off: ungrouped, WHERE, FILTER, HAVING, an empty WHERE,
-- mixed with count/sum (one scan, regress 81: a one-pass count reads every row), grouped by 1 and 2 keys
-- (expression keys: several column values per group), HAVING, two grouped count_units
SELECT q, pg_temp.same_units(q) AS same FROM (VALUES
	('SELECT dx.count_units(person) AS u FROM ud_visits'),
	('SELECT dx.count(DISTINCT person) AS u FROM ud_visits'),
	('SELECT dx.count_units(person) AS u FROM ud_visits WHERE age >= 40'),
	('SELECT dx.count_units(person) AS u FROM ud_visits WHERE ward = ''b'' AND cost < 30'),
	('SELECT dx.count_units(person) FILTER (WHERE ward = ''a'') AS a, dx.count_units(person) FILTER (WHERE age < 30) AS y, dx.count_units(person) AS u FROM ud_visits'),
	('SELECT dx.count_units(person) AS u FROM ud_visits WHERE age > 1000'),
	('SELECT dx.count_units(person) + 1 AS u FROM ud_visits HAVING dx.count_units(person) > 0'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(age) AS s FROM ud_visits'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM ud_visits'),
	('SELECT dx.count(*) FILTER (WHERE age > 30) AS n, dx.count_units(person) AS u FROM ud_visits'),
	('SELECT ward, dx.count_units(person) AS u FROM ud_visits GROUP BY ward'),
	('SELECT ward, age / 20 AS band, dx.count_units(person) AS u, dx.count(*) AS n FROM ud_visits GROUP BY ward, age / 20'),
	('SELECT ward, dx.count_units(person) FILTER (WHERE cost > 50) AS u FROM ud_visits WHERE age < 70 GROUP BY ward'),
	('SELECT age / 10 AS band, dx.count_units(person) AS u FROM ud_visits GROUP BY age / 10 HAVING dx.count_units(person) > 2'),
	('SELECT ward, cost > 50 AS dear, dx.count_units(person) AS u FROM ud_visits WHERE age BETWEEN 20 AND 60 GROUP BY 1, 2'),
	('SELECT ward, dx.count_units(person) AS u, dx.count_units(person) FILTER (WHERE age > 50) AS o FROM ud_visits GROUP BY ward')
) t(q);
-- k = 1 and k = 10
SELECT dx.set_privacy_unit('ud_visits', 'person', 1);
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u FROM ud_visits WHERE age < 50') AS k1,
       pg_temp.same_units('SELECT ward, dx.count_units(person) AS u FROM ud_visits GROUP BY ward') AS k1_grouped;
SELECT dx.set_privacy_unit('ud_visits', 'person', 10);
SELECT pg_temp.same_units('SELECT dx.count_units(person) FILTER (WHERE ward = ''c'') AS c, dx.count_units(person) AS u FROM ud_visits') AS k10,
       pg_temp.same_units('SELECT age / 10 AS band, dx.count_units(person) AS u FROM ud_visits GROUP BY 1') AS k10_grouped;
SELECT dx.set_privacy_unit('ud_visits', 'person', 3);
-- parallel (cheap workers) and forced parallel
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT q, pg_temp.same_units(q) AS same FROM (VALUES
	('SELECT dx.count_units(person) AS u FROM ud_visits'),
	('SELECT dx.count_units(person) FILTER (WHERE ward = ''a'') AS a, dx.count_units(person) AS u FROM ud_visits WHERE age > 25'),
	('SELECT ward, dx.count_units(person) AS u FROM ud_visits GROUP BY ward'),
	('SELECT ward, age / 25 AS band, dx.count_units(person) AS u FROM ud_visits WHERE cost < 80 GROUP BY 1, 2')
) t(q);
SET enable_hashagg = off; -- the sort distinct
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u FROM ud_visits WHERE cost < 60') AS sorted_parallel;
RESET enable_hashagg;
SET force_parallel_mode = on;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u FROM ud_visits') AS forced_parallel;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- text units (NULL among them) and numeric units (1.0 and 1.00 are one unit)
CREATE TABLE ud_text (who text, age int);
INSERT INTO ud_text SELECT CASE WHEN p = 1 THEN NULL ELSE 'u' || p END, (p * 7 + i) % 100
FROM generate_series(1, 60) p, generate_series(1, p % 7 + 1) i;
SELECT dx.protect_table('ud_text', 1.0);
SELECT dx.set_column('ud_text', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ud_text', 1e6);
SELECT dx.set_privacy_unit('ud_text', 'who', 3);
SELECT pg_temp.ud_path('SELECT dx.count_units(who) FROM ud_text') AS text_path,
       pg_temp.same_units('SELECT dx.count_units(who) AS u FROM ud_text WHERE age > 20') AS text_unit,
       pg_temp.same_units('SELECT age / 20 AS band, dx.count_units(who) AS u FROM ud_text GROUP BY 1') AS text_grouped;
CREATE TABLE ud_num (who numeric, age int);
INSERT INTO ud_num SELECT CASE WHEN p = 3 THEN NULL ELSE (p % 50)::numeric + CASE WHEN i % 2 = 0 THEN 0.00 ELSE 0.0 END END, (p * 7 + i) % 100
FROM generate_series(1, 80) p, generate_series(1, 9) i;
SELECT dx.protect_table('ud_num', 1.0);
SELECT dx.set_column('ud_num', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ud_num', 1e6);
SELECT dx.set_privacy_unit('ud_num', 'who', 2);
SELECT pg_temp.same_units('SELECT dx.count_units(who) AS u, dx.count_units(who) FILTER (WHERE age < 50) AS y FROM ud_num') AS numeric_unit,
       pg_temp.same_units('SELECT age / 20 AS band, dx.count_units(who) AS u FROM ud_num GROUP BY 1') AS numeric_grouped;
-- a partitioned table (partitions order their columns differently) and an inherited one, ONLY too
CREATE TABLE ud_part (person int, age int) PARTITION BY RANGE (age);
CREATE TABLE ud_part_1 PARTITION OF ud_part FOR VALUES FROM (0) TO (50);
CREATE TABLE ud_part_2 (age int, person int);
ALTER TABLE ud_part ATTACH PARTITION ud_part_2 FOR VALUES FROM (50) TO (101);
INSERT INTO ud_part SELECT p, (p * 13 + i * 29) % 100 FROM generate_series(1, 200) p, generate_series(1, p % 9 + 1) i;
SELECT dx.protect_table('ud_part', 1.0);
SELECT dx.set_column('ud_part', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ud_part', 1e6);
SELECT dx.set_privacy_unit('ud_part', 'person', 4);
SELECT pg_temp.ud_path('SELECT dx.count_units(person) FROM ud_part') AS partitioned_path,
       pg_temp.same_units('SELECT dx.count_units(person) AS u FROM ud_part WHERE age > 30') AS partitioned,
       pg_temp.same_units('SELECT age / 10 AS band, dx.count_units(person) AS u FROM ud_part GROUP BY 1') AS partitioned_grouped;
CREATE TABLE ud_parent (person int, age int);
CREATE TABLE ud_child () INHERITS (ud_parent);
INSERT INTO ud_parent SELECT p, p % 100 FROM generate_series(1, 100) p, generate_series(1, 3) i;
INSERT INTO ud_child SELECT p, (p * 3) % 100 FROM generate_series(1, 150) p, generate_series(1, 4) i;
SELECT dx.protect_table('ud_parent', 1.0);
SELECT dx.set_column('ud_parent', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ud_parent', 1e6);
SELECT dx.set_privacy_unit('ud_parent', 'person', 5);
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u FROM ud_parent') AS inherited,
       pg_temp.same_units('SELECT age / 30 AS band, dx.count_units(person) AS u FROM ud_parent GROUP BY 1') AS inherited_grouped,
       pg_temp.same_units('SELECT dx.count_units(person) AS u FROM ONLY ud_parent') AS only_parent;

-- noiseless: the count is the number of units (NULL counted as the hash pass counts it) with a kept
-- row passing the WHERE; a unit with all its rows in the WHERE counts once whatever its rows
SELECT dx.protect_table('ud_parent', 'Infinity');
SELECT dx.count_units(person) AS units_noiseless FROM ud_parent; -- persons 1..150
SELECT dx.count_units(person) AS units_noiseless FROM ud_parent WHERE age < 10; -- (parent: p % 100 < 10, child: (3p) % 100 < 10)
SELECT count(DISTINCT person) AS native FROM ud_parent WHERE age < 10;
