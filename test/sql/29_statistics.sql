-- Statistics are data (issue 21, class 5; issue 24): for analysts the statistics views and the
-- functions behind them are refused or answer NULL for protected tables, their partitions and
-- dxpriv's own tables; auto_explain never sends plans to an analyst's client; the analysis has a
-- work cap (54000); small fixes: system columns in zero-row probes, errors while folding constants.
\set VERBOSITY default
CREATE TABLE st (id int PRIMARY KEY, sex text, age int);
INSERT INTO st SELECT i, CASE WHEN i % 2 = 0 THEN 'M' ELSE 'F' END, i % 100 FROM generate_series(1, 300) AS i;
SELECT dx.protect_table('st');
SELECT dx.set_column('st', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete"}');
SELECT dx.set_column('st', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
-- a partitioned protected table: its partitions hold its rows
CREATE TABLE st_part (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE st_part_a PARTITION OF st_part FOR VALUES FROM (0) TO (100);
INSERT INTO st_part SELECT i % 100, i FROM generate_series(1, 50) AS i;
SELECT dx.protect_table('st_part');
SELECT dx.set_column('st_part', 'k', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE TABLE st_open (x int);
INSERT INTO st_open VALUES (1), (2);
CREATE TABLE st_dim (sex text, label text);
INSERT INTO st_dim VALUES ('M', 'male'), ('F', 'female');
SELECT dx.set_public('st_dim');
CREATE ROLE dx_regress_stats;
SELECT dx.add_analyst('dx_regress_stats');
SELECT dx.grant_budget('dx_regress_stats', 'st', 100);
GRANT SELECT ON st_open, st_dim TO dx_regress_stats;
-- a DBA's view over the statistics functions, granted to everyone
CREATE VIEW st_counts AS SELECT pg_stat_get_live_tuples('st'::regclass) AS live;
GRANT SELECT ON st_counts TO PUBLIC;
-- ... and one beside pg_stat_user_tables as analysts see it (whose counters are read in dxpriv's
-- own statement, so the analyst's plan never holds a pg_stat_get_* call it could hide beside)
CREATE VIEW st_counts_beside AS SELECT s.relname, pg_stat_get_live_tuples('st'::regclass) AS live
FROM dx.analyst_stat_user_tables s WHERE s.relname = 'st_open';
GRANT SELECT ON st_counts_beside TO PUBLIC;
SET dxpriv.test_seed = 29;

SET ROLE dx_regress_stats;
-- pg_stat_user_tables (what BI tools join): protected tables, their partitions and dxpriv's own
-- tables are listed with NULL counters (the ledger's insert count is other analysts' activity)
SELECT relname, n_live_tup IS NULL AS live_hidden, n_tup_ins IS NULL AS ins_hidden, seq_scan IS NULL AS scans_hidden
FROM pg_stat_user_tables WHERE relname IN ('st', 'st_part_a', 'st_open', 'ledger', 'budget_grants', 'analysts')
ORDER BY relname;
SELECT count(*) AS dx_tables_with_counters FROM pg_stat_user_tables
WHERE schemaname = 'dx' AND (n_tup_ins IS NOT NULL OR seq_scan IS NOT NULL OR n_live_tup IS NOT NULL);
-- the other statistics views and the functions behind them
SELECT n_live_tup FROM pg_stat_all_tables WHERE relname = 'st';
SELECT n_tup_ins FROM pg_stat_xact_user_tables WHERE relname = 'st';
SELECT heap_blks_hit FROM pg_statio_user_tables WHERE relname = 'st';
SELECT idx_scan FROM pg_stat_user_indexes WHERE relname = 'st';
SELECT tup_returned FROM pg_stat_database WHERE datname = current_database();
SELECT query FROM pg_stat_activity;
SELECT pg_stat_get_live_tuples('st'::regclass);
SELECT pg_stat_get_tuples_inserted('dx.ledger'::regclass);
SELECT pg_stat_get_xact_tuples_inserted('st'::regclass);
SELECT pg_stat_get_db_tuples_returned(oid) FROM pg_database WHERE datname = current_database();
SELECT pg_stat_have_stats('relation', 0, 'st'::regclass::oid);
SELECT * FROM st_counts;
SELECT * FROM st_counts_beside;
SELECT s.relname, s.n_live_tup FROM dx.analyst_stat_user_tables s WHERE s.relname = 'st';
SELECT * FROM pg_stat_io;                      -- PostgreSQL 16; does not exist in 15
SELECT * FROM pg_stat_statements;              -- not installed here (test/e2e/test_statistics_views.py)
EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM st;
-- catalog introspection of BI tools keeps working
SELECT relname, relkind FROM pg_class WHERE relname IN ('st', 'st_open') ORDER BY relname;
SELECT attname FROM pg_attribute WHERE attrelid = 'st'::regclass AND attnum > 0 ORDER BY attnum;
SELECT nspname FROM pg_namespace WHERE nspname = 'dx';
-- an analyst cannot raise the work cap nor change auto_explain
SET dxpriv.analysis_time_limit = 100000;
SET dxpriv.analysis_memory_limit = '1GB';
RESET ROLE;

-- predefined roles that read or write around dxpriv (the server's files and log, every table's
-- rows, dxpriv's catalog): an analyst holding one is refused every statement
GRANT pg_read_server_files TO dx_regress_stats;
SET ROLE dx_regress_stats;
SELECT length(pg_read_binary_file('base/' || (SELECT oid FROM pg_database WHERE datname = current_database())
                                   || '/' || relfilenode)) > 0 AS read_the_data_file
FROM pg_class WHERE relname = 'st';
SELECT 1 AS harmless;
RESET ROLE;
REVOKE pg_read_server_files FROM dx_regress_stats;
GRANT pg_write_all_data TO dx_regress_stats;
SET ROLE dx_regress_stats;
UPDATE dx.budget_grants SET granted = 1e6;
RESET ROLE;
REVOKE pg_write_all_data FROM dx_regress_stats;
SELECT granted FROM dx.budget_grants WHERE role = 'dx_regress_stats'::regrole AND relid = 'st'::regclass;
GRANT pg_read_all_data TO dx_regress_stats;
SET ROLE dx_regress_stats;
SELECT count(*) FROM dx.ledger;
RESET ROLE;
REVOKE pg_read_all_data FROM dx_regress_stats;
-- nor through SET ROLE to a role that holds one (NOINHERIT: only the current role has it; the
-- session's role is an analyst)
CREATE ROLE dx_regress_stats_writer;
GRANT pg_write_all_data TO dx_regress_stats_writer;
ALTER ROLE dx_regress_stats NOINHERIT;
GRANT dx_regress_stats_writer TO dx_regress_stats;
SET SESSION AUTHORIZATION dx_regress_stats;
SELECT pg_has_role('pg_write_all_data', 'USAGE') AS session_role_has_it;
SET ROLE dx_regress_stats_writer;
UPDATE dx.budget_grants SET granted = 1e6;
RESET ROLE;
RESET SESSION AUTHORIZATION;
REVOKE dx_regress_stats_writer FROM dx_regress_stats;
ALTER ROLE dx_regress_stats INHERIT;
SELECT granted FROM dx.budget_grants WHERE role = 'dx_regress_stats'::regrole AND relid = 'st'::regclass;

-- system columns in a zero-row probe: the column list and no row (was an internal error, XX000)
SET ROLE dx_regress_stats;
SELECT xmin FROM st WHERE 0 = 1;
SELECT xmin, ctid, sex FROM st LIMIT 0;
SELECT sex FROM st WHERE 0 = 1 AND xmin::text = '1';
RESET ROLE;

-- the work cap of the analysis: memory of one point's evaluation (intermediate values included)
SET ROLE dx_regress_stats;
SELECT count(*) > -1000 AS answered FROM st WHERE length(repeat(sex, 1000)) = 1000;
SELECT count(*) FROM st WHERE length(repeat(sex, 20000000)) > 0;
SELECT dx.explain('SELECT count(*) FROM st WHERE length(repeat(sex, 20000000)) > 0');
RESET ROLE;
SET dxpriv.analysis_memory_limit = '1MB';
SET ROLE dx_regress_stats;
SELECT count(*) FROM st WHERE length(repeat(sex, 2000000)) > 0;
SELECT count(*) > -1000 AS answered FROM st WHERE length(repeat(sex, 100000)) > 0;
RESET ROLE;
RESET dxpriv.analysis_memory_limit;
-- ... and time per statement (every age is evaluated: 100 points of an md5 over 400 kB)
SET dxpriv.analysis_time_limit = 1;
SET ROLE dx_regress_stats;
SELECT count(*) FROM st WHERE md5(repeat(age::text, 200000)) <> '';
RESET ROLE;
RESET dxpriv.analysis_time_limit;

-- an error while folding a constant of a join (epsilon 1/0) unwinds the join's analysis; the
-- session's next statements, joined or not, are analysed as usual
SET ROLE dx_regress_stats;
SELECT dx.count(s.age, 1/0) FROM st s JOIN st_dim d ON d.sex = s.sex;
-- (grouping sets are analysed without a join scope of their own: they read the current join)
SELECT sex, count(*) > -1000 AS answered FROM st GROUP BY ROLLUP (sex) ORDER BY sex;
SELECT dx.count(*) > -1000 AS answered FROM st WHERE age > 10;
SELECT d.label, dx.count(*) > -1000 AS answered FROM st s JOIN st_dim d ON d.sex = s.sex GROUP BY d.label ORDER BY d.label;
SELECT dx.count(s.age, 1/0) FROM st s JOIN st_dim d ON d.sex = s.sex WHERE s.age > 1;
SELECT dx.sum(s.age, 0.5) > -100000 AS answered FROM st s JOIN st_dim d ON d.sex = s.sex;
RESET ROLE;

-- auto_explain (loaded by a superuser): at log (its default level) plans stay in the server log;
-- at a level sent to clients an analyst's statement is refused before it runs
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = on;
SET ROLE dx_regress_stats;
SET auto_explain.log_level = notice;           -- superuser only
SELECT count(*) > -1000 AS answered FROM st WHERE age > 20;
RESET ROLE;
SET auto_explain.log_level = warning;
SET ROLE dx_regress_stats;
SELECT count(*) FROM st WHERE age > 30;
SELECT x FROM st_open ORDER BY x;
RESET ROLE;
SET auto_explain.log_min_duration = -1;        -- switched off: analysts are answered again
SET ROLE dx_regress_stats;
SELECT count(*) > -1000 AS answered FROM st WHERE age > 40;
RESET ROLE;
RESET auto_explain.log_level;
RESET auto_explain.log_analyze;
RESET auto_explain.log_min_duration;

-- other analysts' charges do not show through the ids of her own ledger rows (the ledger's ids
-- come from one sequence shared by every role: the owner charges in between)
SELECT dx.grant_budget(current_user::regrole, 'st', 10);
SELECT dx.count(age, 0.5) > -1000 AS owner_charged FROM st;
SET ROLE dx_regress_stats;
SELECT dx.count(age, 0.25) > -1000 AS answered FROM st;
SELECT count(*) > 3 AS charged, min(id) = 1 AND max(id) = count(*) AS ids_numbered_per_reader FROM dx.my_ledger;
RESET ROLE;
RESET dxpriv.test_seed;
