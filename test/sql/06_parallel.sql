-- Parallel plans: partial states are combined exactly (noiseless table) and match native results.
CREATE TABLE par (v int, g text);
INSERT INTO par SELECT i % 97, CASE WHEN i % 3 = 0 THEN 'x' ELSE 'y' END FROM generate_series(1, 200000) AS i;
ANALYZE par;
SELECT dx.protect_table('par', 'Infinity');
SELECT dx.set_column('par', 'v', '{"min": 0, "max": 96}', '{"type": "none"}');
SELECT dx.set_column('par', 'g', '{"values": ["x", "y"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'par', 10);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT dx.sum(v) FROM par WHERE g = 'x';
SELECT dx.sum(v) AS parallel_sum, dx.count(*) AS parallel_count FROM par WHERE g = 'x';
SET force_parallel_mode = regress;
SELECT dx.sum(v) AS forced_sum FROM par WHERE g = 'x';
RESET force_parallel_mode;
SET max_parallel_workers_per_gather = 0;
SELECT dx.sum(v) AS serial_sum, dx.count(*) AS serial_count FROM par WHERE g = 'x';
SELECT sum(v) AS native_sum, count(*) AS native_count FROM par WHERE g = 'x';
-- no row in any worker: the finalize phase still adds noise with the right parameters
SET max_parallel_workers_per_gather = 2;
SELECT dx.sum(v) AS empty_sum, dx.count(*) AS empty_count FROM par WHERE v > 200;
SELECT scales, epsilon FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- two releases under one UNION ALL over a table without rows, each a partial/finalize pair: the
-- aggregate numbers repeat in the branches, and each finalize phase takes its own branch's
-- parameters (not the other's charge, whose answer it would repeat)
CREATE TABLE par_empty (v int);
SELECT dx.protect_table('par_empty', 1);
SELECT dx.set_column('par_empty', 'v', '{"min": 0, "max": 96}', '{"type": "absolute", "scale": 10}');
SELECT dx.grant_budget(current_user::regrole, 'par_empty', 10);
SET max_parallel_workers_per_gather = 2;
SET enable_parallel_append = off;
SET dxpriv.test_seed = 6;
EXPLAIN (COSTS OFF) SELECT dx.sum(v, 0.5) FROM par_empty UNION ALL SELECT dx.sum(v, 0.01) FROM par_empty;
SELECT count(DISTINCT n) AS distinct_answers
FROM (SELECT dx.sum(v, 0.5) AS n FROM par_empty UNION ALL SELECT dx.sum(v, 0.01) FROM par_empty) u;
RESET dxpriv.test_seed;
RESET enable_parallel_append;
