-- A range column's point by the reciprocal (issue 23, core/range_index.h): every lookup (the one-pass
-- transition and dx._weigh alike) maps a range value as (value - lo) * (1 / step), falling back to
-- the division when the product lies near a rounding boundary, and must give exactly the point of
-- the reference (value - lo) / step rounded half away from zero and clamped to the grid. Checked
-- here on decimal grids (steps 0.001, 0.003, 0.07, 0.1) over 1,200 values each, built to sit on
-- the boundaries: grid points, halves computed three ways, the products of a half with 1 + m 2^-52
-- (m = -3..3: its neighbours a few ulps away), scattered values, and extreme ones (infinities,
-- NaN, NULL, -0, subnormals, 1e300, values outside the grid); the rows counted at each point and
-- noiseless sums on a noiseless table, one pass on and off, against the reference computed natively in float8; then noisy
-- statements both ways under one test seed, serially and in parallel.
SET dxpriv.cache_lifetime = 0;
CREATE TABLE rr (k int, a float8, b float8, c float8, d float8);
-- a over [0, 1] step 0.001; b over [-1.234, 2.5] step 0.003; c over [0, 0.7] step 0.07;
-- d over [-50, 50] step 0.1. Row k: a kind (k % 12) and a grid index i spread over the grid and one
-- point beyond each end.
CREATE FUNCTION pg_temp.tricky(k int, lo float8, step float8, last int) RETURNS float8 LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE k % 12
	       WHEN 0 THEN lo + i * step
	       WHEN 1 THEN lo + (i + 0.5) * step
	       WHEN 8 THEN (lo + i * step) + 0.5 * step
	       WHEN 9 THEN lo + ((k::bigint * 104729) % 1000003) / 1000003.0 * (last + 2) * step - step
	       WHEN 10 THEN (ARRAY['Infinity', '-Infinity', 'NaN', NULL, '-0', '5e-324', '-5e-324', '1e-300',
	                           '1e300', '-1e300', '9.2e18', '-9.2e18', '2.2250738585072014e-308',
	                           '0.49999999999999994', '0.5', '1.7976931348623157e308']::float8[])[(k / 12) % 16 + 1]
	       WHEN 11 THEN ((i + 0.5)::numeric * step::numeric + lo::numeric)::float8
	       ELSE (lo + (i + 0.5) * step) * (1 + (ARRAY[-3, -2, -1, 1, 2, 3])[k % 12 - 1] * 2.220446049250313e-16)
	       END
	FROM (SELECT (k::bigint * 7919) % (last + 3) - 1 AS i) s $$;
INSERT INTO rr
SELECT k, pg_temp.tricky(k, 0, 0.001, 1000), pg_temp.tricky(k, -1.234, 0.003, 1244),
       pg_temp.tricky(k, 0, 0.07, 10), pg_temp.tricky(k, -50, 0.1, 1000)
