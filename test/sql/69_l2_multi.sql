-- l2 domains with several varying cells by the pair tree's row searches (issue 23, l2multi): over one
-- points column with an l1, l2 or linf metric and at least 2,048 points, a statement whose cells vary
-- two or more over the points (two sums, an average next to a FILTERed count, five aggregates) is
-- planned by constraint generation whose separation oracle is a dual k-d tree search for the pairs
-- of largest rating (core/pair_tree.h, PairSearch) instead of passes over every pair;
-- dxpriv.exhaustive_analysis builds the stored set of every pair. On 2,101 points (with a
-- near-duplicate) both give the same plan: every dx.explain row, and the same noisy answers under one
-- test seed. On 12,000 points (7.2e7 pairs) the stored set is refused before any evaluation, and the
-- tree plans the statements.
CREATE TABLE lm_t (id int, lon float8, lat float8);
CREATE TEMP TABLE lm_pts AS
	SELECT p AS id, round((-124.7 + 57.7 * ((p * 7919) % 2111) / 2111.0)::numeric, 4)::float8 AS lon,
		round((25.1 + 24.3 * ((p * 104729) % 2099) / 2099.0)::numeric, 4)::float8 AS lat
	FROM generate_series(0, 2099) AS p;
-- a near-duplicate of point 0, 1e-6 away
INSERT INTO lm_pts SELECT 2100, lon + 0.000001, lat FROM lm_pts WHERE id = 0;
INSERT INTO lm_t SELECT i, p.lon, p.lat FROM generate_series(1, 8400) AS i JOIN lm_pts p ON p.id = i % 2101;
SELECT dx.protect_table('lm_t');
SELECT dx.set_column_group('lm_t', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lm_pts),
	'{"type": "l2", "scale": 1}');
CREATE TABLE lm_l1 AS SELECT * FROM lm_t;
CREATE TABLE lm_inf AS SELECT * FROM lm_t;
SELECT dx.protect_table('lm_l1');
SELECT dx.protect_table('lm_inf', 'Infinity');
SELECT dx.set_column_group('lm_l1', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lm_pts),
	'{"type": "l1", "scale": 2}');
SELECT dx.set_column_group('lm_inf', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lm_pts),
	'{"type": "linf", "scale": 0.5}');
-- 12,000 points on a grid of 0.01 degrees (refused on 0.2.0 before this change, after evaluation)
CREATE TABLE lm_big (id int, lon float8, lat float8);
INSERT INTO lm_big SELECT g, -100 + (g % 120) * 0.01, 30 + (g / 120) * 0.01 FROM generate_series(0, 11999) AS g;
SELECT dx.protect_table('lm_big');
SELECT dx.set_column_group('lm_big', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lm_big),
	'{"type": "l2", "scale": 1}');
CREATE ROLE dx_regress_l2multi;
SELECT dx.add_analyst('dx_regress_l2multi');
SELECT dx.grant_budget('dx_regress_l2multi', t, 1000) IS NOT NULL AS granted
FROM unnest('{lm_t,lm_l1,lm_inf,lm_big}'::text[]) t;

-- two or more varying cells: two sums, an average with a FILTERed count, five aggregates, a weight
-- spike at the near-duplicate next to a sum, huge weights with WHERE keeping the two close points,
-- l1 averages, linf in the bounded model (the count exact)
CREATE TEMP TABLE lm_q (id int, q text);
INSERT INTO lm_q VALUES
	(1, 'SELECT sum(lat), sum(lon) FROM lm_t'),
	(2, 'SELECT avg(lat), count(*) FILTER (WHERE lon < -100) FROM lm_t'),
	(3, 'SELECT count(*), count(*) FILTER (WHERE lat > 40), sum(lat), avg(lon), count(*) FILTER (WHERE lon < -100) FROM lm_t'),
	(4, 'SELECT sum(CASE WHEN lon > -124.6999995 AND lon < -124.699998 THEN 1000 ELSE 0 END), sum(lat) FROM lm_t'),
	(5, 'SELECT avg(lat * 1e9), avg(lon) FROM lm_t WHERE lon < -124.69'),
	(6, 'SELECT avg(lon), avg(lat) FROM lm_l1'),
	(7, 'SELECT sum(lat), sum(least(greatest(lon, -110), -90)), count(*) FROM lm_inf');
