-- Privacy units (README "Privacy units"): bounded contributions per unit, dx.count_units and
-- COUNT(DISTINCT unit), unit-level noise scales, the ledger, dx.explain, refusals.
SET client_min_messages = notice;
-- the test seed fixes the rank key of every execution (README "Stable contribution bounding"), so the
-- SQL reference below ranks rows as the bounded statements do
SET dxpriv.test_seed = 2424;
-- the ranks hash the table's oid, which depends on what ran before: answers that depend on which rows
-- are kept are compared with the reference (same rows, in any order; distinct column names), not printed
CREATE FUNCTION pg_temp.same_rows(dx_query text, reference text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.cmp_dx, pg_temp.cmp_ref;
	EXECUTE 'CREATE TEMP TABLE cmp_dx AS ' || dx_query;
	EXECUTE 'CREATE TEMP TABLE cmp_ref AS ' || reference;
	SELECT count(*) INTO n FROM ((SELECT * FROM cmp_dx EXCEPT ALL SELECT * FROM cmp_ref)
	                              UNION ALL (SELECT * FROM cmp_ref EXCEPT ALL SELECT * FROM cmp_dx)) d;
	RETURN n = 0 AND (SELECT count(*) FROM cmp_dx) > 0;
END $$;
CREATE TABLE pu_visits (person int NOT NULL, ward text, age int, note text);
-- person p has 1 + (p * p) % 13 visits (1..13, heavy for a few)
INSERT INTO pu_visits
SELECT p, (ARRAY['a','b','c'])[1 + (p + i) % 3], 20 + (p * 7 + i) % 60, 'v' || i
FROM generate_series(1, 300) p, generate_series(1, 1 + (p * p) % 13) i;
SELECT dx.protect_table('pu_visits', 'Infinity');
SELECT dx.set_column('pu_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('pu_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'pu_visits', 100);

-- bad declarations
SELECT dx.set_privacy_unit('pu_visits', 'person', 0);
SELECT dx.set_privacy_unit('pu_visits', 'person', 3, 0);
SELECT dx.set_privacy_unit('pu_visits', 'person', 100001);
SELECT dx.set_privacy_unit('pu_visits', 'nope', 3);
SELECT dx.set_privacy_unit('pu_visits', 'ward', 3);
CREATE TABLE pu_plain (id int);
SELECT dx.set_privacy_unit('pu_plain', 'id', 3);
DROP TABLE pu_plain;
SELECT dx.unset_privacy_unit('pu_visits');
SELECT dx.count_units(person) FROM pu_visits;
SELECT dx.set_privacy_unit('pu_visits', 'person', 3, 2, 2);
SELECT dx.set_column('pu_visits', 'person', '{"min":0,"max":1000}', '{"type":"none"}');
SELECT unit_column, max_rows_per_unit, max_groups_per_unit, max_rows_per_unit_per_group, octet_length(hash_key)
FROM dx.privacy_units;

-- noiseless (presence Infinity, metrics none): the answers are the bounded table's, exactly as a SQL
-- reference of the same rule computes them (keep a unit's 3 rows of smallest rank)
CREATE TEMP VIEW pu_ranked AS
SELECT v.*, row_number() OVER (PARTITION BY person ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r
FROM pu_visits v;
SELECT count(*), count(DISTINCT person) FROM pu_ranked WHERE r <= 3;
SELECT pg_temp.same_rows(
	'SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.count_units(person) FILTER (WHERE age >= 50) AS u FROM pu_visits',
	'SELECT count(*) AS n, sum(age) AS s, count(DISTINCT person) FILTER (WHERE age >= 50) AS u FROM pu_ranked WHERE r <= 3');
SELECT pg_temp.same_rows(
	'SELECT dx.count(*) FILTER (WHERE ward = ''a'') AS n, dx.count(DISTINCT person) AS u FROM pu_visits WHERE age < 40',
	'SELECT count(*) FILTER (WHERE ward = ''a'') AS n, count(DISTINCT person) AS u FROM pu_ranked WHERE r <= 3 AND age < 40');
-- GROUP BY: the same rows (G = 2 and kg = 2 are recorded, not applied: a unit keeps its 3 rows of
-- smallest rank whatever their wards)
CREATE TEMP VIEW pu_grouped AS
SELECT ward, count(*) AS n, sum(age) AS s, count(DISTINCT person) AS u FROM pu_ranked WHERE r <= 3 GROUP BY ward;
SELECT pg_temp.same_rows('SELECT ward, dx.count(*) AS n, dx.sum(age) AS s, dx.count_units(person) AS u FROM pu_visits GROUP BY ward',
                         'SELECT * FROM pu_grouped');
SELECT dx.set_privacy_unit('pu_visits', 'person', 3, NULL, 1);
SELECT pg_temp.same_rows('SELECT ward, dx.count(*) AS n FROM pu_visits GROUP BY ward', 'SELECT ward, n FROM pu_grouped');
-- one row per person: the grouped counts add up to the number of persons (300)
SELECT dx.set_privacy_unit('pu_visits', 'person', 1);
SELECT sum(n) FROM (SELECT ward, dx.count(*) AS n FROM pu_visits GROUP BY ward) s;
SELECT dx.count(*), dx.count_units(person) FROM pu_visits;
SELECT dx.set_privacy_unit('pu_visits', 'person', 3, 2, 2);
-- the same in a parallel plan
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET force_parallel_mode = regress;
SELECT dx.clear_cache('pu_visits') >= 0 AS fresh_answers;
SELECT pg_temp.same_rows('SELECT ward, dx.count(*) AS n, dx.sum(age) AS s, dx.count_units(person) AS u FROM pu_visits GROUP BY ward',
                         'SELECT * FROM pu_grouped');
SELECT pg_temp.same_rows(
	'SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.count_units(person) FILTER (WHERE age >= 50) AS u FROM pu_visits',
	'SELECT count(*) AS n, sum(age) AS s, count(DISTINCT person) FILTER (WHERE age >= 50) AS u FROM pu_ranked WHERE r <= 3');
RESET force_parallel_mode;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- analysts: COUNT(DISTINCT person) is dx.count_units; the unit column is no declared column
CREATE ROLE dx_regress_pu;
SELECT dx.add_analyst('dx_regress_pu');
SELECT dx.grant_budget('dx_regress_pu', 'pu_visits', 10);
SET ROLE dx_regress_pu;
SELECT count(*), count(DISTINCT person) FROM pu_visits;
SELECT count(*) FROM pu_visits WHERE person = 7;
SELECT person, count(*) FROM pu_visits GROUP BY person;
SELECT count(DISTINCT ward) FROM pu_visits;
SELECT count(DISTINCT person + 1) FROM pu_visits;
SELECT * FROM dx.privacy_units;
RESET ROLE;
SELECT dx.remove_analyst('dx_regress_pu');
DROP OWNED BY dx_regress_pu;

-- noise: presence 1 protects a whole unit; one row per unit is the row-level scale
SELECT dx.protect_table('pu_visits', 1.0);
SELECT dx.set_column('pu_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"discrete"}');
SELECT kind, group_key, noise_scale, unit_bound, unit_noise_factor, plain_dp_scale
FROM dx.explain('SELECT dx.count(*) FROM pu_visits');
SELECT kind, group_key, noise_scale, unit_bound, unit_noise_factor
FROM dx.explain('SELECT dx.sum(age, 0.5) FROM pu_visits');
-- grouped count: a unit moves at most 3 rows, so each group's count gets scale 3/eps; with one row
-- per unit it would be 2/eps (a row changing its ward moves two counts); count_units: a unit counts
-- in at most 3 wards (G is not applied)
SELECT kind, group_key, round(noise_scale::numeric, 6) AS scale, unit_bound, round(unit_noise_factor::numeric, 6) AS factor
FROM dx.explain('SELECT ward, dx.count(*) FROM pu_visits GROUP BY ward') ORDER BY cell;
SELECT kind, group_key, round(noise_scale::numeric, 6) AS scale
FROM dx.explain('SELECT ward, dx.count_units(person) FROM pu_visits GROUP BY ward') ORDER BY cell;
SELECT kind, round(noise_scale::numeric, 6) AS scale
FROM dx.explain('SELECT dx.count(DISTINCT person) FROM pu_visits');
-- the ledger records the unit and the bound
SELECT dx.count(*) >= 0 FROM pu_visits;
SELECT ward, dx.count(*) >= 0 FROM pu_visits GROUP BY ward ORDER BY ward;
SELECT mechanism, epsilon, scales FROM dx.ledger WHERE relid = 'pu_visits'::regclass ORDER BY id DESC LIMIT 2;

-- a renamed unit column is followed (sql/95_ddl_events.sql); a unit column missing from the
-- table (the DDL trigger disabled) fails closed (never one row per record again)
ALTER TABLE pu_visits RENAME COLUMN person TO who;
SELECT unit_column FROM dx.privacy_units WHERE relid = 'pu_visits'::regclass;
SELECT dx.count(*) >= 0 FROM pu_visits;
ALTER TABLE pu_visits RENAME COLUMN who TO person;
ALTER EVENT TRIGGER dx_ddl_start DISABLE;
ALTER TABLE pu_visits RENAME COLUMN person TO who;
SELECT dx.count(*) FROM pu_visits;
ALTER TABLE pu_visits RENAME COLUMN who TO person;
ALTER EVENT TRIGGER dx_ddl_start ENABLE ALWAYS;
SELECT dx.count(*) >= 0 FROM pu_visits;

-- refused on tables with a privacy unit
SELECT dx.mode(ward) FROM pu_visits;
SELECT ward, dx.count(*) FROM pu_visits GROUP BY ROLLUP (ward);
SET dxpriv.noise = 'gaussian';
SELECT dx.set_delta('pu_visits', 1e-6);
SELECT dx.count(*) FROM pu_visits;
RESET dxpriv.noise;
SELECT dx.count_units(ward) FROM pu_visits;
SELECT dx.count_units(person + 1) FROM pu_visits;
SELECT dx.count(DISTINCT ward) FROM pu_visits;
SELECT dx.count_units(person ORDER BY person) FROM pu_visits;

-- without the unit the record is one row again
SELECT dx.unset_privacy_unit('pu_visits');
SELECT kind, noise_scale, unit_bound, unit_noise_factor FROM dx.explain('SELECT dx.count(*) FROM pu_visits');
SELECT dx.count(DISTINCT ward) FROM pu_visits;
SELECT dx.unprotect_table('pu_visits');
DROP TABLE pu_visits CASCADE;
DROP ROLE dx_regress_pu;
