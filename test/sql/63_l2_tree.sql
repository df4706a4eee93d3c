-- l2 domains by the pair tree (issue 23, l2tree): over one points column with an l1, l2 or linf
-- metric and at least 2,048 points (here 2,101), a statement whose cells vary at most one over the points (a
-- sum, an average's sum next to its constant count, a sum with a count) takes that cell's largest
-- change per unit of distance from a dual k-d tree branch and bound (core/pair_tree.h) instead of
-- rating every pair; dxpriv.exhaustive_analysis rates every pair. Both give the same plan bit for
-- bit: every dx.explain row, and the same noisy answers under one test seed.
CREATE TABLE lt_t (id int, lon float8, lat float8);
CREATE TEMP TABLE lt_pts AS
	SELECT p AS id, round((-124.7 + 57.7 * ((p * 7919) % 2111) / 2111.0)::numeric, 4)::float8 AS lon,
		round((25.1 + 24.3 * ((p * 104729) % 2099) / 2099.0)::numeric, 4)::float8 AS lat
	FROM generate_series(0, 2099) AS p;
-- a near-duplicate of point 0, 1e-6 away
INSERT INTO lt_pts SELECT 2100, lon + 0.000001, lat FROM lt_pts WHERE id = 0;
INSERT INTO lt_t SELECT i, p.lon, p.lat FROM generate_series(1, 8400) AS i JOIN lt_pts p ON p.id = i % 2101;
SELECT dx.protect_table('lt_t');
SELECT dx.set_column_group('lt_t', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lt_pts),
	'{"type": "l2", "scale": 1}');
CREATE TABLE lt_l1 AS SELECT * FROM lt_t;
CREATE TABLE lt_inf AS SELECT * FROM lt_t;
SELECT dx.protect_table('lt_l1');
SELECT dx.protect_table('lt_inf', 'Infinity');
SELECT dx.set_column_group('lt_l1', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lt_pts),
	'{"type": "l1", "scale": 2}');
SELECT dx.set_column_group('lt_inf', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lt_pts),
	'{"type": "linf", "scale": 0.5}');
CREATE ROLE dx_regress_l2tree;
SELECT dx.add_analyst('dx_regress_l2tree');
SELECT dx.grant_budget('dx_regress_l2tree', t, 1000) IS NOT NULL AS granted FROM unnest('{lt_t,lt_l1,lt_inf}'::text[]) t;

-- one varying cell: averages, sums, a clamp with a count, a weight spike at the near-duplicate,
-- huge weights, WHERE keeping the two close points; l1; linf in the bounded model (count exact)
CREATE TEMP TABLE lt_q (id int, q text);
INSERT INTO lt_q VALUES
	(1, 'SELECT avg(lat) FROM lt_t'),
	(2, 'SELECT sum(lon) FROM lt_t'),
	(3, 'SELECT sum(least(greatest(lat, 30), 45)), count(*) FROM lt_t'),
	(4, 'SELECT sum(CASE WHEN lon > -124.6999995 AND lon < -124.699998 THEN 1000 ELSE 0 END), count(*) FROM lt_t'),
	(5, 'SELECT avg(lat * 1e9) FROM lt_t WHERE lon < -124.69'),
	(6, 'SELECT avg(lon) FROM lt_l1'),
	(7, 'SELECT avg(lat), count(*) FROM lt_inf');
GRANT SELECT ON lt_q TO dx_regress_l2tree;

CREATE TEMP TABLE lt_plan (path text, strategy text, id int, cell int, aggregate int, component text,
	epsilon float8, noise_scale float8, ci95_half_width float8, plain_dp_scale float8);
GRANT INSERT ON lt_plan TO dx_regress_l2tree;
CREATE FUNCTION pg_temp.plans(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT id, q FROM lt_q ORDER BY id LOOP
		INSERT INTO lt_plan SELECT path, current_setting('dxpriv.allocation'), r.id, e.cell, e.aggregate,
			e.component, e.epsilon, e.noise_scale, e.ci95_half_width, e.plain_dp_scale
		FROM dx.explain(r.q) e;
	END LOOP;
END $$;
SET dxpriv.epsilon = 0.5;
SET dxpriv.allocation = 'algorithm3';
SET ROLE dx_regress_l2tree;
SELECT pg_temp.plans('tree');
RESET ROLE;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2tree;
SELECT pg_temp.plans('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.allocation;
-- rows per query, and rows that differ between the two paths (bit for bit: none)
SELECT id, strategy, count(*) FILTER (WHERE path = 'tree') AS tree_rows,
	count(*) FILTER (WHERE path = 'exhaustive') AS exhaustive_rows
FROM lt_plan GROUP BY id, strategy ORDER BY id, strategy;
SELECT strategy, id, cell, component FROM (
	(SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lt_plan WHERE path = 'tree'
	 EXCEPT ALL
	 SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lt_plan WHERE path = 'exhaustive')
	UNION ALL
	(SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lt_plan WHERE path = 'exhaustive'
	 EXCEPT ALL
	 SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lt_plan WHERE path = 'tree')) diff ORDER BY 1, 2, 3, 4;
-- the noise scales (rounded): the spike's cell and the sum of lon are set by pairs of points
SELECT id, cell, component, round(noise_scale::numeric, 6) AS noise_scale
FROM lt_plan WHERE path = 'tree' ORDER BY id, cell;

-- the same noisy answers under the same seed (answer cache off: two charged releases)
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 6363;
SET ROLE dx_regress_l2tree;
SELECT avg(lat) AS a, sum(lon) AS s FROM lt_t \gset tree_
SELECT sum(CASE WHEN lon > -124.6999995 AND lon < -124.699998 THEN 1000 ELSE 0 END) AS k FROM lt_t \gset tree_
RESET ROLE;
SET dxpriv.test_seed = 6363;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2tree;
SELECT avg(lat) AS a, sum(lon) AS s FROM lt_t \gset ref_
SELECT sum(CASE WHEN lon > -124.6999995 AND lon < -124.699998 THEN 1000 ELSE 0 END) AS k FROM lt_t \gset ref_
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
SELECT :'tree_a' = :'ref_a' AND :'tree_s' = :'ref_s' AND :'tree_k' = :'ref_k' AS same_answers;
SELECT count(*) AS releases FROM dx.ledger WHERE role = 'dx_regress_l2tree'::regrole;