GRANT SELECT ON lm_q TO dx_regress_l2multi;

CREATE TEMP TABLE lm_plan (path text, strategy text, id int, cell int, aggregate int, component text,
	epsilon float8, noise_scale float8, ci95_half_width float8, plain_dp_scale float8);
GRANT INSERT ON lm_plan TO dx_regress_l2multi;
CREATE FUNCTION pg_temp.plans(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT id, q FROM lm_q ORDER BY id LOOP
		INSERT INTO lm_plan SELECT path, current_setting('dxpriv.allocation'), r.id, e.cell, e.aggregate,
			e.component, e.epsilon, e.noise_scale, e.ci95_half_width, e.plain_dp_scale
		FROM dx.explain(r.q) e;
	END LOOP;
END $$;
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_l2multi;
SELECT pg_temp.plans('tree');
RESET ROLE;
SET dxpriv.allocation = 'algorithm3';
SET ROLE dx_regress_l2multi;
SELECT pg_temp.plans('tree');
RESET ROLE;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2multi;
SELECT pg_temp.plans('exhaustive');
RESET ROLE;
RESET dxpriv.allocation;
SET ROLE dx_regress_l2multi;
SELECT pg_temp.plans('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
-- rows per query, and rows that differ between the two paths (bit for bit: none)
SELECT id, strategy, count(*) FILTER (WHERE path = 'tree') AS tree_rows,
	count(*) FILTER (WHERE path = 'exhaustive') AS exhaustive_rows
FROM lm_plan GROUP BY id, strategy ORDER BY id, strategy;
SELECT strategy, id, cell, component FROM (
	(SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lm_plan WHERE path = 'tree'
	 EXCEPT ALL
	 SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lm_plan WHERE path = 'exhaustive')
	UNION ALL
	(SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lm_plan WHERE path = 'exhaustive'
	 EXCEPT ALL
	 SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lm_plan WHERE path = 'tree')) diff ORDER BY 1, 2, 3, 4;
-- the noise scales (rounded), algorithm3
SELECT id, cell, component, round(noise_scale::numeric, 6) AS noise_scale
FROM lm_plan WHERE path = 'tree' AND strategy = 'algorithm3' ORDER BY id, cell;

-- the same noisy answers under the same seed (answer cache off: two charged releases)
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 6969;
SET ROLE dx_regress_l2multi;
SELECT avg(lat) AS a, count(*) FILTER (WHERE lon < -100) AS c FROM lm_t \gset tree_
RESET ROLE;
SET dxpriv.test_seed = 6969;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2multi;
SELECT avg(lat) AS a, count(*) FILTER (WHERE lon < -100) AS c FROM lm_t \gset ref_
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
SELECT :'tree_a' = :'ref_a' AND :'tree_c' = :'ref_c' AS same_answers;
SELECT count(*) AS releases FROM dx.ledger WHERE role = 'dx_regress_l2multi'::regrole;

-- 12,000 points: the stored set of every pair is refused before any evaluation, with its numbers
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2multi;
SELECT * FROM dx.explain('SELECT sum(lat), sum(lon) FROM lm_big');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
-- and the tree plans them: two sums (the presence rows bind: |lon| about 100, |lat| about 31) and five
-- aggregates
SET ROLE dx_regress_l2multi;
SELECT cell, component, round(noise_scale::numeric, 6) AS noise_scale
FROM dx.explain('SELECT sum(lat), sum(lon) FROM lm_big') ORDER BY cell;
SELECT cell, component, round(noise_scale::numeric, 6) AS noise_scale
FROM dx.explain('SELECT count(*), count(*) FILTER (WHERE lat > 30.5), sum(lat), avg(lon), count(*) FILTER (WHERE lon < -99.5) FROM lm_big')
ORDER BY cell;
SELECT count(*) AS cells FROM dx.explain('SELECT sum(lat), sum(lon) FROM lm_big');
RESET ROLE;
RESET dxpriv.epsilon;
