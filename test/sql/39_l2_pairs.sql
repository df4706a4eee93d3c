-- l2 location domains (issue 23): a query of several cells over one points column with an l1, l2 or
-- linf metric is planned by constraint generation over all pairs of points (allocation on a
-- working set, every pair rated against the scales, violated pairs added, a final check over every
-- row); dxpriv.exhaustive_analysis builds and allocates over the stored set of every pair row. Here
-- both give the same plan bit for bit: every dx.explain row, and the same noisy answers under one
-- test seed.
CREATE TABLE lp_t (id int, lon float8, lat float8);
CREATE TEMP TABLE lp_pts AS
	SELECT p AS id, round((-124.7 + 57.7 * ((p * 7919) % 1000) / 1000.0)::numeric, 4)::float8 AS lon,
		round((25.1 + 24.3 * ((p * 104729) % 997) / 997.0)::numeric, 4)::float8 AS lat
	FROM generate_series(0, 299) AS p;
INSERT INTO lp_t SELECT i, p.lon, p.lat FROM generate_series(1, 3000) AS i JOIN lp_pts p ON p.id = i % 300;
SELECT dx.protect_table('lp_t');
SELECT dx.set_column_group('lp_t', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lp_pts),
	'{"type": "l2", "scale": 1}');
-- the same points under l1 and linf
CREATE TABLE lp_l1 AS SELECT * FROM lp_t;
CREATE TABLE lp_inf AS SELECT * FROM lp_t;
SELECT dx.protect_table('lp_l1');
SELECT dx.protect_table('lp_inf');
SELECT dx.set_column_group('lp_l1', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lp_pts),
	'{"type": "l1", "scale": 2}');
SELECT dx.set_column_group('lp_inf', '{lon,lat}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(lon, lat) ORDER BY id)) FROM lp_pts),
	'{"type": "linf", "scale": 0.5}');
CREATE ROLE dx_regress_l2;
SELECT dx.add_analyst('dx_regress_l2');
SELECT dx.grant_budget('dx_regress_l2', t, 1000) IS NOT NULL AS granted FROM unnest('{lp_t,lp_l1,lp_inf}'::text[]) t;

-- the queries compared: the benchmark's five aggregates, averages (estimates), CASE and clamped
-- weights, huge weights, FILTERs on both coordinates, WHERE, l1 and linf
CREATE TEMP TABLE lp_q (id int, q text);
INSERT INTO lp_q VALUES
	(1, 'SELECT count(*), count(*) FILTER (WHERE lat > 40), sum(lat), avg(lon), count(*) FILTER (WHERE lon < -100) FROM lp_t'),
	(2, 'SELECT avg(lat), avg(lon) FROM lp_t'),
	(3, 'SELECT sum(CASE WHEN lat > 35 THEN lon ELSE 0 END), count(*) FILTER (WHERE lat > 35) FROM lp_t'),
	(4, 'SELECT sum(least(greatest(lat, 30), 45)), sum(lon * 1e9), count(*) FROM lp_t'),
	(5, 'SELECT sum(lat), sum(lon) FROM lp_t WHERE lat < 40 AND lon > -110'),
	(6, 'SELECT count(*), sum(lat), avg(lon) FROM lp_l1'),
	(7, 'SELECT count(*) FILTER (WHERE lat > 30), sum(lat), avg(lon) FROM lp_inf');
GRANT SELECT ON lp_q TO dx_regress_l2;

CREATE TEMP TABLE lp_plan (path text, strategy text, id int, cell int, aggregate int, component text,
	epsilon float8, noise_scale float8, ci95_half_width float8, plain_dp_scale float8);
GRANT INSERT ON lp_plan TO dx_regress_l2;
CREATE FUNCTION pg_temp.plans(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT id, q FROM lp_q ORDER BY id LOOP
		INSERT INTO lp_plan SELECT path, current_setting('dxpriv.allocation'), r.id, e.cell, e.aggregate,
			e.component, e.epsilon, e.noise_scale, e.ci95_half_width, e.plain_dp_scale
		FROM dx.explain(r.q) e;
	END LOOP;
END $$;
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_l2;
SELECT pg_temp.plans('generated');
SET dxpriv.allocation = 'algorithm3';
SELECT pg_temp.plans('generated');
RESET dxpriv.allocation;
RESET ROLE;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2;
SELECT pg_temp.plans('exhaustive');
SET dxpriv.allocation = 'algorithm3';
SELECT pg_temp.plans('exhaustive');
RESET dxpriv.allocation;
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
-- rows per query, and rows that differ between the two paths (bit for bit: none)
SELECT id, strategy, count(*) FILTER (WHERE path = 'generated') AS generated_rows,
	count(*) FILTER (WHERE path = 'exhaustive') AS exhaustive_rows
FROM lp_plan GROUP BY id, strategy ORDER BY id, strategy;
SELECT strategy, id, cell, component FROM (
	(SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lp_plan WHERE path = 'generated'
	 EXCEPT ALL
	 SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lp_plan WHERE path = 'exhaustive')
	UNION ALL
	(SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lp_plan WHERE path = 'exhaustive'
	 EXCEPT ALL
	 SELECT strategy, id, cell, aggregate, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM lp_plan WHERE path = 'generated')) diff ORDER BY 1, 2, 3, 4;
-- every query has noise on a cell that changes between points (not a comparison of exact answers)
SELECT id, bool_or(noise_scale > 0) AS noisy, count(DISTINCT epsilon) > 0 AS planned
FROM lp_plan WHERE path = 'generated' GROUP BY id ORDER BY id;

-- the same noisy answers under the same seed (answer cache off: two charged releases)
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 3939;
SET ROLE dx_regress_l2;
SELECT count(*) AS c, count(*) FILTER (WHERE lat > 40) AS f, sum(lat) AS s, avg(lon) AS a FROM lp_t \gset gen_
RESET ROLE;
SET dxpriv.test_seed = 3939;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2;
SELECT count(*) AS c, count(*) FILTER (WHERE lat > 40) AS f, sum(lat) AS s, avg(lon) AS a FROM lp_t \gset ref_
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
SELECT :'gen_c' = :'ref_c' AND :'gen_f' = :'ref_f' AND :'gen_s' = :'ref_s' AND :'gen_a' = :'ref_a' AS same_answers;
SELECT count(*) AS releases FROM dx.ledger WHERE role = 'dx_regress_l2'::regrole;
