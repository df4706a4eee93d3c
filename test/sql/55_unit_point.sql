-- Privacy units, cheaper per row (issue 23, unitpoint): dx._unit_rank by SipHash-2-4 specialised to
-- its 10-byte message (the same ranks as the generic code behind dxpriv.unit_rank_reference), each
-- unit sorted when it is emitted, and the planner's estimate of the kept rows (dx._unit_rows_support:
-- the table's rows, so grouped statements hash their groups). Under one test seed the new path gives
-- the answers of the previous one (the sort with the generic rank): noiseless with hashed grouping,
-- noisy with sorted grouping (a hash aggregate draws its groups' noise in the order it meets them),
-- serial, parallel and spilling.
SET client_min_messages = notice;
-- the hash pass itself (unit profiles, regress 66, would bound most statements here by a qual)
SET dxpriv.unit_profiles = off;
-- q under the new path (hash bounding, specialised rank, hashed grouping allowed unless `sorted`)
-- and under the previous one (sort, generic rank, sorted grouping), same seed, fresh cache: true
-- when the answers are the same rows (at least one)
CREATE FUNCTION pg_temp.same_prev(q text, sorted boolean DEFAULT false) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE n bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.up_new, pg_temp.up_prev;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('enable_hashagg', CASE WHEN sorted THEN 'off' ELSE 'on' END, true);
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'hash', true);
	PERFORM pg_catalog.set_config('dxpriv.unit_rank_reference', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '5555', true);
	EXECUTE 'CREATE TEMP TABLE up_new AS ' || q;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('enable_hashagg', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'sort', true);
	PERFORM pg_catalog.set_config('dxpriv.unit_rank_reference', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '5555', true);
	EXECUTE 'CREATE TEMP TABLE up_prev AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.unit_bounding', 'hash', true);
	PERFORM pg_catalog.set_config('dxpriv.unit_rank_reference', 'off', true);
	PERFORM pg_catalog.set_config('enable_hashagg', 'on', true);
	SELECT count(*) INTO n FROM ((SELECT * FROM up_new EXCEPT ALL SELECT * FROM up_prev)
	                              UNION ALL (SELECT * FROM up_prev EXCEPT ALL SELECT * FROM up_new)) d;
	RETURN n = 0 AND (SELECT count(*) FROM up_new) > 0;
