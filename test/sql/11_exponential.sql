-- Exponential mechanism: dx.mode, dx.quantile and dx.median. Answers are declared domain values;
-- with sensitivity 0 (noiseless table) or a huge epsilon they are the true mode / quantile;
-- GROUP BY returns every group; each aggregate is charged its own epsilon with scale 2 S_EM/eps.
\set VERBOSITY default
SET dxpriv.test_seed = 11;
CREATE TABLE em_exact (age int, ward text, d date, score numeric, tag varchar(3));
-- 101 rows: unique mode 'b', unique median and 0.9-quantile (0.5 N and 0.9 N are not integers)
INSERT INTO em_exact SELECT 18 + (i * 37) % 61, CASE WHEN i % 5 IN (0, 1) THEN 'b' WHEN i % 5 = 2 THEN 'a' ELSE 'c' END,
	date '2024-03-01' + (i * 11) % 90, round((i * 13 % 50) / 2.0, 1), (ARRAY['x','y','y'])[1 + i % 3]
FROM generate_series(1, 101) AS i;
SELECT dx.protect_table('em_exact', 'Infinity');
SELECT dx.set_column('em_exact', 'age', '{"min": 0, "max": 100}', '{"type": "none"}');
SELECT dx.set_column('em_exact', 'ward', '{"values": ["a", "b", "c", "d"]}', '{"type": "none"}');
SELECT dx.set_column('em_exact', 'd', '{"min": "2024-01-01", "max": "2024-12-31"}', '{"type": "none"}');
SELECT dx.set_column('em_exact', 'score', '{"min": 0, "max": 25, "step": 0.5}', '{"type": "none"}');
SELECT dx.set_column('em_exact', 'tag', '{"values": ["x", "y", "z"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'em_exact', 100);

-- sensitivity 0: the exact mode, median and quantiles, of the column's type
SELECT dx.mode(ward) AS mode, dx.median(age) AS median, dx.quantile(age, 0.9) AS q90, dx.median(d) AS median_d,
	dx.quantile(score, 0.25) AS q25, dx.mode(tag) AS mode_tag FROM em_exact;
SELECT mode() WITHIN GROUP (ORDER BY ward) AS mode, percentile_disc(0.5) WITHIN GROUP (ORDER BY age) AS median,
	percentile_disc(0.9) WITHIN GROUP (ORDER BY age) AS q90, percentile_disc(0.5) WITHIN GROUP (ORDER BY d) AS median_d,
	percentile_disc(0.25) WITHIN GROUP (ORDER BY score) AS q25, mode() WITHIN GROUP (ORDER BY tag) AS mode_tag FROM em_exact;
SELECT pg_typeof(dx.median(age)) AS t_age, pg_typeof(dx.median(d)) AS t_d, pg_typeof(dx.quantile(score, 0.1)) AS t_score,
	pg_typeof(dx.mode(tag)) AS t_tag FROM em_exact;
-- p = 0 and p = 1: every value up to the minimum (resp. from the maximum) is a quantile
SELECT dx.quantile(age, 0) <= 18 AS q0_ok, dx.quantile(age, 1) >= 78 AS q1_ok FROM em_exact;
SELECT min(age), max(age) FROM em_exact;
-- WHERE and FILTER select the rows (an even count: any value between the two middle ones is a median)
SELECT dx.median(age) FILTER (WHERE ward = 'a') AS median_a, dx.mode(ward) FILTER (WHERE age < 30) AS mode_young
FROM em_exact WHERE tag = 'y';
SELECT count(*) FILTER (WHERE ward = 'a') AS n_a, percentile_disc(0.5) WITHIN GROUP (ORDER BY age) FILTER (WHERE ward = 'a') AS lower_a,
	percentile_disc(0.5000001) WITHIN GROUP (ORDER BY age) FILTER (WHERE ward = 'a') AS upper_a,
	mode() WITHIN GROUP (ORDER BY ward) FILTER (WHERE age < 30) AS mode_young FROM em_exact WHERE tag = 'y';
-- post-processing, HAVING and ORDER BY on the answer; mixed with linear aggregates
SELECT dx.median(age) + 1 AS next, dx.count(*) AS n, upper(dx.mode(ward)) AS up FROM em_exact HAVING dx.mode(ward) = 'b';
-- clamping: out-of-domain values and NULLs map into the domain before counting (NULL -> first value)
INSERT INTO em_exact SELECT 500, 'zzz', NULL, -4, NULL FROM generate_series(1, 60);
SELECT dx.median(age) AS clamped_median, dx.mode(ward) AS clamped_mode, dx.mode(tag) AS null_tag, dx.median(d) AS null_d FROM em_exact;
DELETE FROM em_exact WHERE age = 500;

-- GROUP BY: every declared group is returned; 'd' has no row and gets a uniform draw
SELECT ward, dx.median(age) AS median, dx.mode(tag) AS tag, dx.count(*) AS n FROM em_exact GROUP BY ward ORDER BY ward;
SELECT ward, percentile_disc(0.5) WITHIN GROUP (ORDER BY age) AS lower, percentile_disc(0.5000001) WITHIN GROUP (ORDER BY age) AS upper,
	mode() WITHIN GROUP (ORDER BY tag) AS tag, count(*) AS n FROM em_exact GROUP BY ward ORDER BY ward;
SELECT tag, ward, dx.mode(ward) = ward AS own_group_is_mode FROM em_exact GROUP BY tag, ward ORDER BY tag, ward LIMIT 4;

-- parallel plans combine the exact per-candidate counts
CREATE TABLE em_par (v int, g text);
INSERT INTO em_par SELECT (i * 7919) % 97, CASE WHEN i % 3 = 0 THEN 'x' ELSE 'y' END FROM generate_series(1, 100001) AS i;
ANALYZE em_par;
SELECT dx.protect_table('em_par', 'Infinity');
SELECT dx.set_column('em_par', 'v', '{"min": 0, "max": 96}', '{"type": "none"}');
SELECT dx.set_column('em_par', 'g', '{"values": ["x", "y"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'em_par', 10);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT dx.quantile(v, 0.3) FROM em_par WHERE g = 'x';
SELECT dx.quantile(v, 0.3) AS parallel_q30, dx.mode(g) AS parallel_mode FROM em_par;
SET max_parallel_workers_per_gather = 0;
SELECT dx.quantile(v, 0.3) AS serial_q30, dx.mode(g) AS serial_mode FROM em_par;
SELECT percentile_disc(0.3) WITHIN GROUP (ORDER BY v) AS native_q30, mode() WITHIN GROUP (ORDER BY g) AS native_mode FROM em_par;
-- no row at all: a uniform draw from the parameters (also in the finalize phase of a parallel plan)
SET max_parallel_workers_per_gather = 2;
SELECT dx.median(v) BETWEEN 0 AND 96 AS in_domain FROM em_par WHERE v > 200;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;

-- a protected table: presence 1, ages on a 5-year grid 10 years apart per unit of epsilon
CREATE TABLE em_prot (age int, ward text, d date, lon float8, lat float8);
INSERT INTO em_prot SELECT 20 + (i * 7) % 60, CASE WHEN i % 7 < 3 THEN 'b' WHEN i % 7 < 5 THEN 'a' ELSE 'c' END,
	date '2024-01-01' + (i * 13) % 120,
	i % 10, i % 7
FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('em_prot', 1);
SELECT dx.set_column('em_prot', 'age', '{"min": 0, "max": 100, "step": 5}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('em_prot', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "per_value", "weights": {"a": 1, "b": 3, "c": 3}}');
SELECT dx.set_column('em_prot', 'd', '{"min": "2024-01-01", "max": "2024-12-31", "step": 7}', '{"type": "absolute", "scale": 30}');
SELECT dx.set_column_group('em_prot', '{lon,lat}', '{"grid": [{"min": 0, "max": 9}, {"min": 0, "max": 6}]}', '{"type": "l2", "scale": 2}');
SELECT dx.grant_budget(current_user::regrole, 'em_prot', 2000);

-- a huge epsilon recovers the true answers (median at the 5-year grid point nearest the data)
SELECT dx.median(age, 500) AS median, dx.mode(ward, 500) AS mode, dx.quantile(age, 0.9, 500) AS q90 FROM em_prot;
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY round(age / 5.0) * 5) AS median, mode() WITHIN GROUP (ORDER BY ward) AS mode,
	percentile_disc(0.9) WITHIN GROUP (ORDER BY round(age / 5.0) * 5) AS q90 FROM em_prot;
-- small epsilons: every answer is a declared value (40 draws each; answer reuse off, so that
-- every run draws and is charged)
SET dxpriv.cache_lifetime = 0;
DO $$
DECLARE a int; w text; dd date; bad int := 0;
BEGIN
	FOR i IN 1..40 LOOP
		SELECT dx.median(age, 0.05), dx.mode(ward, 0.05), dx.quantile(d, 0.2, 0.05) INTO a, w, dd FROM em_prot;
		IF a IS NULL OR a % 5 <> 0 OR a NOT BETWEEN 0 AND 100 OR w NOT IN ('a', 'b', 'c')
		   OR (dd - date '2024-01-01') % 7 <> 0 OR dd NOT BETWEEN date '2024-01-01' AND date '2024-12-31' THEN
			bad := bad + 1;
		END IF;
	END LOOP;
	RAISE NOTICE 'answers outside the declared domains: %', bad;
END $$;
RESET dxpriv.cache_lifetime;
SELECT count(*) AS ledger_rows, sum(epsilon)::numeric(10, 4) AS spent FROM dx.ledger
WHERE relid = 'em_prot'::regclass AND epsilon < 1;
-- answer reuse: the same query again returns the stored choice without a new charge
SELECT dx.mode(ward, 0.3) AS first_mode, dx.quantile(age, 0.25, 0.3) AS first_q25 FROM em_prot;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'em_prot'::regclass;
SELECT dx.mode(ward, 0.3) AS first_mode, dx.quantile(age, 0.25, 0.3) AS first_q25 FROM em_prot;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'em_prot'::regclass;

-- ledger: epsilon = sum of the aggregates' epsilons; one scale 2 S_EM / eps per group
-- median(age): adjacent grid points 5/10 apart -> S_EM = 2, scale 2*2/1 = 4;
-- mode(ward): per_value(1, 3, 3) -> the closest pair is 1 apart, presence 1 -> S_EM = 1, scale 2
SELECT dx.median(age, 1) IS NOT NULL AS median, dx.mode(ward, 1) IS NOT NULL AS mode FROM em_prot;
SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- GROUP BY: a row moving between groups changes two groups' utilities (S_EM 2 for the mode:
-- ward's own edges are 1 apart), so the scale is 2*2/0.5 = 8 for each of the three groups
SELECT ward, dx.mode(ward, 0.5) AS mode_in_group, dx.count(1, 0.2) > 0 AS counted FROM em_prot GROUP BY ward ORDER BY ward;
SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- the parser copies x in "x BETWEEN a AND b": both copies are one release, charged once
-- (S_EM 2 from age's grid, scale 2*2/0.5 = 8 per group)
SELECT ward, dx.median(age, 0.5) BETWEEN 0 AND 100 AS in_domain FROM em_prot GROUP BY ward ORDER BY ward;
SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- GROUP BY with HAVING on a count beside a median (issue 27): the HAVING copy of the count is the
-- SELECT's release (one draw: every shown count passes the HAVING test), charged once for 0.2 + 0.5
CREATE TEMP TABLE em_having AS SELECT ward, dx.count(1, 0.2) AS n, dx.median(age, 0.5) AS m FROM em_prot
	GROUP BY ward HAVING dx.count(1, 0.2) > 1;
SELECT bool_and(n > 1) AS having_holds, bool_and(m BETWEEN 0 AND 100) AS in_domain FROM em_having;
SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT ward, dx.count(*) AS n, dx.median(age) AS median FROM em_exact GROUP BY ward HAVING dx.count(*) > 0 ORDER BY ward;
-- WHERE on the location group: the candidate column and the location are both in S_EM's universe
SELECT dx.median(age, 1) BETWEEN 0 AND 100 AS in_domain FROM em_prot WHERE lon < 5;
SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- dx.explain: exponential-mechanism cells report the ledger's scale and the Theorem 4 bound
-- (ln K + ln 20) / beta on the utility loss at 95% (rows); no plain-DP comparison
SELECT cell, aggregate, kind, group_key, component, epsilon, noise_scale, round(ci95_half_width::numeric, 3) AS ci95,
	plain_dp_scale, improvement_factor, query_epsilon
FROM dx.explain('SELECT dx.count(*), dx.median(age, 1), dx.mode(ward, 0.5) FROM em_prot') ORDER BY cell;
CREATE TEMP TABLE em_announced AS
	SELECT array_agg(noise_scale ORDER BY cell) AS scales
	FROM dx.explain('SELECT ward, dx.quantile(age, 0.75, 0.5), dx.count(*) FROM em_prot GROUP BY ward');
SELECT ward, dx.quantile(age, 0.75, 0.5) IS NOT NULL AS q, dx.count(*) IS NOT NULL AS c FROM em_prot GROUP BY ward ORDER BY ward;
SELECT (SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1) = (SELECT scales FROM em_announced) AS explain_matches_ledger;
SELECT kind, group_key, noise_scale FROM dx.explain('SELECT dx.median(age) FROM em_exact');

-- analysts can use them too
CREATE ROLE dx_regress_em LOGIN;
GRANT SELECT ON em_prot TO dx_regress_em;
SELECT dx.add_analyst('dx_regress_em');
SELECT dx.grant_budget('dx_regress_em', 'em_prot', 5);
SET ROLE dx_regress_em;
SELECT dx.median(age, 0.5) BETWEEN 0 AND 100 AS analyst_median FROM em_prot;
SELECT dx._em_select(1, 0, ARRAY[1.0]::float8[]) FROM em_prot;
RESET ROLE;

-- rejected, each with an errcode and a hint
SELECT dx.mode(age + 1) FROM em_prot;
SELECT dx.median(age::numeric) FROM em_prot;
SELECT dx.quantile(ward, 0.5) FROM em_prot;
SELECT dx.median(ward) FROM em_prot;
SELECT dx.mode(lon) FROM em_prot;
SELECT dx.median(lat) FROM em_prot;
SELECT dx.mode(note) FROM people;
SELECT dx.quantile(age, 1.5) FROM em_prot;
SELECT dx.quantile(age, -0.1) FROM em_prot;
SELECT dx.quantile(age, NULL) FROM em_prot;
SELECT dx.quantile(age, age / 100.0) FROM em_prot;
SELECT dx.quantile(age, random()) FROM em_prot;
SELECT dx.mode(ward, 0) FROM em_prot;
SELECT dx.median(age, -1) FROM em_prot;
SELECT dx.quantile(age, 0.5, 'Infinity') FROM em_prot;
SELECT dx.mode(ward, NULL) FROM em_prot;
SELECT dx.mode(DISTINCT ward) FROM em_prot;
SELECT dx.median(age ORDER BY age) FROM em_prot;
SELECT dx.mode(ward) FILTER (WHERE random() > 0.5) FROM em_prot;
SELECT dx.mode(ward) OVER () FROM em_prot;
SELECT dx.median(age, 5000) FROM em_prot;
PREPARE em_p(float8) AS SELECT dx.quantile(age, $1) FROM em_prot;
EXECUTE em_p(1.5);
DEALLOCATE em_p;
SELECT dx.mode(x) FROM (VALUES (1), (2)) AS v(x);
SELECT dx.mode(ward) FROM em_exact, em_prot;
CREATE VIEW em_view AS SELECT dx.mode(ward) FROM em_prot;
SELECT dx._em_select(1, 0, ARRAY[1.0]::float8[]) FROM em_prot;
CREATE TABLE em_wide (x int, g int);
SELECT dx.protect_table('em_wide');
SELECT dx.set_column('em_wide', 'x', '{"min": 0, "max": 499999}', '{"type": "discrete"}');
SELECT dx.set_column('em_wide', 'g', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'em_wide', 1);
SELECT g, dx.mode(x) FROM em_wide GROUP BY g;
SELECT dx.mode(x) IS NOT NULL AS one_group_is_fine FROM em_wide;
RESET dxpriv.test_seed;
