-- stddev, variance, covar, corr and regr_* for analysts (issue 24): each statistic is computed
-- from linear parts (count and centred sums of x, y, x², y², xy) released as one statement with
-- one charge; dx.last_release() shows the statistic with a delta-method 95% interval.
--
-- 1. Exact answers: presence 'Infinity' and metrics that do not constrain the query give
-- sensitivity 0, so every part is exact and the statistics equal PostgreSQL's own.
CREATE TABLE disp_exact (x int, y int, g text, w float8);
INSERT INTO disp_exact SELECT i % 37, (i * 7) % 23 + i % 37, (ARRAY['a','b','c'])[1 + i % 3], (i % 11) * 0.5
FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('disp_exact', 'Infinity');
SELECT dx.set_column('disp_exact', 'x', '{"min": 0, "max": 40}', '{"type": "none"}');
SELECT dx.set_column('disp_exact', 'y', '{"min": 0, "max": 70}', '{"type": "none"}');
SELECT dx.set_column('disp_exact', 'g', '{"values": ["a", "b", "c"]}', '{"type": "none"}');
SELECT dx.set_column('disp_exact', 'w', '{"min": 0, "max": 5, "step": 0.5}', '{"type": "none"}');
CREATE ROLE disp_analyst;
SELECT dx.add_analyst('disp_analyst');
SELECT dx.grant_budget('disp_analyst', 'disp_exact', 100);
SET dxpriv.cache_lifetime = 0;
CREATE TEMP TABLE native AS
SELECT stddev(x) AS sd, stddev_pop(x) AS sdp, variance(x) AS v, var_pop(x) AS vp, var_samp(w) AS vw,
       covar_samp(y, x) AS cs, covar_pop(y, x) AS cp, corr(y, x) AS r, regr_slope(y, x) AS b,
       regr_intercept(y, x) AS a, regr_count(y, x) AS n, regr_avgx(y, x) AS ax, regr_avgy(y, x) AS ay,
       regr_sxx(y, x) AS sxx, regr_syy(y, x) AS syy, regr_sxy(y, x) AS sxy, regr_r2(y, x) AS r2
