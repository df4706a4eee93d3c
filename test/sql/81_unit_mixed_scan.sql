-- count_units beside other aggregates in one scan (unitmixed2): dx._noisy_count_units over the unit
-- profile's kept rows. Under one test seed its noisy answers and charges equal the hash pass's
-- (profiles off), with the set of unit hashes spilled (work_mem 64kB), in parallel (workers'
-- serialized states combined), with the leader not participating and in a forced parallel plan;
-- NULL units, FILTERs that count different units; its serialized state cannot be forged.
SET client_min_messages = notice;
CREATE FUNCTION pg_temp.um_plan(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
CREATE FUNCTION pg_temp.has(p text, s text) RETURNS int LANGUAGE sql AS
$$ SELECT (length(p) - length(replace(p, s, ''))) / length(s) $$;
CREATE FUNCTION pg_temp.um_spent() RETURNS numeric LANGUAGE sql AS
$$ SELECT coalesce(sum(spent), 0)::numeric FROM dx.budgets $$;
CREATE FUNCTION pg_temp.same_units(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; c_on numeric; c_off numeric; s numeric; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.um_on, pg_temp.um_off;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '8181', true);
	s := pg_temp.um_spent();
	EXECUTE 'CREATE TEMP TABLE um_on AS ' || q;
	c_on := pg_temp.um_spent() - s;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '8181', true);
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

-- 30,000 persons (person p: 1 + p % 7 visits, person 0 and every 1000th NULL), stored in an order
-- that does not keep a unit's rows together
CREATE TABLE ums_visits (person int, age int, cost numeric);
INSERT INTO ums_visits
SELECT CASE WHEN p % 1000 = 0 THEN NULL ELSE p END, (p * 7 + i * 13) % 100, ((p * 31 + i * 17) % 1001) / 10.0
FROM generate_series(0, 29999) p, generate_series(1, 1 + p % 7) i ORDER BY (p * 7919 + i * 104729) % 100003;
SELECT dx.protect_table('ums_visits', 1.0);
SELECT dx.set_column('ums_visits', 'age', '{"min":0,"max":100}', '{"type":"absolute","scale":10}');
SELECT dx.set_column('ums_visits', 'cost', '{"min":0,"max":100,"step":0.1}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ums_visits', 1e6);
SELECT dx.set_privacy_unit('ums_visits', 'person', 3);
SET dxpriv.epsilon = 1;
SET dxpriv.test_seed = 8181;
ANALYZE ums_visits;
-- the path: one scan with the keep qual and dx._noisy_count_units beside the one-pass aggregates
SELECT pg_temp.has(p, '_noisy_count_units(') AS count_units_set, pg_temp.has(p, '_unit_keep(') AS keep_qual,
       pg_temp.has(p, '_unit_bound(') AS hash_pass, pg_temp.has(p, 'Sort') AS sorts
FROM pg_temp.um_plan('SELECT dx.count_units(person), dx.count(*), dx.sum(cost) FROM ums_visits') p;
-- count_units alone keeps its DISTINCT ON source; grouped statements keep theirs
SELECT pg_temp.has(p, '_noisy_count_units(') AS alone FROM pg_temp.um_plan('SELECT dx.count_units(person) FROM ums_visits') p;
SELECT pg_temp.has(p, '_noisy_count_units(') AS grouped FROM pg_temp.um_plan('SELECT age / 50, dx.count_units(person), dx.count(*) FROM ums_visits GROUP BY 1') p;
SELECT q, pg_temp.same_units(q) AS same FROM (VALUES
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(cost) AS s FROM ums_visits'),
	('SELECT dx.count_units(person) AS u, dx.avg(cost) AS a FROM ums_visits WHERE age > 40'),
	('SELECT dx.count_units(person) FILTER (WHERE age < 10) AS y, dx.count_units(person) FILTER (WHERE age >= 90) AS o, dx.sum(age) AS s FROM ums_visits'),
	('SELECT dx.count_units(person) + dx.count(*) AS x FROM ums_visits HAVING dx.count(*) > 0'),
	('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM ums_visits WHERE age > 1000')
) t(q);
-- without the one-pass transition (dxpriv.one_pass off: every aggregate its own lookup per row)
SET dxpriv.one_pass = off;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.avg(cost) AS a FROM ums_visits WHERE age > 10') AS no_one_pass;
RESET dxpriv.one_pass;
-- the set spilled to temporary files (work_mem 64kB: about 8,000 hashes in memory)
SET work_mem = '64kB';
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(cost) AS s FROM ums_visits') AS spilled;
RESET work_mem;
-- parallel: the workers' sets serialized and united by the leader
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.has(p, 'Partial Aggregate') AS partial, pg_temp.has(p, '_noisy_count_units(') > 0 AS count_units_set
FROM pg_temp.um_plan('SELECT dx.count_units(person), dx.count(*) FROM ums_visits') p;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n, dx.sum(cost) AS s FROM ums_visits') AS parallel,
       pg_temp.same_units('SELECT dx.count_units(person) FILTER (WHERE age < 30) AS u, dx.avg(cost) AS a FROM ums_visits WHERE cost < 80') AS parallel_filter;
