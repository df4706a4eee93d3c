-- Local model: randomisers, IBU reconstruction aggregate, Kantorovich distance. These functions
-- read no protected table and charge no budget; the test seed makes every draw reproducible.
SET dxpriv.test_seed = 42;

-- Every bad input raises an error with an errcode, a lowercase message and a hint (err: 00_setup).

-- Randomisers: outputs stay in [lo, hi], actually vary, and are reproducible under a fixed seed.
SELECT bool_and(r BETWEEN 0 AND 10) AS in_range, count(DISTINCT r) > 5 AS varies
FROM (SELECT dx.geometric_randomize(i % 11, 0, 10, 0.5) AS r FROM generate_series(1, 2000) AS i) s;
SELECT bool_and(r BETWEEN -5 AND 5) AS in_range, count(DISTINCT r) = 11 AS all_values_seen
FROM (SELECT dx.krr_randomize(i % 11 - 5, -5, 5, 0.5) AS r FROM generate_series(1, 2000) AS i) s;
SELECT bool_and(dx.geometric_randomize(0, 0, 3, 1) BETWEEN 0 AND 3) AS lo_edge,
	bool_and(dx.geometric_randomize(3, 0, 3, 1) BETWEEN 0 AND 3) AS hi_edge,
	bool_and(dx.krr_randomize(3, 0, 3, 1) BETWEEN 0 AND 3) AS krr_edge
FROM generate_series(1, 500);
SELECT dx.geometric_randomize(7, 7, 7, 1) AS single_geo, dx.krr_randomize(7, 7, 7, 1) AS single_krr,
	dx.geometric_randomize(4, 0, 9, 1000) AS huge_eps_geo, dx.krr_randomize(4, 0, 9, 1000) AS huge_eps_krr;
SET dxpriv.test_seed = 7;
CREATE TEMP TABLE draw1 AS SELECT array_agg(dx.geometric_randomize(50, 0, 100, 0.2) ORDER BY i) AS a
FROM generate_series(1, 50) AS i;
SET dxpriv.test_seed = 7;
SELECT (SELECT a FROM draw1) = array_agg(dx.geometric_randomize(50, 0, 100, 0.2) ORDER BY i) AS reproducible
FROM generate_series(1, 50) AS i;
SET dxpriv.test_seed = 42;
-- STRICT: a NULL argument gives NULL
SELECT dx.geometric_randomize(NULL, 0, 10, 1) IS NULL AS geo_null, dx.krr_randomize(1, 0, 10, NULL) IS NULL AS krr_null;

-- Bad randomiser input.
SELECT q, err(q) FROM (VALUES
	('SELECT dx.geometric_randomize(5, 10, 0, 1)'),
	('SELECT dx.krr_randomize(11, 0, 10, 1)'),
	('SELECT dx.geometric_randomize(-1, 0, 10, 1)'),
	('SELECT dx.geometric_randomize(5, 0, 10, 0)'),
	('SELECT dx.krr_randomize(5, 0, 10, -1)'),
	('SELECT dx.geometric_randomize(5, 0, 10, ''NaN'')'),
	('SELECT dx.krr_randomize(5, 0, 10, ''Infinity'')'),
	('SELECT dx.geometric_randomize(5, 0, 10, 1e-9)'),
	('SELECT dx.krr_randomize(5, 0, 2000000, 1)'),
	('SELECT dx.geometric_randomize(0, -2147483648, 2147483647, 1)')
) AS t(q);

