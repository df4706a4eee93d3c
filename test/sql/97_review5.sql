-- Review of harden (review5): attacks on the planner stand-ins that fail closed and on the unit
-- profile cap (dxpriv.unit_profile_max_size). Each attack is written to fail if it works.
\set SHOW_CONTEXT never
-- outcome(q): 'ok', or the SQLSTATE and message of q's error (no hint: the shapes' refusals only)
CREATE FUNCTION rv_outcome(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || SQLERRM;
END $$;

-- (1) A unit profile refused for its size must be refused by the relation's size in blocks alone,
-- never by how many heavy units the rows hold. dx._unit_keep_shard (a Citus worker's shard task)
-- builds its shard's profile with no earlier check (no ExecutorStart check sees its call: its
-- relation is a column, not a constant), so the build's own check on the heavy units it found
-- decided: a shard task failed (after the coordinator's charge) exactly when the shard held many
-- heavy units. Two tables of the same size in blocks, one with 100 heavy units (a 32 kB profile),
-- one with 2000 (64 kB and its header), under a 64 kB cap: the same outcome. A small table is
-- bounded (its profile fits by its blocks). Called here by the superuser, who may (not an analyst).
CREATE TABLE rv_few (person int, v int);
INSERT INTO rv_few SELECT p, 1 FROM generate_series(1, 100) p, generate_series(1, 3) i;
INSERT INTO rv_few SELECT p, 1 FROM generate_series(1001, 9700) p;
CREATE TABLE rv_many (person int, v int);
INSERT INTO rv_many SELECT p, 1 FROM generate_series(1, 2000) p, generate_series(1, 3) i;
INSERT INTO rv_many SELECT p, 1 FROM generate_series(3001, 6000) p;
CREATE TABLE rv_small (person int, v int);
INSERT INTO rv_small SELECT p, 1 FROM generate_series(1, 100) p, generate_series(1, 3) i;
INSERT INTO rv_small SELECT p, 1 FROM generate_series(1001, 2000) p;
SELECT pg_relation_size('rv_few') = pg_relation_size('rv_many') AS same_blocks,
       pg_relation_size('rv_few') / 8192 AS blocks, pg_relation_size('rv_small') / 8192 AS small_blocks;
SET dxpriv.unit_profile_max_size = '64kB';
SELECT left(rv_outcome($$SELECT count(*) FROM rv_few WHERE dx._unit_keep_shard(person, tableoid, ctid, 2, 'person')$$), 5) AS few,
       left(rv_outcome($$SELECT count(*) FROM rv_many WHERE dx._unit_keep_shard(person, tableoid, ctid, 2, 'person')$$), 5) AS many;
SELECT count(*) AS small_kept FROM rv_small WHERE dx._unit_keep_shard(person, tableoid, ctid, 2, 'person');
RESET dxpriv.unit_profile_max_size;
-- under the default cap both are bounded (each unit's 2 rows)
SELECT count(*) AS few_kept FROM rv_few WHERE dx._unit_keep_shard(person, tableoid, ctid, 2, 'person');
SELECT count(*) AS many_kept FROM rv_many WHERE dx._unit_keep_shard(person, tableoid, ctid, 2, 'person');
DROP TABLE rv_few, rv_many, rv_small;

-- (2) The plan walk of the restore (plan_walk.cpp walk_every_plan_expression) refuses a plan node
-- kind it does not know: no legitimate SELECT shape may be refused as "a dxpriv planner stand-in".
-- Every shape below carries a stand-in (a FILTER over a 300-value column: its label list is over
-- 1 kB); each either answers or is refused by dxpriv's own shape rules, never XX000. Then, with
-- the stand-ins left in the plan (the superuser-only test setting), every shape that answered must
-- fail with the stand-in's XX000: the battery reaches the stand-ins.
CREATE TABLE rv_s (k text, v int);
INSERT INTO rv_s SELECT 'k' || (i % 300), (i * 7) % 10 FROM generate_series(1, 30000) AS i;
CREATE INDEX ON rv_s (v);
ANALYZE rv_s;
SELECT dx.protect_table('rv_s', 'Infinity');
SELECT dx.set_column('rv_s', 'k', jsonb_build_object('values', (SELECT jsonb_agg('k' || i ORDER BY i) FROM generate_series(0, 299) AS i)),
	'{"type": "none"}');
SELECT dx.set_column('rv_s', 'v', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rv_s', 1e6);
CREATE TABLE rv_pub (v int PRIMARY KEY, label text);
INSERT INTO rv_pub SELECT i, 'l' || i FROM generate_series(0, 9) i;
ANALYZE rv_pub;
SELECT dx.set_public('rv_pub', true);
SET dxpriv.cache_lifetime = 0;
CREATE TABLE rv_shapes (n int, shape text, q text);
INSERT INTO rv_shapes VALUES
 (1, 'window over the aggregates', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, rank() OVER (ORDER BY 1) FROM rv_s$$),
 (2, 'window over a subquery', $$SELECT a, sum(a) OVER () FROM (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a FROM rv_s) q$$),
 (3, 'UNION ALL', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s UNION ALL SELECT 1$$),
 (4, 'UNION', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s UNION SELECT 1$$),
 (5, 'EXCEPT', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s EXCEPT SELECT -1$$),
 (6, 'recursive CTE', $$WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)
   SELECT n, a FROM r CROSS JOIN (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a FROM rv_s) q$$),
 (7, 'SEARCH', $$WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SEARCH DEPTH FIRST BY n SET o
   SELECT n, a FROM r CROSS JOIN (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a FROM rv_s) q ORDER BY o$$),
 (8, 'CYCLE', $$WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n % 3 + 1 FROM r) CYCLE n SET c USING p
   SELECT n, a FROM r CROSS JOIN (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a FROM rv_s) q$$),
 (9, 'GROUPING SETS', $$SELECT v, dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s GROUP BY GROUPING SETS ((v), ())$$),
 (10, 'ROLLUP', $$SELECT v, dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s GROUP BY ROLLUP (v)$$),
 (11, 'TID scan', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s WHERE ctid = '(0,1)'$$),
 (12, 'TID range scan', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s WHERE ctid < '(10,1)'$$),
 (13, 'index scan', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s WHERE v = 3$$),
 (14, 'bitmap OR', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s WHERE v = 3 OR v = 4$$),
 (15, 'join to a public table', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s JOIN rv_pub USING (v) WHERE label <> 'l3'$$),
 (16, 'VALUES scan', $$SELECT * FROM (VALUES (1), (2)) t(x) CROSS JOIN (SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s) q$$),
 (17, 'function scan', $$SELECT * FROM generate_series(1, 2) x CROSS JOIN (SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s) q$$),
 (18, 'XMLTABLE', $$SELECT * FROM XMLTABLE('/r/x' PASSING ('<r><x>1</x><x>2</x></r>'::xml) COLUMNS x int PATH '.') t
   CROSS JOIN (SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s) q$$),
 (19, 'ProjectSet', $$SELECT dx.count(*) FILTER (WHERE k < 'k150'), generate_series(1, 2) FROM rv_s$$),
 (20, 'FOR UPDATE of a public table', $$SELECT q.a, l.v FROM (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a FROM rv_s) q,
   (SELECT v FROM rv_pub WHERE v = 1 FOR UPDATE) l$$),
 (21, 'one-time filter', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s WHERE now() > '2000-01-01'$$),
 (22, 'TABLESAMPLE', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s TABLESAMPLE SYSTEM (50) REPEATABLE (1)$$),
 (23, 'LATERAL', $$SELECT * FROM generate_series(1, 2) x, LATERAL (SELECT dx.count(*) FILTER (WHERE k < 'k150' AND v > x) FROM rv_s) q$$),
 (24, 'LIMIT OFFSET', $$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s LIMIT 1 OFFSET 0$$),
 (25, 'materialized CTE twice', $$WITH q AS MATERIALIZED (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a FROM rv_s) SELECT * FROM q, q q2$$),
 (26, 'HAVING', $$SELECT v, dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s GROUP BY v HAVING v > 2$$),
 (27, 'ORDER BY an aggregate', $$SELECT v, dx.count(*) FILTER (WHERE k < 'k150') AS c FROM rv_s GROUP BY v ORDER BY 2 DESC$$),
 (28, 'scalar subquery in WHERE', $$SELECT v FROM rv_pub WHERE v < (SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s)$$),
 (29, 'DISTINCT', $$SELECT DISTINCT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s GROUP BY v$$);
CREATE TABLE rv_out AS SELECT n, rv_outcome(q) AS outcome FROM rv_shapes;
SELECT n, shape, outcome FROM rv_shapes JOIN rv_out USING (n) ORDER BY n;
-- the same shapes in parallel plans (Gather, Gather Merge: partial aggregates in the workers)
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET min_parallel_index_scan_size = 0;
SELECT n, shape, rv_outcome(q) AS outcome FROM rv_shapes WHERE rv_outcome(q) LIKE '%stand-in%' ORDER BY n;
SELECT rv_outcome($$SELECT k, dx.count(*) FILTER (WHERE v > 3) FROM rv_s GROUP BY k ORDER BY k$$) AS gather_merge;
-- memoize: a parameterised inner side per distinct outer value
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT n, shape, rv_outcome(q) AS outcome FROM rv_shapes WHERE rv_outcome(q) LIKE '%stand-in%' ORDER BY n;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET min_parallel_index_scan_size;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
-- a prepared statement with a one-time filter on its parameter, generic plan
SET plan_cache_mode = force_generic_plan;
PREPARE rv_p(boolean) AS SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s WHERE $1;
SELECT rv_outcome('EXECUTE rv_p(true)') AS generic_true, rv_outcome('EXECUTE rv_p(false)') AS generic_false;
DEALLOCATE rv_p;
RESET plan_cache_mode;
-- the shapes that answered reach their stand-ins: left in the plan, they fail closed
SET dxpriv.test_skip_stand_in_restore = on;
-- (GROUP BY v folded into one pass: the label lists are the fold's direct arguments, never stood in
-- for, so those shapes answer; grouped row by row, HAVING and ORDER BY hold stand-ins and fail
-- closed too; the grouping sets' releases and the public join carry none either way)
SELECT n, shape FROM rv_shapes JOIN rv_out USING (n)
WHERE outcome = 'ok' AND rv_outcome(q) NOT LIKE 'XX000: a dxpriv planner stand-in reached%' ORDER BY n;
SET dxpriv.group_fold = off;
SELECT n, shape FROM rv_shapes JOIN rv_out USING (n)
WHERE outcome = 'ok' AND rv_outcome(q) NOT LIKE 'XX000: a dxpriv planner stand-in reached%' ORDER BY n;
RESET dxpriv.group_fold;
RESET dxpriv.test_skip_stand_in_restore;

-- (3) An analyst's constant with a stand-in's bytes (the 16-byte header is public): it is never
-- given a per-point table (the class needs the backend's random nonce) and never read as a table:
-- either the statement answers with her bytes intact, or it is refused; no crash.
CREATE ROLE rv_analyst;
SELECT dx.add_analyst('rv_analyst');
SELECT dx.grant_budget('rv_analyst', 'rv_s', 100);
GRANT SELECT ON rv_pub TO rv_analyst;
SET ROLE rv_analyst;
SET dxpriv.epsilon = 1;
-- (magic, then 24 bytes: the words of a stand-in with a guessed nonce of zero, class 0, length 0)
SELECT rv_outcome($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), encode(x, 'hex') FROM rv_s,
	(SELECT '\x01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000'::bytea AS x OFFSET 0) c GROUP BY x$$) AS magic_beside;
SELECT rv_outcome($$SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM rv_s
	WHERE '\x01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000'::bytea = decode(k, 'escape')$$) AS magic_in_where;
SELECT rv_outcome($$SELECT dx.sum(v) FROM rv_s WHERE k = '\x01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000'$$) AS magic_as_label;
-- her constant beside a stand-in in the plan (the aggregate's output list): a Const with the magic
-- of no class of this planning is refused as a leftover (XX000), never given a table
SELECT rv_outcome($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), '\x01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000'::bytea AS x FROM rv_s$$) AS magic_in_output;
SELECT rv_outcome($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), length('\x01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000'::bytea || now()::text::bytea) FROM rv_s$$) AS magic_in_expression;
SELECT encode('\x01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000'::bytea, 'hex') = '01000000000000000000000000ffffffff000000000000000000000000000000000000000000000000' AS intact;
RESET dxpriv.epsilon;
RESET ROLE;

-- (4) The fallback and the profile keep the same rows (dxpriv.unit_profile_max_size decides by
-- blocks only): parallel plans, a partitioned table, GROUP BY, count_units; exact under an
-- infinite budget.
CREATE TABLE rv_u (person int, v int) PARTITION BY RANGE (person);
CREATE TABLE rv_u1 PARTITION OF rv_u FOR VALUES FROM (1) TO (2000);
CREATE TABLE rv_u2 PARTITION OF rv_u FOR VALUES FROM (2000) TO (10000);
INSERT INTO rv_u SELECT p, (p * 7 + i) % 10 FROM generate_series(1, 3000) p, generate_series(1, 3) i;
INSERT INTO rv_u SELECT p, p % 10 FROM generate_series(3001, 4000) p;
ANALYZE rv_u;
SELECT dx.protect_table('rv_u', 'Infinity');
SELECT dx.set_column('rv_u', 'v', '{"min":0,"max":9}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'rv_u', 1e6);
SELECT dx.set_privacy_unit('rv_u', 'person', 2);
SET dxpriv.test_seed = 9797;
CREATE FUNCTION rv_uses_profile(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
	l text;
	found boolean := false;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		found := found OR l LIKE '%dx._unit_profile(%';
	END LOOP;
	RETURN found;
END $$;
CREATE TABLE rv_answers (cap text, q text, profile boolean, answer text);
CREATE FUNCTION rv_answer(cap text, q text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	a text;
BEGIN
	EXECUTE format('SELECT string_agg(t::text, %L ORDER BY t::text) FROM (%s) t', ';', q) INTO a;
	INSERT INTO rv_answers VALUES (cap, q, rv_uses_profile(q), a);
END $$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
CREATE TABLE rv_uq (q text);
INSERT INTO rv_uq VALUES ('SELECT dx.count(*), dx.sum(v) FROM rv_u'), ('SELECT v, dx.count(*) FROM rv_u GROUP BY v'),
	('SELECT dx.count_units(person) FROM rv_u'), ('SELECT dx.count(*) FILTER (WHERE v > 4), dx.count_units(person) FROM rv_u'),
	('SELECT v, dx.count_units(person) FROM rv_u GROUP BY v');
SELECT rv_answer('default', q) FROM rv_uq;
SET dxpriv.unit_profile_max_size = '64kB';
SELECT rv_answer('64kB', q) FROM rv_uq;
RESET dxpriv.unit_profile_max_size;
SET max_parallel_workers_per_gather = 0;
SELECT rv_answer('serial', q) FROM rv_uq;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
SELECT q, bool_or(profile) FILTER (WHERE cap = 'default') AS profile_default, bool_or(profile) FILTER (WHERE cap = '64kB') AS profile_64kb,
       count(DISTINCT answer) AS distinct_answers
FROM rv_answers GROUP BY q ORDER BY q;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
