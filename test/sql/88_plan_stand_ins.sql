-- Per-point tables stood in for while the PostgreSQL planner runs (src/pg/planner/large_const_stand_ins.h,
-- l2copy): every table must be back in the plan that runs, whatever the shape. Exact answers
-- (presence public, metric none: sensitivity 0) over a 300-value enumerated column (its values in
-- the one-pass aggregates' shared arguments, over 1 kB: stood in for) equal the native ones in a
-- plain statement, a subquery (the planner copies it, values included), a CTE, a plpgsql RETURN
-- QUERY (SPI: SELECT INTO), parallel plans (partial and finalize copies), a prepared statement and memo
-- replays; a stand-in that reached the executor would be refused ("invalid dxpriv row layout")
-- or would count nothing right. Aggregates over other columns (other tables) keep their own answers.
CREATE TABLE st_t (k text, v int);
INSERT INTO st_t SELECT 'k' || (i % 300), (i * 7) % 1000 FROM generate_series(1, 30000) AS i;
ANALYZE st_t;
SELECT dx.protect_table('st_t', 'Infinity');
SELECT dx.set_column('st_t', 'k', jsonb_build_object('values', (SELECT jsonb_agg('k' || i ORDER BY i) FROM generate_series(0, 299) AS i)),
	'{"type": "none"}');
SELECT dx.set_column('st_t', 'v', '{"min": 0, "max": 999}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'st_t', 1000);
CREATE TABLE st_answers (shape text, a float8, b float8, c float8, d float8);
INSERT INTO st_answers SELECT 'native', count(*) FILTER (WHERE k < 'k150'), sum(v) FILTER (WHERE k > 'k2'), count(*), sum(v)
FROM st_t;
-- plain, three times (the later ones memo replays)
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c, dx.sum(v) AS d
FROM st_t \gset
INSERT INTO st_answers VALUES ('plain', :a, :b, :c, :d);
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c, dx.sum(v) AS d
FROM st_t \gset
INSERT INTO st_answers VALUES ('plain, again', :a, :b, :c, :d);
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c, dx.sum(v) AS d
FROM st_t \gset
INSERT INTO st_answers VALUES ('plain, replayed from the memo', :a, :b, :c, :d);
-- a subquery, a CTE
SELECT * FROM (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b,
	dx.count(*) AS c, dx.sum(v) AS d FROM st_t) q \gset
INSERT INTO st_answers VALUES ('subquery', :a, :b, :c, :d);
WITH q AS (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b,
	dx.count(*) AS c, dx.sum(v) AS d FROM st_t) SELECT a, b, c, d FROM q \gset
INSERT INTO st_answers VALUES ('CTE', :a, :b, :c, :d);
-- SPI
CREATE FUNCTION st_f() RETURNS float8[] LANGUAGE plpgsql AS $$
DECLARE
	a float8; b float8; c float8; d float8;
BEGIN
	SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2'), dx.count(*), dx.sum(v) INTO a, b, c, d
	FROM st_t;
	RETURN ARRAY[a, b, c, d];
END $$;
INSERT INTO st_answers SELECT 'plpgsql SELECT INTO', x[1], x[2], x[3], x[4] FROM st_f() AS x;
INSERT INTO st_answers SELECT 'plpgsql SELECT INTO, again', x[1], x[2], x[3], x[4] FROM st_f() AS x;
-- parallel plans: partial aggregates in the workers, finalize in the leader
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c, dx.sum(v) AS d
FROM st_t \gset
INSERT INTO st_answers VALUES ('parallel', :a, :b, :c, :d);
SET force_parallel_mode = regress;
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c, dx.sum(v) AS d
FROM st_t \gset
INSERT INTO st_answers VALUES ('force_parallel_mode', :a, :b, :c, :d);
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
-- a prepared statement, executed twice
PREPARE st_p AS SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c,
	dx.sum(v) AS d FROM st_t;
EXECUTE st_p \gset
INSERT INTO st_answers VALUES ('prepared', :a, :b, :c, :d);
EXECUTE st_p \gset
INSERT INTO st_answers VALUES ('prepared, again', :a, :b, :c, :d);
DEALLOCATE st_p;
-- every shape: the native answers
SELECT s.shape, s.a = n.a AND s.b = n.b AND s.c = n.c AND s.d = n.d AS exact
FROM st_answers s, st_answers n WHERE n.shape = 'native' AND s.shape <> 'native' ORDER BY s.shape;
SELECT a, b, c, d FROM st_answers WHERE shape = 'native';
-- the aggregates of one statement over other columns: their own answers (not planned as one)
SELECT dx.count(*) FILTER (WHERE k = 'k7') AS k7, dx.count(*) FILTER (WHERE v < 10) AS v_small, dx.sum(v) FILTER (WHERE k = 'k7') AS k7_sum
FROM st_t;
SELECT count(*) FILTER (WHERE k = 'k7') AS k7, count(*) FILTER (WHERE v < 10) AS v_small, sum(v) FILTER (WHERE k = 'k7') AS k7_sum
FROM st_t;
-- the plan that runs holds the tables, not the stand-ins (EXPLAIN VERBOSE by the owner prints the
-- aggregates' arguments: the domain's values are there)
CREATE FUNCTION st_explain() RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	l text;
	found boolean := false;
BEGIN
	FOR l IN EXPLAIN (VERBOSE, COSTS OFF) SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FROM st_t LOOP
		found := found OR l LIKE '%k299%';
	END LOOP;
	RETURN found;
END $$;
SELECT st_explain() AS plan_holds_the_domain;
-- grouped by 200 values: two sums of one shape over other cells (their tables and parameters of
-- equal length, other bytes) stay two aggregates, each with its own answers in every group
CREATE TABLE st_g (k text, v int);
INSERT INTO st_g SELECT 'g' || (i % 200), i % 10 FROM generate_series(1, 20000) AS i;
SELECT dx.protect_table('st_g', 'Infinity');
SELECT dx.set_column('st_g', 'k', jsonb_build_object('values', (SELECT jsonb_agg('g' || i ORDER BY i) FROM generate_series(0, 199) AS i)),
	'{"type": "none"}');
SELECT dx.set_column('st_g', 'v', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'st_g', 1000);
CREATE TEMP TABLE st_grouped (k text, low float8, high float8);
CREATE FUNCTION st_grouped_fill() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN SELECT k, dx.sum(v) FILTER (WHERE v < 5) AS low, dx.sum(v) FILTER (WHERE v >= 5) AS high FROM st_g GROUP BY k LOOP
		INSERT INTO st_grouped VALUES (r.k, r.low, r.high);
	END LOOP;
END $$;
SELECT st_grouped_fill();
SELECT count(*) AS groups,
       count(*) FILTER (WHERE g.low IS DISTINCT FROM n.low OR g.high IS DISTINCT FROM n.high) AS differ
FROM st_grouped g JOIN (SELECT k, coalesce(sum(v) FILTER (WHERE v < 5), 0) AS low,
                               coalesce(sum(v) FILTER (WHERE v >= 5), 0) AS high FROM st_g GROUP BY k) n USING (k);
