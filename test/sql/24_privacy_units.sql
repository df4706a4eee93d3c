-- Privacy units (README "Privacy units"): bounded contributions per unit, dx.count_units and
-- COUNT(DISTINCT unit), unit-level noise scales, the ledger, dx.explain, refusals.
SET client_min_messages = notice;
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
-- a fixed key (superuser) makes this file's answers deterministic; dx.set_privacy_unit draws a random one
UPDATE dx.privacy_units SET hash_key = '\x000102030405060708090a0b0c0d0e0f' WHERE relid = 'pu_visits'::regclass;

-- noiseless (presence Infinity, metrics none): the answers are the bounded table's, exactly as a SQL
-- reference of the same rule computes them (keep a unit's 3 rows of smallest keyed hash)
CREATE TEMP VIEW pu_ranked AS
SELECT v.*, row_number() OVER (PARTITION BY person ORDER BY dx._unit_hash(u.hash_key, person, ward, age)) AS r
FROM pu_visits v, dx.privacy_units u WHERE u.relid = 'pu_visits'::regclass;
SELECT count(*), sum(age), count(DISTINCT person) FILTER (WHERE age >= 50) FROM pu_ranked WHERE r <= 3;
SELECT dx.count(*), dx.sum(age), dx.count_units(person) FILTER (WHERE age >= 50) FROM pu_visits;
SELECT count(*) FILTER (WHERE ward = 'a'), count(DISTINCT person) FROM pu_ranked WHERE r <= 3 AND age < 40;
SELECT dx.count(*) FILTER (WHERE ward = 'a'), dx.count(DISTINCT person) FROM pu_visits WHERE age < 40;
-- GROUP BY: a unit's wards in the order of a keyed hash of (unit, ward index); the first 2 wards, the
-- 2 rows of smallest rank in each, and the first 3 of those (ward order, then rank)
CREATE TEMP VIEW pu_grouped AS
WITH h AS (
	SELECT v.*, dx._unit_hash(u.hash_key, person, ward, age) AS h,
	       dx._unit_hash(u.hash_key, person, (array_position(ARRAY['a','b','c'], ward) - 1)::int4) AS gh
	FROM pu_visits v, dx.privacy_units u WHERE u.relid = 'pu_visits'::regclass),
g AS (SELECT *, row_number() OVER (PARTITION BY person, ward ORDER BY h) AS rg,
             dense_rank() OVER (PARTITION BY person ORDER BY gh, ward) AS gr FROM h)
SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY person ORDER BY gh, ward, h) AS r
               FROM g WHERE rg <= 2 AND gr <= 2) t
WHERE r <= 3;
SELECT ward, count(*), sum(age), count(DISTINCT person) FROM pu_grouped GROUP BY ward ORDER BY ward;
SELECT ward, dx.count(*), dx.sum(age), dx.count_units(person) FROM pu_visits GROUP BY ward ORDER BY ward;
-- one row per ward and 3 rows in all (no bound on the number of wards): the total bound still holds
SELECT dx.set_privacy_unit('pu_visits', 'person', 3, NULL, 1);
WITH h AS (
	SELECT v.*, dx._unit_hash(u.hash_key, person, ward, age) AS h,
	       dx._unit_hash(u.hash_key, person, (array_position(ARRAY['a','b','c'], ward) - 1)::int4) AS gh
	FROM pu_visits v, dx.privacy_units u WHERE u.relid = 'pu_visits'::regclass),
g AS (SELECT *, row_number() OVER (PARTITION BY person, ward ORDER BY h) AS rg FROM h)
SELECT ward, count(*) FROM (SELECT *, row_number() OVER (PARTITION BY person ORDER BY gh, ward, h) AS r
                            FROM g WHERE rg <= 1) t
WHERE r <= 3 GROUP BY ward ORDER BY ward;
SELECT ward, dx.count(*) FROM pu_visits GROUP BY ward ORDER BY ward;
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
SELECT ward, dx.count(*), dx.sum(age), dx.count_units(person) FROM pu_visits GROUP BY ward ORDER BY ward;
SELECT dx.count(*), dx.sum(age), dx.count_units(person) FILTER (WHERE age >= 50) FROM pu_visits;
RESET force_parallel_mode;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- analysts: COUNT(DISTINCT person) is dx.count_units; the unit column is no declared column
CREATE ROLE dx_regress_pu;
SELECT dx.add_analyst('dx_regress_pu');
SELECT dx.grant_budget('dx_regress_pu', 'pu_visits', 10);
SET ROLE dx_regress_pu;
SELECT ward, count(*), count(DISTINCT person) FROM pu_visits GROUP BY ward ORDER BY ward;
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
-- grouped count: a unit moves at most 2 + 1 rows over 2 groups, so each group's count gets scale
-- 3/eps; with one row per unit it would be 2/eps (a row changing its ward moves two counts)
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
ALTER EVENT TRIGGER dx_ddl_start ENABLE;
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
