-- Fast analysis (issue 23): the privacy constraints of a query of at most 16 cells are built from
-- rows computed directly from the weights and assembled only at their breakpoints; the
-- superuser-only dxpriv.exhaustive_analysis builds them through the per-point reference paths.
-- Both must give exactly the same plan: every dx.explain row (epsilon shares, scales, error bars,
-- baselines) and, with the same test seed, the same noisy answers.
CREATE TABLE fa_t (x int, y int, d numeric, g text, lon float8, lat float8);
INSERT INTO fa_t SELECT i % 2001, i % 21, (i % 41) * 0.25, (ARRAY['a', 'b', 'c'])[1 + i % 3],
	(ARRAY[0, 1, 3, 4.5, 7])[1 + i % 5], (ARRAY[0, 2, 1, 5.5, 3])[1 + i % 5]
FROM generate_series(1, 4000) AS i;
SELECT dx.protect_table('fa_t');
SELECT dx.set_column('fa_t', 'x', '{"min": 0, "max": 2000}', '{"type": "absolute", "scale": 100}');
SELECT dx.set_column('fa_t', 'y', '{"min": 0, "max": 20}', '{"type": "absolute", "scale": 3}');
SELECT dx.set_column('fa_t', 'd', '{"min": 0, "max": 10, "step": 0.25}', '{"type": "absolute", "scale": 0.5}');
SELECT dx.set_column('fa_t', 'g', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column_group('fa_t', '{lon,lat}', '{"points": [[0, 0], [1, 2], [3, 1], [4.5, 5.5], [7, 3]]}',
	'{"type": "l2", "scale": 2}');
CREATE ROLE dx_regress_fast;
SELECT dx.add_analyst('dx_regress_fast');
SELECT dx.grant_budget('dx_regress_fast', 'fa_t', 1000) IS NOT NULL AS granted;

-- only superusers choose the path
SET ROLE dx_regress_fast;
SELECT err('SET dxpriv.exhaustive_analysis = on');
RESET ROLE;

-- the queries compared: sums, counts and averages over one line, FILTER ranges, clamps, slopes,
-- WHERE ranges, two columns, a decimal step, a discrete column, GROUP BY, an l2 location group
CREATE TEMP TABLE fa_q (id int, q text);
INSERT INTO fa_q VALUES
	(1, 'SELECT avg(x) FROM fa_t'),
	(2, 'SELECT count(*), sum(x), avg(x), count(*) FILTER (WHERE x > 500), sum(x) FILTER (WHERE x < 200) FROM fa_t'),
	(3, 'SELECT sum(least(greatest(x, 100), 1500)), avg(x) FROM fa_t WHERE x BETWEEN 50 AND 1900'),
	(4, 'SELECT sum(CASE WHEN x < 700 THEN 2 * x ELSE 2100 - x END), count(*) FROM fa_t'),
	(5, 'SELECT sum(x * y), avg(y), count(*) FILTER (WHERE y > 4) FROM fa_t WHERE x < 300'),
	(6, 'SELECT sum(d), avg(d), count(*) FILTER (WHERE d >= 2.5) FROM fa_t'),
	(7, 'SELECT g, count(*), sum(y) FROM fa_t GROUP BY g'),
	(8, 'SELECT count(*), count(*) FILTER (WHERE lat > 2), sum(lat), avg(lon) FROM fa_t'),
	(9, 'SELECT y, count(*), avg(x) FROM fa_t WHERE x < 50 GROUP BY y');
GRANT SELECT ON fa_q TO dx_regress_fast;

CREATE TEMP TABLE fa_plan (path text, id int, cell int, aggregate int, group_key text, component text,
	epsilon float8, noise_scale float8, ci95_half_width float8, plain_dp_scale float8);
GRANT INSERT ON fa_plan TO dx_regress_fast;
CREATE FUNCTION pg_temp.plans(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT id, q FROM fa_q ORDER BY id LOOP
		INSERT INTO fa_plan SELECT path, r.id, e.cell, e.aggregate, e.group_key, e.component, e.epsilon,
			e.noise_scale, e.ci95_half_width, e.plain_dp_scale
		FROM dx.explain(r.q) e;
	END LOOP;
END $$;
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_fast;
SELECT pg_temp.plans('fast');
RESET ROLE;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_fast;
SELECT pg_temp.plans('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
-- rows per query, and rows that differ between the two paths (bit for bit: none)
SELECT id, count(*) FILTER (WHERE path = 'fast') AS fast_rows,
	count(*) FILTER (WHERE path = 'exhaustive') AS exhaustive_rows
FROM fa_plan GROUP BY id ORDER BY id;
SELECT id, cell, component FROM (
	(SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM fa_plan WHERE path = 'fast'
	 EXCEPT ALL
	 SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM fa_plan WHERE path = 'exhaustive')
	UNION ALL
	(SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM fa_plan WHERE path = 'exhaustive'
	 EXCEPT ALL
	 SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM fa_plan WHERE path = 'fast')) diff ORDER BY 1, 2, 3;
-- every query has noise (the comparison is not between exact answers)
SELECT id, bool_and(noise_scale > 0) FILTER (WHERE component <> 'average (x count)') AS noisy
FROM fa_plan WHERE path = 'fast' GROUP BY id ORDER BY id;

-- the same noisy answers under the same seed (answer cache off: two charged releases)
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 4747;
SET ROLE dx_regress_fast;
SELECT count(*) AS c, sum(x) AS s, avg(x) AS a, count(*) FILTER (WHERE x > 500) AS f FROM fa_t \gset fast_
RESET ROLE;
SET dxpriv.test_seed = 4747;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_fast;
SELECT count(*) AS c, sum(x) AS s, avg(x) AS a, count(*) FILTER (WHERE x > 500) AS f FROM fa_t \gset slow_
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
SELECT :'fast_c' = :'slow_c' AND :'fast_s' = :'slow_s' AND :'fast_a' = :'slow_a' AND :'fast_f' = :'slow_f'
	AS same_answers;
SELECT count(*) AS releases, sum(epsilon) AS epsilon FROM dx.ledger WHERE role = 'dx_regress_fast'::regrole;