-- IBU on reports of a known 4-point distribution (40% at 1, 30% at 4, 20% at 7, 10% at 10).
CREATE TABLE local_truth (v int);
INSERT INTO local_truth
SELECT CASE WHEN i % 10 < 4 THEN 1 WHEN i % 10 < 7 THEN 4 WHEN i % 10 < 9 THEN 7 ELSE 10 END
FROM generate_series(1, 20000) AS i;
CREATE TABLE local_reports (v int, geo int, krr int);
INSERT INTO local_reports SELECT v, dx.geometric_randomize(v, 0, 10, 1.0), dx.krr_randomize(v, 0, 10, 2.0)
FROM local_truth;
CREATE TEMP TABLE truth_dist AS
SELECT array_agg(coalesce(c, 0) / 20000.0::float8 ORDER BY x) AS p
FROM generate_series(0, 10) AS x LEFT JOIN (SELECT v, count(*) AS c FROM local_truth GROUP BY v) t ON t.v = x;
SELECT array_length(e, 1) AS n, abs((SELECT sum(x) FROM unnest(e) AS x) - 1) < 1e-12 AS sums_to_1,
	(SELECT bool_and(x >= 0) FROM unnest(e) AS x) AS non_negative,
	dx.kantorovich(e, (SELECT p FROM truth_dist)) < 0.1 AS close_to_truth,
	dx.kantorovich(e, (SELECT p FROM truth_dist)) < dx.kantorovich(raw, (SELECT p FROM truth_dist)) AS better_than_raw
FROM (SELECT dx.ibu(geo, 0, 10, 1.0, 'geometric', 2000) AS e,
		(SELECT array_agg(coalesce(c, 0) / 20000.0::float8 ORDER BY x) FROM generate_series(0, 10) AS x
		 LEFT JOIN (SELECT geo, count(*) AS c FROM local_reports GROUP BY geo) g ON g.geo = x) AS raw
	FROM local_reports) s;
SELECT abs((SELECT sum(x) FROM unnest(e) AS x) - 1) < 1e-12 AS sums_to_1,
	dx.kantorovich(e, (SELECT p FROM truth_dist)) < 0.15 AS close_to_truth
FROM (SELECT dx.ibu(krr, 0, 10, 2.0, 'krr', 2000) AS e FROM local_reports) s;
-- deterministic: the same counts give the same estimate; NULL reports are ignored
SELECT dx.ibu(geo, 0, 10, 1.0, 'geometric', 300) =
	(SELECT dx.ibu(r, 0, 10, 1.0, 'geometric', 300) FROM (SELECT geo AS r FROM local_reports UNION ALL
		SELECT NULL FROM generate_series(1, 10)) u) AS nulls_ignored
FROM local_reports;
-- no report: NULL; a domain of one value: certainty
SELECT dx.ibu(geo, 0, 10, 1.0, 'geometric', 10) IS NULL AS empty_is_null FROM local_reports WHERE false;
SELECT dx.ibu(5, 5, 5, 1.0, 'krr', 10) AS one_value FROM generate_series(1, 3);
-- §4.8: reports with exactly the law pi TG (pi = (0.1, 0.2, 0.3, 0.4), TG at ln 2 on 0..3, i.e.
-- counts 26, 20, 25, 49 of 120) give back pi; the channel dx.ibu uses is TG at ln 2 rounded down to a
-- multiple of 2^-20 (the law the randomiser realises), hence the rounding to 4 decimals.
SELECT array_agg(round(x::numeric, 4)) AS estimate FROM unnest((
	SELECT dx.ibu(v, 0, 3, ln(2), 'geometric', 2000)
	FROM (VALUES (0, 26), (1, 20), (2, 25), (3, 49)) AS c(v, n), generate_series(1, n))) AS x;
-- reports (2, 3, 3, 2): q TG^-1 has negative entries, and IBU converges to the maximum-likelihood
-- estimate on the boundary of the simplex, (0, 0.5, 0.5, 0)
SELECT array_agg(round(x::numeric, 6)) AS estimate FROM unnest((
	SELECT dx.ibu(v, 0, 3, ln(2), 'geometric', 5000)
	FROM unnest(ARRAY[0, 0, 1, 1, 1, 2, 2, 2, 3, 3]) AS v)) AS x;
-- one estimate per group
SELECT v % 2 AS parity, array_length(dx.ibu(geo, 0, 10, 1.0, 'geometric', 100), 1) AS n
FROM local_reports GROUP BY 1 ORDER BY 1;

-- Bad IBU input.
SELECT q, err(q) FROM (VALUES
	('SELECT dx.ibu(geo, 0, 10, 1.0, ''laplace'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, 1.0, ''geometric'', 0) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, 1.0, ''geometric'', 2000000) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, 0, ''geometric'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, ''NaN'', ''krr'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 10, 0, 1.0, ''krr'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 200000, 1.0, ''krr'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 5, 1.0, ''geometric'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, NULL, 10, 1.0, ''geometric'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, 1.0, NULL, 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, v::float8, ''geometric'', 10) FROM local_reports'),
	('SELECT dx.ibu(geo, 0, 10, 1.0, CASE WHEN v = 1 THEN ''krr'' ELSE ''geometric'' END, 10) FROM local_reports')
) AS t(q);