FROM generate_series(0, 1199) AS k;
CREATE TABLE rr_noisy AS SELECT * FROM rr;
INSERT INTO rr_noisy SELECT rr.k, a, b, c, d FROM rr, generate_series(1, 19) AS j;
ANALYZE rr;
ANALYZE rr_noisy;
SELECT dx.protect_table('rr', 'Infinity'); -- noiseless: a group's sum is its value's point
SELECT dx.protect_table('rr_noisy', 1.0);
SELECT t, dx.set_column(t, 'k', '{"min": 0, "max": 1199}', '{"type": "none"}'),
       dx.set_column(t, 'a', '{"min": 0, "max": 1, "step": 0.001}', '{"type": "none"}'),
       dx.set_column(t, 'b', '{"min": -1.234, "max": 2.5, "step": 0.003}', '{"type": "none"}'),
       dx.set_column(t, 'c', '{"min": 0, "max": 0.7, "step": 0.07}', '{"type": "none"}'),
       dx.set_column(t, 'd', '{"min": -50, "max": 50, "step": 0.1}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, t::regclass, 1e9)
FROM (VALUES ('rr'), ('rr_noisy')) AS v(t);

-- the values reach the boundaries: how many rows give a product (v - lo) * (1 / step) that
-- differs from the quotient (v - lo) / step in float8 (where the rounding of the reciprocal could
-- have moved a point; finite values near the grids)
SELECT count(*) FILTER (WHERE (a - 0) * (1 / 0.001::float8) <> (a - 0) / 0.001::float8) AS a_differ,
       count(*) FILTER (WHERE (b + 1.234) * (1 / 0.003::float8) <> (b + 1.234) / 0.003::float8) AS b_differ,
       count(*) FILTER (WHERE c * (1 / 0.07::float8) <> c / 0.07::float8) AS c_differ,
       count(*) FILTER (WHERE (d + 50) * (1 / 0.1::float8) <> (d + 50) / 0.1::float8) AS d_differ
FROM rr WHERE abs(a) < 1e6 AND abs(b) < 1e6 AND abs(c) < 1e6 AND abs(d) < 1e6;

-- the points of the values, by grouping on the column (its GROUP BY key: the lookup's point), one
-- pass on and off, against the reference computed natively: the rows counted at each point
-- (noiseless counts; the key's value is the point lo + i * step, its index i recovered by rounding)
CREATE TEMP TABLE grids (c text, lo float8, step float8, hi float8);
INSERT INTO grids VALUES ('a', 0, 0.001, 1), ('b', -1.234, 0.003, 2.5), ('c', 0, 0.07, 0.7), ('d', -50, 0.1, 50);
CREATE FUNCTION pg_temp.hist(col text, lo float8, step float8, onepass text) RETURNS TABLE (i bigint, n bigint)
LANGUAGE plpgsql AS $$ BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', onepass, true);
	RETURN QUERY EXECUTE format('SELECT round((q.v - %L::float8) / %L::float8)::bigint, q.n FROM
	                             (SELECT r.%I AS v, dx.count(*) AS n FROM rr r GROUP BY r.%I) q WHERE q.n > 0', lo, step, col, col);
END $$;
CREATE TEMP TABLE hist_on AS SELECT g.c, h.* FROM grids g, pg_temp.hist(g.c, g.lo, g.step, 'on') AS h;
CREATE TEMP TABLE hist_off AS SELECT g.c, h.* FROM grids g, pg_temp.hist(g.c, g.lo, g.step, 'off') AS h;
-- the reference: the quotient in float8, rounded half away from zero (its integer part plus one
-- when its fraction, exact in float8, is at least 0.5), clamped to [0, last]; NULL and NaN: 0;
-- values beyond the grid by more than 1 (infinities, 1e300: float8 arithmetic would overflow) are
-- clamped before dividing
CREATE FUNCTION pg_temp.ref_index(v float8, lo float8, hi float8, step float8) RETURNS bigint LANGUAGE sql AS $$
	SELECT CASE WHEN v IS NULL OR v = 'NaN' OR NOT x > 0 THEN 0
	            WHEN x >= last THEN last::bigint
	            ELSE least(CASE WHEN x - floor(x) >= 0.5 THEN floor(x) + 1 ELSE floor(x) END, last)::bigint END
	FROM (SELECT (least(greatest(v, lo - 1), hi + 1) - lo) / step AS x, floor((hi - lo) / step + 1e-9) AS last) q $$;
CREATE TEMP TABLE ref AS
SELECT g.c, r.k, pg_temp.ref_index(CASE g.c WHEN 'a' THEN r.a WHEN 'b' THEN r.b WHEN 'c' THEN r.c ELSE r.d END,
                                   g.lo, g.hi, g.step) AS i
FROM grids g, rr r;
CREATE TEMP TABLE hist_ref AS SELECT c, i, count(*) AS n FROM ref GROUP BY c, i;
SELECT c, sum(o.n) AS rows_on, count(*) FILTER (WHERE o.n IS NOT NULL) AS points_met,
       count(*) FILTER (WHERE o.n IS DISTINCT FROM f.n) AS on_off_differ,
       count(*) FILTER (WHERE o.n IS DISTINCT FROM r.n) AS reference_differ
FROM hist_on o FULL JOIN hist_off f USING (c, i) FULL JOIN hist_ref r USING (c, i)
GROUP BY c ORDER BY c;
-- the same points without grouping (the one-pass transition's one-column path): noiseless sums,
-- of all rows and of the first half, against the reference points' sums (within a hundredth of
-- a step: a point off by one moves a sum by a whole step)
CREATE FUNCTION pg_temp.sums(col text, onepass text) RETURNS TABLE (total float8, half float8) LANGUAGE plpgsql AS $$ BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', onepass, true);
	RETURN QUERY EXECUTE format('SELECT dx.sum(%1$I), dx.sum(%1$I) FILTER (WHERE k < 600) FROM rr', col);
END $$;
SELECT g.c, abs(o.total - x.total) < g.step / 100 AS total_matches, abs(o.half - x.half) < g.step / 100 AS half_matches,
       o.total = f.total AND o.half = f.half AS equal_off
FROM grids g CROSS JOIN LATERAL pg_temp.sums(g.c, 'on') o CROSS JOIN LATERAL pg_temp.sums(g.c, 'off') f
JOIN (SELECT r.c, sum(g2.lo + r.i * g2.step) AS total, sum(g2.lo + r.i * g2.step) FILTER (WHERE r.k < 600) AS half
      FROM ref r JOIN grids g2 USING (c) GROUP BY r.c) x USING (c)
ORDER BY g.c;

-- noisy statements both ways under one test seed (as 48_one_pass): equal answers row for row
CREATE FUNCTION pg_temp.same_both_ways(q text, seed int DEFAULT 6767) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_on bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.cmp_on, pg_temp.cmp_off;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'off', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_off AS ' || q;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', seed::text, true);
	EXECUTE 'CREATE TEMP TABLE cmp_on AS ' || q;
	SELECT count(*) INTO n FROM ((SELECT * FROM cmp_on EXCEPT ALL SELECT * FROM cmp_off)
	                              UNION ALL (SELECT * FROM cmp_off EXCEPT ALL SELECT * FROM cmp_on)) d;
	SELECT count(*) INTO rows_on FROM cmp_on;
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_on || ' rows';
END $$;
SET max_parallel_workers_per_gather = 0;
SELECT pg_temp.same_both_ways('SELECT dx.sum(a) AS s, dx.avg(a) AS m, dx.count(*) AS n FROM rr_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(b) AS s, dx.count(*) FILTER (WHERE c > 0.35) AS n FROM rr_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(c) AS s, dx.avg(d) AS m FROM rr_noisy WHERE c < 0.35');
SET enable_hashagg = off;
SELECT pg_temp.same_both_ways('SELECT c, dx.count(*) AS n, dx.sum(a) AS s FROM rr_noisy GROUP BY c');
SELECT pg_temp.same_both_ways('SELECT c, dx.avg(b) AS m FROM rr_noisy GROUP BY c');
RESET enable_hashagg;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT pg_temp.same_both_ways('SELECT dx.sum(a) AS s, dx.avg(a) AS m, dx.count(*) AS n FROM rr_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(b) AS s, dx.count(*) FILTER (WHERE c > 0.35) AS n FROM rr_noisy');
SELECT pg_temp.same_both_ways('SELECT dx.sum(d) AS s, dx.avg(c) AS m FROM rr_noisy WHERE d > -10');
SET parallel_leader_participation = off;
SELECT pg_temp.same_both_ways('SELECT dx.sum(c) AS s, dx.avg(d) AS m FROM rr_noisy');
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
