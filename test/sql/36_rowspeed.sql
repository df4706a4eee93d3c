-- Per-row fast paths (issue 23): a stored numeric is mapped to its domain point without its text
-- form, and the transition function reuses the last weight's grid units. Both must give exactly the
-- answers of the text path: every numeric value has a float8 twin (v::float8, the text path's
-- double), declared over the same domain, and the noiseless answers of the two columns must agree
-- row group by row group, serially and in parallel, with and without the leader's participation.
CREATE TABLE rs_num (k int, v numeric, f float8);
-- The two columns' points are the same grid indexes but not the same values (a numeric column's
-- points are decimal numerics, a float8 column's are doubles), so the twins are compared rounded
-- to 6 decimals, where one grid step (0.001) on any row would show; the numeric answers themselves
-- are pinned by the expected output (generated with the text path).
-- tricky values, one per k: scales, halfway points of the 0.001 grid, values off the grid, outside
-- the domain, beyond 2^53 digits, beyond 10^22, tiny, NaN, infinities, NULL, negative weights
INSERT INTO rs_num(k, v) VALUES
 (0, 1.5), (1, 1.50000000), (2, 0.0005), (3, -0.0005), (4, 0.0015), (5, 2.0025),
 (6, 0.333333333333333333333), (7, -3.14159), (8, 12345678901234567.89), (9, 1e30),
 (10, 1e-25), (11, 'NaN'), (12, 'Infinity'), (13, '-Infinity'), (14, NULL), (15, -10.0005),
 (16, 9.9995), (17, 0.1), (18, 7.000000000000000000001), (19, 123456.123456789);
UPDATE rs_num SET f = v::float8;
CREATE TABLE rs_tricky AS SELECT * FROM rs_num;
-- bulk: 20000 deterministic values of scales 0 to 8 in and around [-10, 10]
INSERT INTO rs_num(k, v)
SELECT i % 20, round(((i::bigint * 104729) % 2400001 - 1200000)::numeric / 100000, i % 9)
FROM generate_series(1, 20000) AS i;
UPDATE rs_num SET f = v::float8;
ANALYZE rs_num;
SELECT dx.protect_table('rs_num', 'Infinity');
SELECT dx.set_column('rs_num', 'k', '{"min": 0, "max": 19}', '{"type": "none"}');
SELECT dx.set_column('rs_num', 'v', '{"min": -10, "max": 10, "step": 0.001}', '{"type": "none"}');
SELECT dx.set_column('rs_num', 'f', '{"min": -10, "max": 10, "step": 0.001}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rs_num', 1000);
SELECT dx.protect_table('rs_tricky', 'Infinity');
SELECT dx.set_column('rs_tricky', 'k', '{"min": 0, "max": 19}', '{"type": "none"}');
SELECT dx.set_column('rs_tricky', 'v', '{"min": -10, "max": 10, "step": 0.001}', '{"type": "none"}');
SELECT dx.set_column('rs_tricky', 'f', '{"min": -10, "max": 10, "step": 0.001}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rs_tricky', 1000);
SET dxpriv.cache_lifetime = 0;
-- the tricky rows alone, one row per group: each value's point, through the numeric and the float8 column
SELECT k, dx.sum(v) AS numeric_point FROM rs_tricky GROUP BY k ORDER BY k;
SELECT k, round(dx.sum(f)::numeric, 6) AS float8_point FROM rs_tricky GROUP BY k ORDER BY k;
-- all rows: the numeric column and its float8 twin give the same sums, averages and FILTERed counts,
-- serially, in parallel and in parallel without the leader scanning rows
SELECT dx.sum(v) AS sv, dx.avg(v) AS av, dx.count(*) FILTER (WHERE v > 0.001) AS wv, dx.count(*) AS n FROM rs_num \gset serial_
SELECT dx.sum(f) AS sf, dx.avg(f) AS af, dx.count(*) FILTER (WHERE f > 0.001) AS wf FROM rs_num \gset serial_
SELECT round(:serial_sv::numeric, 6) = round(:serial_sf::numeric, 6) AS sum_equal,
       round(:serial_av::numeric, 9) = round(:serial_af::numeric, 9) AS avg_equal, :serial_wv = :serial_wf AS filter_equal,
       :serial_n AS n;
-- the same clamping natively: (f - lo) / step rounded half away from zero, clamped to the grid;
-- NULL and NaN map to the domain minimum, +-Infinity to the ends
SELECT round(sum(CASE WHEN v IS NULL OR v = 'NaN' THEN -10
                      ELSE -10 + 0.001 * least(greatest(sign(f + 10) * floor(abs((f + 10) / 0.001) + 0.5), 0), 20000) END)::numeric, 3) AS native_clamped,
       round(:serial_sv::numeric, 3) AS dx_sum