END $$;
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
-- the planner's rows of the ProjectSet that emits the kept rows
CREATE FUNCTION pg_temp.kept_rows_estimate(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE j json; BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (SELECT (m[1])::float8 FROM regexp_matches(j::text, '"Node Type": "ProjectSet",[^{}]*"Plan Rows": ([0-9.]+)') m);
END $$;

-- 30,000 persons with 1 to 9 visits each (109,997 rows), some wards and ages NULL
CREATE TABLE up_visits (person int NOT NULL, ward text, age int, cost numeric);
INSERT INTO up_visits
SELECT p, CASE WHEN (p + i) % 11 = 0 THEN NULL ELSE (ARRAY['a','b','c'])[1 + (p + i) % 3] END,
       CASE WHEN (p * i) % 13 = 0 THEN NULL ELSE 20 + (p * 7 + i) % 60 END, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(1, 30000) p, generate_series(1, 1 + (p * p) % 9) i;
ANALYZE up_visits;
SELECT dx.protect_table('up_visits', 'Infinity');
SELECT dx.set_column('up_visits', 'ward', '{"values":["a","b","c"]}', '{"type":"none"}');
SELECT dx.set_column('up_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.set_column('up_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'up_visits', 1e9);
SELECT dx.set_privacy_unit('up_visits', 'person', 4);

-- the specialised rank is the generic one, row by row (one seed: one key), over many pages and
-- after an update moved rows; the setting is the superuser's
SET dxpriv.test_seed = 5555;
CREATE TEMP TABLE up_rank_fast AS SELECT ctid::text AS t, dx._unit_rank(tableoid, ctid) AS r FROM up_visits;
SET dxpriv.unit_rank_reference = on;
CREATE TEMP TABLE up_rank_ref AS SELECT ctid::text AS t, dx._unit_rank(tableoid, ctid) AS r FROM up_visits;
RESET dxpriv.unit_rank_reference;
SELECT count(*) AS rows, count(*) FILTER (WHERE f.r = g.r) AS equal_ranks, count(DISTINCT f.r) AS distinct_ranks
FROM up_rank_fast f JOIN up_rank_ref g USING (t);
UPDATE up_visits SET age = age WHERE person % 50 = 0;
DROP TABLE up_rank_fast, up_rank_ref;
CREATE TEMP TABLE up_rank_fast AS SELECT ctid::text AS t, dx._unit_rank(tableoid, ctid) AS r FROM up_visits;
SET dxpriv.unit_rank_reference = on;
CREATE TEMP TABLE up_rank_ref AS SELECT ctid::text AS t, dx._unit_rank(tableoid, ctid) AS r FROM up_visits;
RESET dxpriv.unit_rank_reference;
SELECT count(*) AS rows, count(*) FILTER (WHERE f.r = g.r) AS equal_ranks FROM up_rank_fast f JOIN up_rank_ref g USING (t);
-- an inherited table: rows of two tables (two tableoids) interleaved in one scan
CREATE TABLE up_parent (person int NOT NULL, age int);
CREATE TABLE up_child () INHERITS (up_parent);
INSERT INTO up_parent SELECT i % 300, i % 90 FROM generate_series(1, 3000) i;
INSERT INTO up_child SELECT i % 300, i % 90 FROM generate_series(1, 3000) i;
SELECT (SELECT array_agg(dx._unit_rank(tableoid, ctid) ORDER BY tableoid, ctid) FROM up_parent) =
       (SELECT array_agg(r ORDER BY o, c) FROM (SELECT tableoid AS o, ctid AS c, dx._unit_rank(tableoid, ctid) AS r FROM up_parent) s)
       AS same_key_within_one_seed;
CREATE TEMP TABLE up_inh_fast AS SELECT tableoid::int AS o, ctid::text AS t, dx._unit_rank(tableoid, ctid) AS r FROM up_parent;
SET dxpriv.unit_rank_reference = on;
CREATE TEMP TABLE up_inh_ref AS SELECT tableoid::int AS o, ctid::text AS t, dx._unit_rank(tableoid, ctid) AS r FROM up_parent;
RESET dxpriv.unit_rank_reference;
SELECT count(*) AS rows, count(*) FILTER (WHERE f.r = g.r) AS equal_ranks FROM up_inh_fast f JOIN up_inh_ref g USING (o, t);
RESET dxpriv.test_seed;

-- the plan: the kept rows are estimated as the table's rows, and a grouped statement hashes its
-- groups above the bounding (no sort of the kept rows)
SET max_parallel_workers_per_gather = 0;
CREATE FUNCTION pg_temp.scan_rows(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE j json; BEGIN
	EXECUTE 'EXPLAIN (FORMAT JSON) ' || q INTO j;
	RETURN (j -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END $$;
SELECT pg_temp.kept_rows_estimate('SELECT ward, dx.count(*) FROM up_visits GROUP BY ward') =
       pg_temp.scan_rows('SELECT * FROM up_visits') AS estimate_is_table_rows,
       pg_temp.scan_rows('SELECT * FROM up_visits') > 100000 AS table_rows_estimated;
SELECT position('HashAggregate' IN p) > 0 AS hashed_groups,
       (length(p) - length(replace(p, 'Sort Key', ''))) / length('Sort Key') AS sorts
FROM pg_temp.plan_text('SELECT ward, dx.count(*), dx.avg(cost) FROM up_visits GROUP BY ward') p;
RESET max_parallel_workers_per_gather;

-- the same answers as the previous path: noiseless (hashed grouping), serial
SET max_parallel_workers_per_gather = 0;
SELECT q, pg_temp.same_prev(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n FROM up_visits'),
	('SELECT dx.count(*) AS n, dx.sum(age) AS s, dx.avg(cost) AS a FROM up_visits'),
	('SELECT dx.sum(cost) AS s FROM up_visits WHERE age >= 40'),
	('SELECT dx.count(*) FILTER (WHERE ward = ''a'') AS n, dx.sum(age) FILTER (WHERE cost < 50) AS s FROM up_visits'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM up_visits WHERE age < 50'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a FROM up_visits GROUP BY ward'),
	('SELECT ward, dx.count_units(person) AS u, dx.sum(cost) AS s FROM up_visits GROUP BY ward'),
	('SELECT ward, age / 20 AS band, dx.count(*) AS n, dx.count_units(person) FILTER (WHERE cost > 10) AS u FROM up_visits GROUP BY ward, age / 20')
) t(q);
-- parallel (workers bound their rows, the leader merges) and spilling (64 kB)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT q, pg_temp.same_prev(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(cost) AS s FROM up_visits WHERE age >= 30'),
	('SELECT ward, dx.count(*) AS n, dx.avg(cost) AS a, dx.count_units(person) AS u FROM up_visits GROUP BY ward')
) t(q);
SET work_mem = '64kB';
SELECT q, pg_temp.same_prev(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.avg(age) AS a, dx.count_units(person) AS u FROM up_visits'),
	('SELECT ward, dx.count(*) AS n, dx.sum(cost) FILTER (WHERE age < 40) AS s FROM up_visits GROUP BY ward')
) t(q);
SET max_parallel_workers_per_gather = 0;
SELECT q, pg_temp.same_prev(q) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM up_visits'),
	('SELECT ward, age / 20 AS band, dx.count(*) AS n, dx.count_units(person) AS u FROM up_visits GROUP BY ward, age / 20')
) t(q);
RESET work_mem;

-- noisy (the noise drawn from the seed), groups sorted on both paths: identical draws
SELECT dx.protect_table('up_visits', 1.0);
SELECT dx.set_column('up_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SET max_parallel_workers_per_gather = 0;
SELECT q, pg_temp.same_prev(q, true) AS same FROM (VALUES
	('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM up_visits WHERE cost < 60'),
	('SELECT ward, dx.count(*) AS n, dx.avg(age) AS a, dx.count_units(person) AS u FROM up_visits GROUP BY ward')
) t(q);
SET max_parallel_workers_per_gather = 2;
SET work_mem = '64kB';
SELECT q, pg_temp.same_prev(q, true) AS same FROM (VALUES
	('SELECT ward, dx.count(*) AS n, dx.sum(age) FILTER (WHERE cost > 20) AS s FROM up_visits GROUP BY ward')
) t(q);
RESET work_mem;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;

-- the settings and the support function are not an analyst's
CREATE ROLE dx_regress_up;
SET ROLE dx_regress_up;
SET dxpriv.unit_rank_reference = on;
SELECT dx._unit_rows_support(NULL);
RESET ROLE;
DROP ROLE dx_regress_up;