SET work_mem = '64kB';
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM ums_visits') AS parallel_spilled;
RESET work_mem;
SET parallel_leader_participation = off;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.sum(age) AS s FROM ums_visits') AS workers_only;
RESET parallel_leader_participation;
SET force_parallel_mode = on;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM ums_visits WHERE age > 20') AS forced_parallel;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- a partitioned table of 10 partitions, partitionwise aggregation: partial states combined in one
-- process (their sorts merged as parts, more than 8 parts merged into one), serial and parallel
CREATE TABLE ums_part (person int, age int) PARTITION BY HASH (age);
DO $$ BEGIN FOR i IN 0..9 LOOP
	EXECUTE format('CREATE TABLE ums_part_%s PARTITION OF ums_part FOR VALUES WITH (MODULUS 10, REMAINDER %s)', i, i);
END LOOP; END $$;
INSERT INTO ums_part SELECT p, (p * 13 + i * 29) % 100 FROM generate_series(1, 3000) p, generate_series(1, p % 9 + 1) i;
SELECT dx.protect_table('ums_part', 1.0);
SELECT dx.set_column('ums_part', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'ums_part', 1e6);
SELECT dx.set_privacy_unit('ums_part', 'person', 4);
ANALYZE ums_part;
SET enable_partitionwise_aggregate = on;
SELECT pg_temp.has(p, 'Partial Aggregate') > 1 AS partitionwise, pg_temp.has(p, '_noisy_count_units(') > 0 AS count_units_set
FROM pg_temp.um_plan('SELECT dx.count_units(person), dx.count(*) FROM ums_part') p;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM ums_part') AS partitionwise,
       pg_temp.same_units('SELECT dx.count_units(person) FILTER (WHERE age < 50) AS u, dx.sum(age) AS s FROM ums_part WHERE age > 5') AS partitionwise_filter;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.same_units('SELECT dx.count_units(person) AS u, dx.count(*) AS n FROM ums_part') AS partitionwise_parallel;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET enable_partitionwise_aggregate;
SELECT dx.protect_table('ums_part', 'Infinity');
SET enable_partitionwise_aggregate = on;
SELECT dx.count_units(person) AS units, dx.count(*) AS kept FROM ums_part; -- 3000 units, sum(min(p % 9 + 1, 4))
RESET enable_partitionwise_aggregate;
SELECT sum(least(p % 9 + 1, 4)) AS native_kept FROM generate_series(1, 3000) p;

-- noiseless: the exact numbers (30,000 persons of which 30 NULL are one unit: 29,971 units; each
-- unit keeps min(rows, 3) rows: the NULL unit 3)
SELECT dx.protect_table('ums_visits', 'Infinity');
SELECT dx.count_units(person) AS units, dx.count(*) AS kept FROM ums_visits;
SELECT count(DISTINCT person) + 1 AS native_units,
       (SELECT sum(least(c, 3)) FROM (SELECT count(*) c FROM ums_visits WHERE person IS NOT NULL GROUP BY person) x) + 3 AS native_kept
FROM ums_visits;
-- with FILTERs the kept rows matter (they depend on the table's OID, part of each row's rank): the
-- same as the hash pass under the seed (set again before each: a statement's key is the seed's first draw)
SELECT dx.clear_cache(NULL) IS NULL AS cleared;
SET dxpriv.test_seed = 8181;
SELECT dx.count_units(person) FILTER (WHERE age < 50) AS on_u, dx.count(*) FILTER (WHERE age < 50) AS on_n FROM ums_visits \gset
SET dxpriv.unit_profiles = off;
SELECT dx.clear_cache(NULL) IS NULL AS cleared;
SET dxpriv.test_seed = 8181;
SELECT dx.count_units(person) FILTER (WHERE age < 50) AS off_u, dx.count(*) FILTER (WHERE age < 50) AS off_n FROM ums_visits \gset
RESET dxpriv.unit_profiles;
SELECT :on_u = :off_u AS same_units, :on_n = :off_n AS same_rows, :on_u > 20000 AS some_units;

