-- Stable contribution bounding (README "Stable contribution bounding", issue 21 class 3): which of a
-- unit's rows are kept never depends on their values. 200 persons with two visits each (ward a at
-- age 18, ward b at age 60), one row per person (k = 1); noiseless (presence Infinity, metrics none)
-- so the answers are the bounded table's exactly; the test seed fixes the per-execution rank key.
SET client_min_messages = notice;
SET dxpriv.test_seed = 2821;
-- the ranks hash the table's oid, which depends on what ran before: answers that depend on which rows
-- are kept are compared with the reference (same rows, in any order; distinct column names)
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
CREATE TABLE us_visits (pid int NOT NULL, ward text, age int);
CREATE FUNCTION pg_temp.us_fill(young int, young_ward text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO us_visits SELECT p, CASE WHEN v = 1 THEN young_ward ELSE 'b' END, CASE WHEN v = 1 THEN young ELSE 60 END
	FROM generate_series(1, 200) p, generate_series(1, 2) v ORDER BY p, v $$;
SELECT pg_temp.us_fill(18, 'a');
SELECT dx.protect_table('us_visits', 'Infinity');
SELECT dx.set_column('us_visits', 'ward', '{"values":["a","b"]}', '{"type":"none"}');
SELECT dx.set_column('us_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
-- G and kg are recorded but not applied: dx.explain shows the bound that runs
SELECT dx.set_privacy_unit('us_visits', 'pid', 1, 1, 1);
SELECT dx.grant_budget(current_user::regrole, 'us_visits', 100);
SELECT unit_bound FROM dx.explain('SELECT ward, dx.count(*) FROM us_visits GROUP BY ward') LIMIT 1;

-- the rule in plain SQL (superuser): a person keeps the row of smallest dx._unit_rank(tableoid, ctid)
CREATE TEMP VIEW us_kept AS
SELECT * FROM (SELECT v.ctid AS t, v.*, row_number() OVER (PARTITION BY pid ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r
               FROM us_visits v) s WHERE r = 1;
CREATE TEMP TABLE us_before AS SELECT t, pid, ward, age FROM us_kept;
SELECT count(*) AS persons, count(*) FILTER (WHERE age = 18) BETWEEN 60 AND 140 AS about_half_keep_18 FROM us_before;
SELECT pg_temp.same_rows('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM us_visits',
                         'SELECT count(*) AS n, sum(age) AS s FROM us_before');
SELECT pg_temp.same_rows('SELECT ward, dx.count(*) AS n, dx.sum(age) AS s FROM us_visits GROUP BY ward',
                         'SELECT ward, count(*) AS n, sum(age) AS s FROM us_before GROUP BY ward');
-- the rank is computed once per row, in the level that reads the table (a parenthesised call in a
-- plan is a reference to a lower node's output); the bounding is one hash pass, no sort
CREATE FUNCTION pg_temp.plan_text(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r text; o text := ''; BEGIN
	FOR r IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP o := o || r || E'\n'; END LOOP;
	RETURN o; END $$;
SET dxpriv.unit_profiles = off; -- (the hash pass; with a unit profile no rank is computed: regress 66)
SELECT (length(p) - length(replace(p, ' dx._unit_rank(', ''))) / length(' dx._unit_rank(') AS rank_calls,
       (length(p) - length(replace(p, 'Sort Key', ''))) / length('Sort Key') AS sorts
FROM pg_temp.plan_text('SELECT dx.sum(age) FROM us_visits') p;
RESET dxpriv.unit_profiles;
SELECT (length(p) - length(replace(p, ' dx._unit_rank(', ''))) / length(' dx._unit_rank(') AS rank_calls
FROM pg_temp.plan_text('SELECT ward, dx.count(*), dx.count_units(pid) FROM us_visits GROUP BY ward') p;

-- the issue's pair: every age 18 becomes 19, each row in the same place (same tableoid and ctid).
-- The same rows are kept, so the sum moves by exactly the number of persons who keep their young row
-- (at most 1 each: d = 0.1 under a metric of scale 10), never by 60 - 18.
TRUNCATE us_visits;
SELECT pg_temp.us_fill(19, 'a');
SELECT dx.clear_cache('us_visits') >= 0 AS fresh_answers; -- identical statements would reuse answers
SELECT count(*) AS same_rows_kept FROM us_kept k JOIN us_before b USING (t, pid);
SELECT sum(age) + count(*) FILTER (WHERE age = 18) AS expected_sum FROM us_before \gset
SELECT dx.sum(age) = :expected_sum AS moved_by_the_kept_18s_only FROM us_visits;
-- GROUP BY: the young rows move from ward a to ward b; the kept rows stay the same, so the grouped
-- counts move by exactly those rows (a row changing its group, not others pushed in or out)
TRUNCATE us_visits;
SELECT pg_temp.us_fill(18, 'b');
SELECT dx.clear_cache('us_visits') >= 0 AS fresh_answers;
SELECT count(*) AS same_rows_kept FROM us_kept k JOIN us_before b USING (t, pid);
SELECT pg_temp.same_rows('SELECT ward, dx.count(*) AS n, dx.sum(age) AS s FROM us_visits GROUP BY ward',
                         'SELECT ward, count(*) AS n, sum(age) AS s FROM us_kept GROUP BY ward
                          UNION ALL SELECT ''a'', 0, 0');
-- an UPDATE moves a row (new ctid): its rank is drawn afresh, independently of the new value; the
-- answer is still the bounded table's under the rule
UPDATE us_visits SET age = 19 WHERE age = 18 AND pid % 2 = 0;
SELECT dx.clear_cache('us_visits') >= 0 AS fresh_answers;
SELECT pg_temp.same_rows('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM us_visits',
                         'SELECT count(*) AS n, sum(age) AS s FROM us_kept');

-- the key: one per call site and execution; a new one for every execution without the test seed
SELECT count(DISTINCT r) AS keys_in_one_execution
FROM (SELECT dx._unit_rank('us_visits'::regclass, '(0,1)') AS r FROM generate_series(1, 5)) s;
CREATE TEMP TABLE us_ranks (r bigint);
INSERT INTO us_ranks SELECT dx._unit_rank('us_visits'::regclass, '(0,1)');
INSERT INTO us_ranks SELECT dx._unit_rank('us_visits'::regclass, '(0,1)');
SELECT count(DISTINCT r) AS seeded_keys FROM us_ranks;
RESET dxpriv.test_seed;
TRUNCATE us_ranks;
INSERT INTO us_ranks SELECT dx._unit_rank('us_visits'::regclass, '(0,1)');
INSERT INTO us_ranks SELECT dx._unit_rank('us_visits'::regclass, '(0,1)');
-- a cached plan (PL/pgSQL keeps one for the loop's statement) draws a new key at every execution
CREATE TEMP TABLE us_prepared (r bigint);
DO $$ BEGIN FOR i IN 1..3 LOOP INSERT INTO us_prepared SELECT dx._unit_rank('us_visits'::regclass, '(0,1)'); END LOOP; END $$;
SELECT count(DISTINCT r) AS unseeded_keys FROM us_ranks;
SELECT count(DISTINCT r) AS prepared_keys FROM us_prepared;
SET dxpriv.test_seed = 2821;

-- parallel plans: each worker reads the seeded key, so the answers equal the serial ones
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET force_parallel_mode = regress;
SELECT dx.clear_cache('us_visits') >= 0 AS fresh_answers;
SELECT pg_temp.same_rows('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM us_visits',
                         'SELECT count(*) AS n, sum(age) AS s FROM us_kept');
SELECT pg_temp.same_rows('SELECT ward, dx.count(*) AS n, dx.count_units(pid) AS u FROM us_visits GROUP BY ward',
                         'SELECT ward, count(*) AS n, count(*) AS u FROM us_kept GROUP BY ward UNION ALL SELECT ''a'', 0, 0');
SELECT dx.clear_cache('us_visits') >= 0 AS fresh_answers;
RESET force_parallel_mode;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;
SELECT pg_temp.same_rows('SELECT dx.count(*) AS n, dx.sum(age) AS s FROM us_visits',
                         'SELECT count(*) AS n, sum(age) AS s FROM us_kept');
RESET max_parallel_workers_per_gather;

-- analysts cannot place the rank themselves (it is volatile: refused in WHERE, GROUP BY and
-- aggregate arguments; the system columns are no declared columns)
CREATE ROLE dx_regress_us;
SELECT dx.add_analyst('dx_regress_us');
SELECT dx.grant_budget('dx_regress_us', 'us_visits', 10);
SET ROLE dx_regress_us;
SELECT dx.count(*) FROM us_visits WHERE dx._unit_rank(tableoid, ctid) > 0;
SELECT dx.count(*) FROM us_visits WHERE dx._unit_rank(1, '(0,1)') > 0;
SELECT dx.sum(dx._unit_rank(1, '(0,1)')) FROM us_visits;
SELECT dx.count(*) FROM us_visits GROUP BY dx._unit_rank(1, '(0,1)') > 0;
SELECT count(*) FROM us_visits WHERE ctid = '(0,1)';
RESET ROLE;
SELECT dx.remove_analyst('dx_regress_us');
DROP OWNED BY dx_regress_us;
DROP ROLE dx_regress_us;

SELECT dx.unprotect_table('us_visits');
DROP TABLE us_visits CASCADE;
RESET dxpriv.test_seed;
