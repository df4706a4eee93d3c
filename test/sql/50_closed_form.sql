-- Closed-form analysis (issue 23): a count, sum or avg over one integer column whose WHERE and
-- FILTERs are ranges of it is analysed from its breakpoints (planner/line_release.h, core/line_form.h)
-- without evaluating the declared points, and its per-point tables are stored by pieces. The
-- superuser-only dxpriv.exhaustive_analysis evaluates every point. Both must give exactly the same
-- plan (every dx.explain row) and, under one test seed, the same noisy answers; shapes outside the
-- closed form (OR, NOT, <>, CASE, other columns, GROUP BY) are evaluated point by point
-- either way. Grouped statements (21-27, table cf_g: a group column with no metric, a discrete one,
-- an absolute one, two keys, an expression key, HAVING) are evaluated point by point on both paths
-- today; they pin the plans and answers a grouped closed form must reproduce.
CREATE TABLE cf_t (x int, b bigint, v smallint, k int, kd int, p int, y int);
INSERT INTO cf_t SELECT i % 2001, i % 501, (i % 201) * 5 - 500, i % 100000, i % 5000, i % 11, i % 7
FROM generate_series(1, 6000) AS i;
SELECT dx.protect_table('cf_t');
SELECT dx.set_column('cf_t', 'x', '{"min": 0, "max": 2000}', '{"type": "absolute", "scale": 100}');
SELECT dx.set_column('cf_t', 'b', '{"min": 0, "max": 500}', '{"type": "absolute", "scale": 7}');
SELECT dx.set_column('cf_t', 'v', '{"min": -500, "max": 500, "step": 5}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('cf_t', 'k', '{"min": 0, "max": 99999}', '{"type": "none"}');
SELECT dx.set_column('cf_t', 'kd', '{"min": 0, "max": 4999}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('cf_t', 'p', '{"min": 0, "max": 10}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('cf_t', 'y', '{"min": 0, "max": 6}', '{"type": "absolute", "scale": 1}');
CREATE TABLE cf_g (g int, gd int, ga int, q int);
INSERT INTO cf_g SELECT i % 5, (i / 5) % 4, (i / 20) % 3, (i * 7) % 61 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('cf_g');
SELECT dx.set_column('cf_g', 'g', '{"min": 0, "max": 4}', '{"type": "none"}');
SELECT dx.set_column('cf_g', 'gd', '{"min": 0, "max": 3}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('cf_g', 'ga', '{"min": 0, "max": 2}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('cf_g', 'q', '{"min": 0, "max": 60}', '{"type": "absolute", "scale": 5}');
CREATE ROLE dx_regress_closed;
SELECT dx.add_analyst('dx_regress_closed');
SELECT dx.grant_budget('dx_regress_closed', 'cf_t', 1000) IS NOT NULL AS granted;
SELECT dx.grant_budget('dx_regress_closed', 'cf_g', 1000) IS NOT NULL AS granted;

-- closed form: 1-12 (10, 11: empty ranges, whose tables are constants; 18: analysed by pieces,
-- planned on the points: a discrete metric with two
-- cells); point by point (outside the shape): 13-17, 19, 20; grouped (point by point): 21-27
CREATE TEMP TABLE cf_q (id int, q text);
INSERT INTO cf_q VALUES
	(1, 'SELECT avg(x) FROM cf_t'),
	(2, 'SELECT count(*), sum(x), avg(x), count(*) FILTER (WHERE x > 500), sum(x) FILTER (WHERE x < 200) FROM cf_t'),
	(3, 'SELECT sum(x), avg(x) FROM cf_t WHERE x BETWEEN 50 AND 1900'),
	(4, 'SELECT count(*) FROM cf_t WHERE x = 5'),
	(5, 'SELECT count(*), sum(x) FROM cf_t WHERE 100 <= x AND x < 300 AND x >= 150'),
	(6, 'SELECT count(*) FROM cf_t WHERE k = 5'),
	(7, 'SELECT count(*) FROM cf_t WHERE kd = 17'),
	(8, 'SELECT count(*), sum(b), avg(b) FROM cf_t WHERE b >= 10 AND b < 400'),
	(9, 'SELECT sum(v), avg(v), count(*) FILTER (WHERE v > -100) FROM cf_t WHERE v < 300'),
	(10, 'SELECT count(*), sum(x) FROM cf_t WHERE x > 5000'),
	(11, 'SELECT sum(v) FROM cf_t WHERE v = 3'),
	(12, 'SELECT dx.linear(x), count(*) FILTER (WHERE x <= 0) FROM cf_t'),
	(13, 'SELECT count(*) FROM cf_t WHERE x < 100 OR x > 1900'),
	(14, 'SELECT sum(x) FROM cf_t WHERE NOT (x > 100)'),
	(15, 'SELECT count(*) FROM cf_t WHERE x <> 7'),
	(16, 'SELECT sum(CASE WHEN x < 10 THEN -x ELSE x END) FROM cf_t'),
	(17, 'SELECT sum(x - 1000), count(x) FROM cf_t'),
	(18, 'SELECT count(*), sum(p) FROM cf_t WHERE p > 3'),
	(19, 'SELECT sum(x), count(*) FROM cf_t WHERE y < 3'),
	(20, 'SELECT y, count(*), sum(y) FROM cf_t WHERE y > 1 GROUP BY y'),
	(21, 'SELECT g, count(*), avg(q) FROM cf_g GROUP BY g'),
	(22, 'SELECT g, count(*), sum(q), avg(q) FROM cf_g WHERE q > 10 GROUP BY g'),
	(23, 'SELECT gd, count(*), avg(q) FROM cf_g GROUP BY gd'),
	(24, 'SELECT ga, sum(q) FROM cf_g GROUP BY ga'),
	(25, 'SELECT g, gd, count(*), sum(q) FROM cf_g GROUP BY g, gd'),
	(26, 'SELECT q / 20, count(*), sum(q) FROM cf_g GROUP BY q / 20'),
	(27, 'SELECT g, count(*), avg(q) FROM cf_g GROUP BY g HAVING count(*) > 100');
GRANT SELECT ON cf_q TO dx_regress_closed;

-- whether the rewritten statement stores its tables by pieces (layout 24, core/point_table.h; the
-- one-pass aggregates keep their tables in direct arguments, which EXPLAIN does not show)
CREATE FUNCTION pg_temp.by_pieces(q text) RETURNS bool LANGUAGE plpgsql AS $$
DECLARE line text; found bool := false;
BEGIN
	PERFORM set_config('dxpriv.one_pass', 'off', true);
	FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || replace(replace(replace(q, 'count(', 'dx.count('),
		'sum(', 'dx.sum('), 'avg(', 'dx.avg(') LOOP
		found := found OR position('\x50011800' IN line) > 0;
	END LOOP;
	RETURN found;
END $$;
SELECT id, pg_temp.by_pieces(q) AS by_pieces FROM cf_q ORDER BY id;

CREATE TEMP TABLE cf_plan (path text, id int, cell int, aggregate int, group_key text, component text,
	epsilon float8, noise_scale float8, ci95_half_width float8, plain_dp_scale float8);
GRANT INSERT ON cf_plan TO dx_regress_closed;
CREATE FUNCTION pg_temp.plans(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT id, q FROM cf_q ORDER BY id LOOP
		INSERT INTO cf_plan SELECT path, r.id, e.cell, e.aggregate, e.group_key, e.component, e.epsilon,
			e.noise_scale, e.ci95_half_width, e.plain_dp_scale
		FROM dx.explain(r.q) e;
	END LOOP;
END $$;
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_closed;
SELECT pg_temp.plans('closed');
RESET ROLE;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_closed;
SELECT pg_temp.plans('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
-- rows per query, and rows that differ between the two paths (bit for bit: none)
SELECT id, count(*) FILTER (WHERE path = 'closed') AS closed_rows,
	count(*) FILTER (WHERE path = 'exhaustive') AS exhaustive_rows
FROM cf_plan GROUP BY id ORDER BY id;
SELECT id, cell, component FROM (
	(SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM cf_plan WHERE path = 'closed'
	 EXCEPT ALL
	 SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM cf_plan WHERE path = 'exhaustive')
	UNION ALL
	(SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM cf_plan WHERE path = 'exhaustive'
	 EXCEPT ALL
	 SELECT id, cell, aggregate, group_key, component, epsilon, noise_scale, ci95_half_width, plain_dp_scale
	 FROM cf_plan WHERE path = 'closed')) diff ORDER BY 1, 2, 3;
-- which queries carry noise (a cell on an empty range is exact)
SELECT id, bool_and(noise_scale > 0) FILTER (WHERE component <> 'average (x count)') AS noisy
FROM cf_plan WHERE path = 'closed' GROUP BY id ORDER BY id;

-- the same noisy answers under the same seed (answer cache off: two charged releases each)
SET dxpriv.cache_lifetime = 0;
CREATE TEMP TABLE cf_answers (path text, id int, answer text);
GRANT INSERT ON cf_answers TO dx_regress_closed;
CREATE FUNCTION pg_temp.answers(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record; rec record;
BEGIN
	FOR r IN SELECT id, q FROM cf_q WHERE id IN (1, 2, 3, 4, 6, 8, 9, 12, 13, 16) ORDER BY id LOOP
		EXECUTE r.q INTO rec;
		INSERT INTO cf_answers VALUES (path, r.id, rec::text);
	END LOOP;
	-- grouped: every row, in key order
	FOR r IN SELECT id, q FROM cf_q WHERE id IN (21, 22, 23, 25, 26, 27) ORDER BY id LOOP
		FOR rec IN EXECUTE r.q || ' ORDER BY 1, 2' LOOP
			INSERT INTO cf_answers VALUES (path, r.id, rec::text);
		END LOOP;
	END LOOP;
END $$;
SET dxpriv.test_seed = 5050;
SET ROLE dx_regress_closed;
SELECT pg_temp.answers('closed');
RESET ROLE;
SET dxpriv.test_seed = 5050;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_closed;
SELECT pg_temp.answers('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
SELECT c.id, c.answer = e.answer AS same_answer FROM
	(SELECT id, string_agg(answer, ';' ORDER BY answer) AS answer FROM cf_answers WHERE path = 'closed' GROUP BY id) c
	JOIN (SELECT id, string_agg(answer, ';' ORDER BY answer) AS answer FROM cf_answers WHERE path = 'exhaustive'
	      GROUP BY id) e USING (id)
ORDER BY c.id;
-- grouped answers: rows per statement (one per group; HAVING keeps the groups it keeps on both paths)
SELECT id, count(*) FILTER (WHERE path = 'closed') AS closed_rows,
	count(*) FILTER (WHERE path = 'exhaustive') AS exhaustive_rows
FROM cf_answers WHERE id > 20 GROUP BY id ORDER BY id;
SELECT count(*) AS releases FROM dx.ledger WHERE role = 'dx_regress_closed'::regrole;