-- a unit type whose hash function is the DBA's (PL/pgSQL, reads the search path and a setting): in
-- the mixed statement it runs through the sealed path as the table's owner, never under the
-- analyst's search path or settings; the counts are exact (noiseless)
SET client_min_messages = warning;
CREATE ROLE dx_regress_ums_owner;
CREATE ROLE dx_regress_ums LOGIN;
SELECT dx.add_analyst('dx_regress_ums');
CREATE SCHEMA ums_evil AUTHORIZATION dx_regress_ums;
CREATE TABLE public.ums_calls (who text, search_path text, efd text);
GRANT INSERT, SELECT ON public.ums_calls TO PUBLIC;
CREATE FUNCTION public.ums_json_eq(a json, b json) RETURNS boolean LANGUAGE sql IMMUTABLE AS
$$ SELECT a::text = b::text $$;
CREATE FUNCTION public.ums_json_hash(v json) RETURNS int4 LANGUAGE sql IMMUTABLE AS
$$ SELECT pg_catalog.hashtext(v::text) $$;
CREATE FUNCTION public.ums_json_hash_ext(v json, seed int8) RETURNS int8 LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.ums_calls SELECT current_user, current_setting('search_path'), current_setting('extra_float_digits');
	RETURN pg_catalog.hashtextextended(lower(v::text), seed);
END $$;
CREATE OPERATOR public.= (LEFTARG = json, RIGHTARG = json, FUNCTION = public.ums_json_eq);
CREATE OPERATOR CLASS public.ums_json_ops DEFAULT FOR TYPE json USING hash AS
	OPERATOR 1 public.=(json, json), FUNCTION 1 public.ums_json_hash(json), FUNCTION 2 public.ums_json_hash_ext(json, int8);
CREATE TABLE ums_json (person json, age int);
INSERT INTO ums_json SELECT json_build_object('p', p), (p * 7 + i * 11) % 100
FROM generate_series(1, 150) p, generate_series(1, 1 + (p * p) % 9) i;
ALTER TABLE ums_json OWNER TO dx_regress_ums_owner;
SELECT dx.protect_table('ums_json', 'Infinity');
SELECT dx.set_column('ums_json', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget('dx_regress_ums', 'ums_json', 1e6);
SELECT dx.set_privacy_unit('ums_json', 'person', 3);
CREATE FUNCTION ums_evil.lower(t text) RETURNS text LANGUAGE sql AS $$ SELECT 'one unit' $$;
ALTER FUNCTION ums_evil.lower(text) OWNER TO dx_regress_ums;
SET ROLE dx_regress_ums;
SET search_path = ums_evil, pg_catalog, public;
SET extra_float_digits = -15;
SELECT dx.count_units(person) AS units, dx.count(*) AS kept, dx.count_units(person) FILTER (WHERE age < 0) AS none
FROM ums_json; -- 150 units, sum(min(3, 1 + p * p % 9)) rows
RESET ROLE;
-- in parallel workers (the same hash, without the recording INSERT, which workers cannot run)
CREATE OR REPLACE FUNCTION public.ums_json_hash_ext(v json, seed int8) RETURNS int8 LANGUAGE plpgsql AS $$
BEGIN
	RETURN pg_catalog.hashtextextended(lower(v::text), seed);
END $$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET force_parallel_mode = on;
SET ROLE dx_regress_ums;
SET search_path = ums_evil, pg_catalog, public;
SET extra_float_digits = -15;
SELECT dx.count_units(person) AS units, dx.count(*) AS kept FROM ums_json WHERE age >= 0;
RESET ROLE;
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET search_path;
RESET extra_float_digits;
SELECT sum(least(3, 1 + (p * p) % 9)) AS native_kept FROM generate_series(1, 150) p;
SELECT who, search_path, efd, count(*) > 0 AS called FROM public.ums_calls GROUP BY 1, 2, 3 ORDER BY 1, 2, 3;
DROP TABLE ums_json;
DROP OPERATOR CLASS public.ums_json_ops USING hash;
DROP OPERATOR FAMILY public.ums_json_ops USING hash;
DROP OPERATOR public.= (json, json);
DROP FUNCTION public.ums_json_eq(json, json), public.ums_json_hash(json), public.ums_json_hash_ext(json, int8);
DROP TABLE public.ums_calls;
DROP SCHEMA ums_evil CASCADE;
DROP ROLE dx_regress_ums_owner;
SET client_min_messages = notice;

-- an analyst cannot place the aggregate (internal), nor feed its functions
SELECT dx.grant_budget('dx_regress_ums'::regrole, 'ums_visits', 100);
SET ROLE dx_regress_ums;
SELECT dx._noisy_count_units(1.0::float8, 0, '{}'::float8[], person) FROM ums_visits;
SELECT dx._count_units_deserialize(NULL::bytea, NULL);
RESET ROLE;
