-- Planner stand-ins fail closed (src/pg/stand_in.h, planner/large_const_stand_ins.h): a stand-in of a
-- per-point table, label list or parameter array that reached execution is refused by every reader
-- (XX000, with a hint), never read as an empty list or another table. The superuser-only test
-- setting dxpriv.test_skip_stand_in_restore leaves the stand-ins in the plan that runs: every shape
-- must then ERROR, not answer. Off, the same statements answer exactly (the native answers).
CREATE TABLE sf_t (k text, v int);
INSERT INTO sf_t SELECT 'k' || (i % 300), (i * 7) % 10 FROM generate_series(1, 30000) AS i;
ANALYZE sf_t;
SELECT dx.protect_table('sf_t', 'Infinity');
SELECT dx.set_column('sf_t', 'k', jsonb_build_object('values', (SELECT jsonb_agg('k' || i ORDER BY i) FROM generate_series(0, 299) AS i)),
	'{"type": "none"}');
SELECT dx.set_column('sf_t', 'v', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'sf_t', 1000);
-- the setting is for superusers only
CREATE ROLE dx_sf_user;
SET ROLE dx_sf_user;
SELECT err('SET dxpriv.test_skip_stand_in_restore = on');
RESET ROLE;
DROP ROLE dx_sf_user;
-- restored (the default): exact answers
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c, dx.sum(v) AS d
FROM sf_t;
SELECT count(*) FILTER (WHERE k < 'k150') AS a, sum(v) FILTER (WHERE k > 'k2') AS b, count(*) AS c, sum(v) AS d FROM sf_t;
-- not restored: the one-pass aggregates' label list (text[], over 1 kB) is a stand-in at execution
SET dxpriv.test_skip_stand_in_restore = on;
SELECT err($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2'), dx.count(*), dx.sum(v) FROM sf_t$$);
-- a single aggregate over the labels, a subquery, a CTE
SELECT err($$SELECT dx.count(*) FILTER (WHERE k = 'k7') FROM sf_t$$);
SELECT err($$SELECT * FROM (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) AS b FROM sf_t) q$$);
SELECT err($$WITH q AS (SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) AS b FROM sf_t) SELECT * FROM q$$);
-- GROUP BY the 300-value column: grouped row by row, the group's aggregates hold the labels; folded
-- into one pass, the labels are the fold's, whose large constants are direct arguments (never stood
-- in for): nothing to restore, it answers
SELECT err($$SELECT k, dx.count(*), dx.sum(v) FROM sf_t GROUP BY k$$);
SET dxpriv.group_fold = off;
SELECT err($$SELECT k, dx.count(*), dx.sum(v) FROM sf_t GROUP BY k$$);
RESET dxpriv.group_fold;
-- one lookup and transition per aggregate: the tables are inside dx._weigh's call, not arguments
-- of the aggregate (never stood in for): nothing to restore, it answers
SET dxpriv.one_pass = off;
SELECT err($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2') FROM sf_t$$);
RESET dxpriv.one_pass;
-- parallel plans: the partial aggregates read the stand-ins in the workers
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT err($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2') FROM sf_t$$);
SET force_parallel_mode = regress;
SELECT err($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2') FROM sf_t$$);
RESET force_parallel_mode;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
-- a prepared statement
PREPARE sf_p AS SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FROM sf_t;
SELECT err('EXECUTE sf_p');
DEALLOCATE sf_p;
-- EXPLAIN VERBOSE prints the aggregates' arguments: a stand-in array is not printed as '{}' (its
-- header names no element type and has dimension -1: PostgreSQL's own array readers refuse it too)
SELECT err($$EXPLAIN (VERBOSE, COSTS OFF) SELECT dx.count(*) FILTER (WHERE k < 'k150') FROM sf_t$$);
-- restored again: the same statements answer exactly
RESET dxpriv.test_skip_stand_in_restore;
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b FROM sf_t;
SELECT count(*) AS groups, count(*) FILTER (WHERE g.c <> n.c OR g.s <> n.s) AS differ
FROM (SELECT k, dx.count(*) AS c, dx.sum(v) AS s FROM sf_t GROUP BY k) g
JOIN (SELECT k, count(*) AS c, sum(v) AS s FROM sf_t GROUP BY k) n USING (k);

-- postgres_fdw (dba-guide: only ordinary and partitioned tables are protected or public). A
-- foreign table is neither; a foreign partition of a protected partitioned table is read as the
-- table's rows (its remote SQL reads rows: no dx aggregate is pushed down, even with the server's
-- extensions option naming dxpriv), analysts cannot query the partition directly, and a stand-in
-- fails closed in the partial aggregates over the foreign partition too.
CREATE EXTENSION postgres_fdw;
DO $$ BEGIN
	EXECUTE format('CREATE SERVER sf_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host %L, port %L, dbname %L, extensions %L)',
		split_part(current_setting('unix_socket_directories'), ',', 1), current_setting('port'), current_database(), 'dxpriv');
END $$;
CREATE USER MAPPING FOR CURRENT_USER SERVER sf_loop;
CREATE TABLE sf_remote_rows (k text, v int);
INSERT INTO sf_remote_rows SELECT 'k' || (3 + i % 297), (i * 3) % 10 FROM generate_series(1, 20000) AS i;
CREATE FOREIGN TABLE sf_ft (k text, v int) SERVER sf_loop OPTIONS (table_name 'sf_remote_rows');
SELECT err($$SELECT dx.protect_table('sf_ft', 1.0)$$);
SELECT err($$SELECT dx.set_public('sf_ft', true)$$);
CREATE TABLE sf_pt (k text, v int) PARTITION BY LIST (k);
CREATE TABLE sf_pt_local PARTITION OF sf_pt FOR VALUES IN ('k1', 'k2');
INSERT INTO sf_pt_local SELECT 'k' || (1 + i % 2), i % 10 FROM generate_series(1, 1000) AS i;
SELECT dx.protect_table('sf_pt', 'Infinity');
SELECT dx.set_column('sf_pt', 'k', jsonb_build_object('values', (SELECT jsonb_agg('k' || i ORDER BY i) FROM generate_series(0, 299) AS i)),
	'{"type": "none"}');
SELECT dx.set_column('sf_pt', 'v', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'sf_pt', 1000);
CREATE FOREIGN TABLE sf_pt_remote PARTITION OF sf_pt DEFAULT SERVER sf_loop OPTIONS (table_name 'sf_remote_rows');
SET enable_partitionwise_aggregate = on;
SELECT dx.count(*) FILTER (WHERE k < 'k150') AS a, dx.sum(v) FILTER (WHERE k > 'k2') AS b, dx.count(*) AS c FROM sf_pt;
SELECT count(*) FILTER (WHERE k < 'k150') AS a, sum(v) FILTER (WHERE k > 'k2') AS b, count(*) AS c FROM sf_pt;
CREATE FUNCTION sf_remote_sql(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
	l text;
BEGIN
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		IF l LIKE '%Remote SQL%' OR l LIKE '%Foreign Scan%' OR l LIKE '%Aggregate%' THEN
			RETURN NEXT regexp_replace(trim(l), '(Output: [A-Za-z ]*dx\.[a-z_]+)\(.*', '\1(...)');
		END IF;
	END LOOP;
END $$;
SELECT sf_remote_sql($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2') FROM sf_pt$$);
SET dxpriv.test_skip_stand_in_restore = on;
SELECT err($$SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FILTER (WHERE k > 'k2') FROM sf_pt$$);
SELECT err($$EXPLAIN (VERBOSE, COSTS OFF) SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.sum(v) FROM sf_pt$$);
RESET dxpriv.test_skip_stand_in_restore;
RESET enable_partitionwise_aggregate;
CREATE ROLE dx_sf_analyst;
SELECT dx.add_analyst('dx_sf_analyst');
SELECT dx.grant_budget('dx_sf_analyst', 'sf_pt', 10);
SET ROLE dx_sf_analyst;
SELECT err('SELECT dx.count(*) FROM sf_pt_remote');
SELECT err('SELECT count(*) FROM sf_ft');
SELECT err('SELECT dx.count(*) FROM sf_ft');
RESET ROLE;
