-- Privacy units: the hash bounding spills (executor/unit_bound.cpp). Beyond work_mem ×
-- hash_mem_multiplier, partitions of units go to a temporary tape set and are bounded one by one at
-- the end (again split by the next bits of the unit's hash when one partition alone is too large).
-- The kept rows do not depend on the memory limit: under one test seed every statement gives the
-- answers of the window-function plan (the sort), at 64 kB (spilling, also recursively) and at the
-- default work_mem, serial and parallel.
SET client_min_messages = notice;
-- the hash pass itself (unit profiles, regress 66, would bound most statements here by a qual)
SET dxpriv.unit_profiles = off;
CREATE FUNCTION pg_temp.same_both(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	PERFORM pg_catalog.set_config('enable_hashagg', 'off', true);
	DROP TABLE IF EXISTS pg_temp.us_hash, pg_temp.us_sort;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'hash', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '5454', true);
	EXECUTE 'CREATE TEMP TABLE us_hash AS ' || q;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'sort', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '5454', true);
	EXECUTE 'CREATE TEMP TABLE us_sort AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'hash', true);
	SELECT count(*) INTO n FROM ((SELECT * FROM us_hash EXCEPT ALL SELECT * FROM us_sort)
	                              UNION ALL (SELECT * FROM us_sort EXCEPT ALL SELECT * FROM us_hash)) d;
	RETURN n = 0 AND (SELECT count(*) FROM us_hash) > 0;
END $$;
-- temporary files written by this database so far (compared around statements that run the hash
-- pass only, in a transaction that flushes its statistics when it commits)
CREATE FUNCTION pg_temp.temp_files() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	PERFORM pg_stat_clear_snapshot();
	SELECT temp_files INTO n FROM pg_stat_database WHERE datname = current_database();
	RETURN n; END $$;

-- 160,000 visits of 40,000 persons (1 to 7 each), wards with 150-byte names (stored by reference),
-- NULL wards and ages; k = 3 keeps 97,143 rows: about 25 MB in the state when the wards are read,
-- 200 times the 128 kB limit at work_mem = 64kB, so each of the 256 spilled partitions is itself
-- split again (without the wards, a count spills about 5 MB at 64 kB, 0.7 MB at the default 4 MB,
-- nothing at 64 MB).
CREATE TABLE us_visits (person int NOT NULL, ward text, age int, cost numeric);
INSERT INTO us_visits
SELECT p, CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE repeat((ARRAY['a','b','c'])[1 + (p + i) % 3], 150) END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 40000) p, generate_series(1, 1 + (p * p) % 7) i;
ANALYZE us_visits;
SELECT dx.protect_table('us_visits', 'Infinity');
SELECT dx.set_column('us_visits', 'ward', json_build_object('values', ARRAY[repeat('a', 150), repeat('b', 150), repeat('c', 150)])::jsonb, '{"type":"none"}');
SELECT dx.set_column('us_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.set_column('us_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'us_visits', 1e9);
SELECT dx.set_privacy_unit('us_visits', 'person', 3);
-- the bounded count is the number of rows the rule keeps, at any work_mem (serial: a parallel
-- worker reports its temporary files when it exits, possibly after the statement)
SET max_parallel_workers_per_gather = 0;
SELECT sum(least(3, 1 + (p * p) % 7)) AS expected_rows FROM generate_series(1, 40000) p \gset
SET work_mem = '64kB';
SELECT pg_temp.temp_files() AS files_before \gset
BEGIN;
SELECT pg_stat_force_next_flush();
SELECT dx.count(*) = :expected_rows AS bounded_count_64kB, dx.count_units(person) AS units FROM us_visits;
COMMIT;
SELECT pg_temp.temp_files() > :files_before AS spilled;
SET work_mem = '64MB';
SELECT pg_temp.temp_files() AS files_before \gset
BEGIN;
SELECT pg_stat_force_next_flush();
SELECT dx.count(*) = :expected_rows AS bounded_count_64MB, dx.count_units(person) AS units FROM us_visits;
COMMIT;
SELECT pg_temp.temp_files() = :files_before AS in_memory;
RESET work_mem;
RESET max_parallel_workers_per_gather;

-- the same answers as the sort, spilling (64 kB) and not
SET work_mem = '64kB';
SELECT q, pg_temp.same_both(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.avg(cost) AS a FROM us_visits'),
	('SELECT dx.sum(cost) AS s FROM us_visits WHERE age >= 40'),
	('SELECT dx.count_units(person) FILTER (WHERE age >= 50) AS u, dx.count(*) FILTER (WHERE ward IS NULL) AS n FROM us_visits'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a, dx.count_units(person) AS u FROM us_visits GROUP BY ward'),
	('SELECT ward, age / 20 AS band, dx.count(*) AS n, dx.count_units(person) AS u FROM us_visits GROUP BY ward, age / 20')
) t(q);
RESET work_mem;
SELECT pg_temp.same_both('SELECT ward, dx.count(*) AS n, dx.sum(cost) AS s, dx.count_units(person) AS u FROM us_visits GROUP BY ward') AS same_default;

-- parallel plans at 64 kB: the workers spill, send their spilled rows to the leader, which spills
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET work_mem = '64kB';
SELECT q, pg_temp.same_both(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM us_visits'),
	('SELECT ward, dx.count(*) AS n, dx.count_units(person) FILTER (WHERE age > 30) AS u FROM us_visits GROUP BY ward')
) t(q);
SET force_parallel_mode = regress;
SELECT pg_temp.same_both('SELECT dx.count_units(person) AS u, dx.sum(cost) AS s FROM us_visits') AS forced;
RESET force_parallel_mode;
RESET work_mem;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- noisy (presence 1): the same draws at 64 kB and at the default work_mem, and the same charge
SELECT dx.protect_table('us_visits', 1.0);
SELECT dx.set_column('us_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SELECT dx.set_privacy_unit('us_visits', 'person', 3);
CREATE TEMP TABLE us_noisy (wm text, n float8, s float8, spent float8);
CREATE FUNCTION pg_temp.noisy(wm text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE before float8; BEGIN
	PERFORM pg_catalog.set_config('work_mem', wm, true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '77', true);
	PERFORM dx.clear_cache(NULL);
	SELECT coalesce(sum(spent), 0) INTO before FROM dx.budgets WHERE "table" = 'us_visits'::regclass;
	DROP TABLE IF EXISTS pg_temp.us_one;
	CREATE TEMP TABLE us_one AS SELECT dx.count(*) AS n, dx.sum(age) AS s FROM us_visits;
	INSERT INTO us_noisy SELECT wm, n, s, (SELECT coalesce(sum(spent), 0) FROM dx.budgets WHERE "table" = 'us_visits'::regclass) - before FROM us_one;
END $$;
SELECT pg_temp.noisy('64kB');
SELECT pg_temp.noisy('4MB');
SELECT count(DISTINCT (n, s, spent)) AS distinct_answers, min(spent) > 0 AS charged FROM us_noisy;

SELECT dx.unprotect_table('us_visits');
DROP TABLE us_visits;