-- A long reconstruction can be cancelled (interrupts are checked between IBU iterations).
SET statement_timeout = '200ms';
SELECT dx.ibu(1, 0, 99999, 0.5, 'krr', 1000000);
RESET statement_timeout;
SELECT dx.ibu(1, 0, 2, 1.0, 'krr', 10) IS NOT NULL AS usable_after_cancel;

-- Kantorovich: the test vectors of MECHANISMS.md §4.8, properties, bad input.
SELECT dx.kantorovich('{1,0,0,0}', '{0,0,0,1}') AS k_ends,
	dx.kantorovich('{0.5,0.5,0,0}', '{0,0,0.5,0.5}') AS k_halves,
	dx.kantorovich('{0.2,0.3,0.5}', '{0.2,0.3,0.5}') AS k_equal,
	dx.kantorovich('{0.2,0.3,0.5}', '{0.5,0.5,0}') = dx.kantorovich('{0.5,0.5,0}', '{0.2,0.3,0.5}') AS symmetric,
	round(dx.kantorovich('{0.2,0.3,0.5}', '{0.5,0.5,0}')::numeric, 12) AS k_hand;
SELECT q, err(q) FROM (VALUES
	('SELECT dx.kantorovich(''{0.5,0.5}'', ''{1}'')'),
	('SELECT dx.kantorovich(''{}'', ''{}'')'),
	('SELECT dx.kantorovich(''{1.5,-0.5}'', ''{0.5,0.5}'')'),
	('SELECT dx.kantorovich(''{0.5,0.6}'', ''{0.5,0.5}'')'),
	('SELECT dx.kantorovich(''{0.5,NULL}'', ''{0.5,0.5}'')'),
	('SELECT dx.kantorovich(''{NaN,1}'', ''{0.5,0.5}'')'),
	('SELECT dx.kantorovich(''{{0.5,0.5}}'', ''{0.5,0.5}'')')
) AS t(q);
SELECT dx.kantorovich(NULL, '{1}') IS NULL AS strict_null;

-- Parallel IBU: partial states (report counts) are combined exactly, so the estimate equals the
-- serial one bit for bit.
CREATE TABLE local_par (r int);
INSERT INTO local_par SELECT dx.geometric_randomize((i * 7919) % 21, 0, 20, 0.5) FROM generate_series(1, 100000) AS i;
ANALYZE local_par;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT dx.ibu(r, 0, 20, 0.5, 'geometric', 5000) FROM local_par;
CREATE TEMP TABLE par_est AS SELECT dx.ibu(r, 0, 20, 0.5, 'geometric', 5000) AS e FROM local_par;
CREATE TEMP TABLE par_krr AS SELECT dx.ibu(r, 0, 20, 0.5, 'krr', 500) AS e FROM local_par;
SET max_parallel_workers_per_gather = 0;
EXPLAIN (COSTS OFF) SELECT dx.ibu(r, 0, 20, 0.5, 'geometric', 5000) FROM local_par;
SELECT (SELECT e FROM par_est) = dx.ibu(r, 0, 20, 0.5, 'geometric', 5000) AS parallel_equals_serial,
	(SELECT e FROM par_krr) = dx.ibu(r, 0, 20, 0.5, 'krr', 500) AS parallel_equals_serial_krr,
	abs((SELECT sum(x) FROM unnest((SELECT e FROM par_est)) AS x) - 1) < 1e-12 AS sums_to_1
FROM local_par;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- Local-model functions charge no budget.
SELECT count(*) AS ledger_rows_before FROM dx.ledger \gset
SELECT dx.krr_randomize(1, 0, 3, 1) BETWEEN 0 AND 3 AS ok;
SELECT count(*) = :ledger_rows_before AS no_charge FROM dx.ledger;
DROP TABLE local_truth, local_reports, local_par;
RESET dxpriv.test_seed;