FROM rs_num;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT dx.sum(v) FROM rs_num;
SELECT dx.sum(v) AS sv, dx.avg(v) AS av, dx.count(*) FILTER (WHERE v > 0.001) AS wv, dx.count(*) AS n FROM rs_num \gset par_
SELECT dx.sum(f) AS sf, dx.avg(f) AS af FROM rs_num \gset par_
SELECT :par_sv = :serial_sv AS sum_equal, :par_av = :serial_av AS avg_equal, :par_wv = :serial_wv AS filter_equal,
       :par_n = :serial_n AS count_equal, :par_sf = :serial_sf AS float8_sum_equal, :par_af = :serial_af AS float8_avg_equal;
SET parallel_leader_participation = off;
SELECT dx.sum(v) AS sv, dx.avg(v) AS av, dx.count(*) FILTER (WHERE v > 0.001) AS wv, dx.count(*) AS n FROM rs_num \gset wo_
SELECT :wo_sv = :serial_sv AS sum_equal, :wo_av = :serial_av AS avg_equal, :wo_wv = :serial_wv AS filter_equal,
       :wo_n = :serial_n AS count_equal;
RESET parallel_leader_participation;
-- grouped, parallel: every group's answers as in the serial plan
SELECT k, dx.count(*), dx.sum(v) FROM rs_num GROUP BY k ORDER BY k;
SET max_parallel_workers_per_gather = 0;
SELECT k, dx.count(*), dx.sum(v) FROM rs_num GROUP BY k ORDER BY k;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
-- a weight that changes from row to row and back (the memo must not keep a stale weight):
-- 1, 2, 1, 2, ... summed exactly
CREATE TABLE rs_alt (v numeric);
INSERT INTO rs_alt SELECT 1 + i % 2 FROM generate_series(1, 1001) AS i;
SELECT dx.protect_table('rs_alt', 'Infinity');
SELECT dx.set_column('rs_alt', 'v', '{"min": 0, "max": 5, "step": 0.5}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rs_alt', 10);
SELECT dx.sum(v) AS dx_sum FROM rs_alt;
SELECT sum(v) AS native_sum FROM rs_alt;
-- power-of-two steps (the per-row path multiplies by 1/step there, which must give the division's
-- double): halfway points, subnormals, -0, values beyond the ends, one row per group
CREATE TABLE rs_pow2 (k int, f float8, i int);
INSERT INTO rs_pow2 VALUES (0, 0.125, 0), (1, 0.375, 1), (2, 1e-310, 2), (3, '-0', 3), (4, 7.875, 4),
 (5, 1e300, 5), (6, '-Infinity', 6), (7, 'NaN', 7), (8, 3.1249999999999996, 8), (9, NULL, NULL);
SELECT dx.protect_table('rs_pow2', 'Infinity');
SELECT dx.set_column('rs_pow2', 'k', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.set_column('rs_pow2', 'f', '{"min": -4, "max": 8, "step": 0.25}', '{"type": "none"}');
SELECT dx.set_column('rs_pow2', 'i', '{"min": -3, "max": 7, "step": 2}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rs_pow2', 10);
SELECT k, dx.sum(f) AS f_point FROM rs_pow2 GROUP BY k ORDER BY k;
SELECT k, dx.sum(i) AS i_point FROM rs_pow2 GROUP BY k ORDER BY k;
-- enumerated columns of at most 16 labels are matched by a scan (first byte, then bytes): the empty
-- label, labels sharing a prefix or a first byte, undeclared values and NULL (the first label)
CREATE TABLE rs_enum (t text, c char(3));
INSERT INTO rs_enum VALUES ('', 'a'), ('a', 'ab'), ('ab', 'abc'), ('abc', 'b'), ('abd', 'x'), ('b', NULL),
 (NULL, 'a  '), ('A', 'ab '), ('ab', 'b'), ('abc ', 'abc');
SELECT dx.protect_table('rs_enum', 'Infinity');
SELECT dx.set_column('rs_enum', 't', '{"values": ["ab", "", "a", "abc", "b"]}', '{"type": "none"}');
SELECT dx.set_column('rs_enum', 'c', '{"values": ["ab", "a", "b", "abc"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'rs_enum', 10);
SELECT t, dx.count(*) FROM rs_enum GROUP BY t ORDER BY t;
SELECT c, dx.count(*) FROM rs_enum GROUP BY c ORDER BY c;
SELECT dx.count(*) AS t_ab_and_c_b FROM rs_enum WHERE t = 'ab' AND c = 'b';
RESET dxpriv.cache_lifetime;