FROM disp_exact;
CREATE TEMP TABLE native_grouped AS
SELECT g, stddev(x) FILTER (WHERE y > 10) AS sd, corr(y, x) AS r FROM disp_exact WHERE x < 30 GROUP BY g;
GRANT SELECT ON native, native_grouped TO disp_analyst;
SET ROLE disp_analyst;
-- (analysts cannot store a release in a table: the comparison joins the release, as a wrapper,
-- with the owner's native answers)
SELECT abs(d.sd - n.sd) < 1e-9 AS sd, abs(d.sdp - n.sdp) < 1e-9 AS sdp, abs(d.v - n.v) < 1e-9 AS v,
       abs(d.vp - n.vp) < 1e-9 AS vp, abs(d.vw - n.vw) < 1e-9 AS vw, abs(d.cs - n.cs) < 1e-9 AS cs,
       abs(d.cp - n.cp) < 1e-9 AS cp, abs(d.r - n.r) < 1e-12 AS r, abs(d.b - n.b) < 1e-12 AS b,
       abs(d.a - n.a) < 1e-9 AS a, d.n = n.n AS n, abs(d.ax - n.ax) < 1e-9 AS ax, abs(d.ay - n.ay) < 1e-9 AS ay,
       abs(d.sxx - n.sxx) < 1e-6 AS sxx, abs(d.syy - n.syy) < 1e-6 AS syy, abs(d.sxy - n.sxy) < 1e-6 AS sxy,
       abs(d.r2 - n.r2) < 1e-12 AS r2,
       pg_typeof(d.sd) AS sd_type, pg_typeof(d.vw) AS vw_type, pg_typeof(d.r) AS r_type, pg_typeof(d.n) AS n_type
FROM (SELECT stddev(x) AS sd, stddev_pop(x) AS sdp, variance(x) AS v, var_pop(x) AS vp, var_samp(w) AS vw,
             covar_samp(y, x) AS cs, covar_pop(y, x) AS cp, corr(y, x) AS r, regr_slope(y, x) AS b,
             regr_intercept(y, x) AS a, regr_count(y, x) AS n, regr_avgx(y, x) AS ax, regr_avgy(y, x) AS ay,
             regr_sxx(y, x) AS sxx, regr_syy(y, x) AS syy, regr_sxy(y, x) AS sxy, regr_r2(y, x) AS r2
      FROM disp_exact) d, native n;
-- (the result types are PostgreSQL's: numeric for integer columns, double precision for float8,
-- bigint for regr_count)
-- grouped, with WHERE and FILTER
SELECT d.g, abs(d.sd - n.sd) < 1e-9 AS sd_equal, abs(d.r - n.r) < 1e-12 AS r_equal
FROM (SELECT g, stddev(x) FILTER (WHERE y > 10) AS sd, corr(y, x) AS r FROM disp_exact WHERE x < 30 GROUP BY g) d
JOIN native_grouped n USING (g) ORDER BY d.g;
-- in a wrapper (a BI tool's subquery) and in HAVING
SELECT round(s::numeric, 6) = round((SELECT sd FROM native)::numeric, 6) AS wrapped_equal
FROM (SELECT stddev(x) AS s FROM disp_exact) t;
SELECT g FROM disp_exact GROUP BY g HAVING stddev(x) > 0 ORDER BY g;
-- a prepared statement with a bound parameter (analysed when planned with its value), a cursor
PREPARE disp_p(int) AS SELECT stddev(x) AS sd, corr(y, x) AS r FROM disp_exact WHERE x < $1;
EXECUTE disp_p(30);
BEGIN;
DECLARE disp_c CURSOR FOR SELECT g, var_pop(x) AS v FROM disp_exact GROUP BY g ORDER BY g;
FETCH ALL FROM disp_c;
COMMIT;
RESET ROLE;
-- (PostgreSQL's own, for the owner: the same numbers)
SELECT stddev(x) FILTER (WHERE x < 30) AS sd, corr(y, x) FILTER (WHERE x < 30) AS r FROM disp_exact;
SELECT g, var_pop(x) AS v FROM disp_exact GROUP BY g ORDER BY g;
-- a parallel plan: the parts' partial states are combined exactly, the statistic computed in the leader
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SET ROLE disp_analyst;
SELECT abs(d.sd - n.sd) < 1e-9 AS parallel_sd, abs(d.r - n.r) < 1e-12 AS parallel_r
FROM (SELECT stddev(x) AS sd, corr(y, x) AS r FROM disp_exact) d, native n;
RESET ROLE;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;

-- 2. Noisy releases: one charge for every part, the statistic's error bar in dx.last_release.
CREATE TABLE disp (age int, income int, sex text, ward text, secret int);
INSERT INTO disp SELECT 20 + (i * 7) % 60, 1000 + ((i * 13) % 50) * 100 + (20 + (i * 7) % 60) * 50,
       (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c'])[1 + i % 3], i
FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('disp', 1);
SELECT dx.set_column('disp', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('disp', 'income', '{"min": 0, "max": 10000, "step": 100}', '{"type": "absolute", "scale": 100}');
SELECT dx.set_column('disp', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('disp', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 3}');
SELECT dx.grant_budget('disp_analyst', 'disp', 100);
SET dxpriv.test_seed = 45;
SET ROLE disp_analyst;
SELECT stddev(age) IS NOT NULL AS answered FROM disp;
-- one ledger row, charged the session epsilon once (the parts share it, as avg's two cells do),
-- with three cells (count, Σ(age-50), Σ(age-50)²)
SELECT count(*) AS charges, round(max(epsilon)::numeric, 9) AS epsilon, max(array_length(scales, 1)) AS cells FROM dx.my_ledger
WHERE "table" = 'disp'::regclass;
SELECT aggregate, kind, expression, component, cell IS NULL AS no_cell, interval_method,
       ci95_half_width > 0 AS has_error_bar, abs(ci95_high - ci95_low - 2 * ci95_half_width) < 1e-6 AS symmetric
FROM dx.last_release() ORDER BY aggregate, component;
-- a second statistic of the same column shares its parts: still three cells, one charge
SELECT stddev(age) IS NOT NULL AS sd, variance(age) IS NOT NULL AS var, var_pop(age) IS NOT NULL AS var_pop FROM disp;
SELECT count(*) AS charges, max(array_length(scales, 1)) FILTER (WHERE id = (SELECT max(id) FROM dx.my_ledger)) AS cells
FROM dx.my_ledger WHERE "table" = 'disp'::regclass;
SELECT kind, component FROM dx.last_release() WHERE interval_method = 'delta_method' ORDER BY kind;
-- stddev and avg together: the avg's two cells and the three parts, one charge
SELECT stddev(age) IS NOT NULL AS sd, avg(age) IS NOT NULL AS mean FROM disp;
SELECT array_length(scales, 1) AS cells FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
-- corr and regr_slope of two columns: six parts (the slope's five are corr's), corr clamped to
-- [-1, 1]; each two-column part costs a sixth of the session epsilon

SELECT corr(income, age) BETWEEN -1 AND 1 AS corr_in_range, regr_slope(income, age) > 0 AS positive_slope FROM disp;
SELECT array_length(scales, 1) AS cells FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
SELECT round(epsilon::numeric, 9) AS epsilon FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
-- regr_count is one part (a count), at a sixth of the session epsilon
SELECT regr_count(income, age) > 0 AS counted FROM disp;
SELECT array_length(scales, 1) AS cells, round(epsilon::numeric, 9) AS epsilon FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
-- grouped by a declared column: a statistic per group, one charge
SELECT sex, stddev(income) IS NOT NULL AS answered FROM disp GROUP BY sex ORDER BY sex;
SELECT count(*) FILTER (WHERE interval_method = 'delta_method') AS statistics,
       count(DISTINCT group_key) AS groups FROM dx.last_release();
-- groups without rows: where the noisy count's 95% interval reaches 0 the statistic is NULL and
-- named; where the noise happened to give a count beyond its interval, a clamped value (named)
SELECT age, stddev(income) AS sd FROM disp WHERE age < 3 GROUP BY age ORDER BY age;
SELECT group_key, answer IS NULL AS withheld, postprocessing FROM dx.last_release()
WHERE interval_method = 'delta_method' ORDER BY group_key;
-- ROLLUP: the sets share one allocation and one charge
SELECT sex, GROUPING(sex) AS gs, stddev(age) IS NOT NULL AS answered FROM disp GROUP BY ROLLUP (sex) ORDER BY gs, sex;
SELECT count(*) FILTER (WHERE interval_method = 'delta_method') AS statistics FROM dx.last_release();
-- dx.explain, free: the parts' cells (their scales and exact intervals) before anything is spent
SELECT cell, aggregate, kind, component, round(epsilon::numeric, 6) AS epsilon, noise_scale > 0 AS noised,
       round(query_epsilon::numeric, 6) AS query_epsilon
FROM dx.explain('SELECT stddev(age) FROM disp') ORDER BY cell;
-- what PostgreSQL answers as NULL stays NULL without post-processing only where undefined
SET dxpriv.postprocess = off;
SELECT corr(income, age) IS NOT NULL AS raw_corr_answered FROM disp;
RESET dxpriv.postprocess;

-- 3. Refusals: what cannot be bounded or is not declared
SELECT stddev(secret) FROM disp;
SELECT stddev(age) FILTER (WHERE secret > 10) FROM disp;
SELECT stddev(DISTINCT age) FROM disp;
SELECT stddev(age + random()) FROM disp;
SELECT corr(secret, age) FROM disp;
SELECT stddev(sex::int) FROM disp;
-- the internal spelling written by hand
SELECT dx._dispersion(0, 'x', 0, 0, NULL, NULL, NULL, NULL, NULL, NULL) FROM disp;
SELECT dx._noisy_part(age, 0, '{}'::float8[]) FROM disp;
-- none of the refusals was charged
SELECT count(*) AS charges FROM dx.my_ledger WHERE "table" = 'disp'::regclass;
RESET ROLE;

-- 4. COUNT(DISTINCT col) of a declared column: the number of its declared values present, with
-- discrete Laplace noise of scale S/epsilon, S the d_X sensitivity of dx.mode over the same column
-- (a record moves the count by at most 1, and only across an edge that changes its value or
-- whether it is counted).
-- exact where the sensitivity is 0: PostgreSQL's own answer
CREATE TEMP TABLE native_total AS SELECT count(DISTINCT x) AS n, count(DISTINCT g) AS ng FROM disp_exact;
GRANT SELECT ON native_total TO disp_analyst;
SET ROLE disp_analyst;
SELECT d.n = t.n AS equal_total, d.ng = t.ng AS equal_enumerated
FROM (SELECT count(DISTINCT x) AS n, count(DISTINCT g) AS ng FROM disp_exact) d, native_total t;
RESET ROLE;
CREATE TEMP TABLE native_distinct AS
SELECT g, count(DISTINCT x) AS nx, count(DISTINCT y) FILTER (WHERE x > 5) AS ny FROM disp_exact WHERE y < 40 GROUP BY g;
GRANT SELECT ON native_distinct TO disp_analyst;
SET ROLE disp_analyst;
SELECT d.g, d.nx = n.nx AS nx_equal, d.ny = n.ny AS ny_equal, pg_typeof(d.nx) AS type
FROM (SELECT g, count(DISTINCT x) AS nx, count(DISTINCT y) FILTER (WHERE x > 5) AS ny FROM disp_exact WHERE y < 40 GROUP BY g) d
JOIN native_distinct n USING (g) ORDER BY d.g;
-- noisy: ages 20..79 present of 0..100; absolute metric with step 1 and presence 1: S = 1, scale 10
SELECT count(DISTINCT age) BETWEEN 0 AND 101 AS in_range FROM disp;
SELECT round(epsilon::numeric, 9) AS epsilon, scales FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
-- its row in dx.last_release: the exact interval of its discrete Laplace noise
SELECT aggregate, kind, expression IS NULL AS no_text, component, noise, round(noise_scale::numeric, 3) AS scale,
       ci95_half_width, interval_method, ci95_high - ci95_low = 2 * ci95_half_width AS symmetric
FROM dx.last_release();
-- grouped: a change of sex moves a record between two groups at distance 2, so S stays 1
SELECT sex, count(DISTINCT ward) BETWEEN 0 AND 3 AS in_range FROM disp GROUP BY sex ORDER BY sex;
SELECT scales FROM dx.my_ledger ORDER BY id DESC LIMIT 1;
-- with a stddev in the same statement: one charge for both
SELECT count(DISTINCT ward) >= 0 AS wards, stddev(age) IS NOT NULL AS sd FROM disp;
SELECT count(*) AS charges_of_last_statement, round(epsilon::numeric, 9) AS epsilon
FROM dx.my_ledger WHERE id = (SELECT max(id) FROM dx.my_ledger) GROUP BY epsilon;
SELECT kind, component, interval_method FROM dx.last_release() WHERE kind = 'count_distinct';
-- 5. Quantiles, mode and median get their interval in dx.last_release too: the 95% bound on the
-- utility they lose (rows below the top count, rows away from the target rank), which depends on
-- epsilon, the sensitivity and the number of candidates only; their value is what the client got
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY age) BETWEEN 0 AND 100 AS median_answered,
       mode() WITHIN GROUP (ORDER BY ward) IS NOT NULL AS mode_answered, count(*) > 0 AS counted FROM disp;
SELECT aggregate, kind, component, answer IS NULL AS value_not_logged, noise, interval_method,
       ci95_half_width > 0 AS has_bound
FROM dx.last_release() ORDER BY aggregate;
-- the bound is the one dx.explain announces
SELECT abs(l.ci95_half_width - e.ci95_half_width) < 1e-9 AS as_explained
FROM dx.last_release() l, dx.explain('SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY age) FROM disp') e
WHERE l.kind = 'quantile';
-- what dx.explain says of it, free
SELECT kind, component, noise, noise_scale, ci95_half_width FROM dx.explain('SELECT count(DISTINCT age) FROM disp');
-- refused: an expression, an undeclared column (in the argument or FILTER), DISTINCT of other aggregates
SELECT count(DISTINCT age / 10) FROM disp;
SELECT count(DISTINCT secret) FROM disp;
SELECT count(DISTINCT age) FILTER (WHERE secret > 5) FROM disp;
SELECT sum(DISTINCT age) FROM disp;
RESET ROLE;
-- the owner's dx spelling
SELECT dx.grant_budget(current_user::regrole, 'disp', 10);
SELECT dx.count_distinct(ward) BETWEEN 0 AND 3 AS owner_in_range FROM disp;
RESET dxpriv.test_seed;
