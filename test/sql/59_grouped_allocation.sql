-- Grouped allocation without the rows between groups (issue 23, core/grouped_allocation.h): a
-- statement grouped by a column with a discrete or per_value metric is planned without building the
-- reference's row per pair of groups and point of the other columns (constraint generation), then
-- checked against every such row exactly. The superuser-only dxpriv.exhaustive_analysis gives the
-- per-point reference. The two plans agree within the solver's tolerance (not bit for bit: the
-- allocation is the optimum of the same convex problem, solved over other rows), so this file
-- compares every dx.explain row with a relative tolerance of 1e-6, and the seeded noisy answers
-- with a tolerance (a different last bit of a scale may move a seeded draw by a grid step).
-- Statements: 1-2 the dashboard's tiles (73 and 10 groups), 3 a per_value group column, 4 a WHERE
-- that removes groups, 5 HAVING, 6 two keys, 7 per-aggregate epsilons (budget blocks); outside the
-- shape, reference on both paths and bit for bit: 8 an expression key, 9 below the pair-row
-- threshold, 10 an absolute group column.
CREATE TABLE ga_t (g int, grp int, pv int, q int, a int, s int, ab int);
INSERT INTO ga_t SELECT i % 73, i % 10, i % 30, (i * 7) % 51, (i * 13) % 121, i % 3, i % 40
FROM generate_series(1, 4000) AS i;
SELECT dx.protect_table('ga_t');
SELECT dx.set_column('ga_t', 'g', '{"min": 0, "max": 72}', '{"type": "discrete"}');
SELECT dx.set_column('ga_t', 'grp', '{"min": 0, "max": 9}', '{"type": "discrete"}');
SELECT dx.set_column('ga_t', 'pv', '{"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]}',
	'{"type": "per_value", "weights": {"0": 0.5, "3": 4, "7": 1.5, "11": 3, "20": 0.8}, "default": 2}');
SELECT dx.set_column('ga_t', 'q', '{"min": 0, "max": 50}', '{"type": "none"}');
SELECT dx.set_column('ga_t', 'a', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('ga_t', 's', '{"min": 0, "max": 2}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('ga_t', 'ab', '{"min": 0, "max": 39}', '{"type": "absolute", "scale": 1}');
CREATE ROLE dx_regress_galloc;
SELECT dx.add_analyst('dx_regress_galloc');
SELECT dx.grant_budget('dx_regress_galloc', 'ga_t', 1000) IS NOT NULL AS granted;

CREATE TEMP TABLE ga_q (id int, q text);
INSERT INTO ga_q VALUES
	(1, 'SELECT g, count(*), avg(q) FROM ga_t GROUP BY g'),
	(2, 'SELECT grp, count(*), sum(q), avg(a) FROM ga_t GROUP BY grp'),
	(3, 'SELECT pv, count(*), avg(q) FROM ga_t GROUP BY pv'),
	(4, 'SELECT g, count(*), sum(q) FROM ga_t WHERE g < 40 AND g <> 7 GROUP BY g'),
	(5, 'SELECT g, count(*), avg(q) FROM ga_t GROUP BY g HAVING count(*) > 50'),
	(6, 'SELECT s, pv, count(*), sum(q) FROM ga_t GROUP BY s, pv'),
	(7, 'SELECT g, dx.count(1, 0.2), dx.avg(q, 0.3) FROM ga_t GROUP BY g'),
	(8, 'SELECT g / 2, count(*), sum(q) FROM ga_t GROUP BY g / 2'),
	(9, 'SELECT s, count(*), sum(q) FROM ga_t GROUP BY s'),
	(10, 'SELECT ab, count(*), sum(q) FROM ga_t GROUP BY ab');
GRANT SELECT ON ga_q TO dx_regress_galloc;

CREATE TEMP TABLE ga_plan (path text, id int, cell int, aggregate int, group_key text, component text,
	epsilon float8, noise_scale float8, ci95_half_width float8, plain_dp_scale float8);
GRANT INSERT ON ga_plan TO dx_regress_galloc;
CREATE FUNCTION pg_temp.plans(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
	FOR r IN SELECT id, q FROM ga_q ORDER BY id LOOP
		INSERT INTO ga_plan SELECT path, r.id, e.cell, e.aggregate, e.group_key, e.component, e.epsilon,
			e.noise_scale, e.ci95_half_width, e.plain_dp_scale
		FROM dx.explain(r.q) e;
	END LOOP;
END $$;
SET dxpriv.epsilon = 0.5;
-- the reference first (this also warms the session's catalog caches, whose DEBUG1 lines would
-- otherwise appear below)
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_galloc;
SELECT pg_temp.plans('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
-- which statements take the grouped allocation: a DEBUG1 line each (1-7; 8-10 are outside the shape)
SET client_min_messages = debug1;
SET ROLE dx_regress_galloc;
SELECT pg_temp.plans('grouped');
RESET ROLE;
RESET client_min_messages;
-- rows per statement on both paths, the rows that match (same cell, group, component), whether all
-- agree within 1e-6 (relative) and whether all are bit for bit identical (always outside the shape,
-- 8-10; on the grouped path when the allocation's winner is a closed heuristic, as for 4)
SELECT g.id, count(*) AS rows, count(e.id) AS matched,
	bool_and(abs(g.noise_scale - e.noise_scale) <= 1e-6 * abs(e.noise_scale)
	         AND abs(g.epsilon - e.epsilon) <= 1e-6 * abs(e.epsilon)
	         AND abs(g.ci95_half_width - e.ci95_half_width) <= 1e-6 * abs(e.ci95_half_width)
	         AND g.plain_dp_scale = e.plain_dp_scale) AS within_1e_6,
	bool_and(g.noise_scale = e.noise_scale AND g.epsilon = e.epsilon) AS bit_identical
FROM ga_plan g LEFT JOIN ga_plan e ON e.path = 'exhaustive' AND e.id = g.id AND e.cell IS NOT DISTINCT FROM g.cell
	AND e.group_key IS NOT DISTINCT FROM g.group_key AND e.component = g.component
WHERE g.path = 'grouped' GROUP BY g.id ORDER BY g.id;
-- every statement carries noise; one scale per aggregate in every group of the symmetric tiles
SELECT id, bool_and(noise_scale > 0) AS noisy, count(DISTINCT (component, round(noise_scale::numeric, 6))) AS scales
FROM ga_plan WHERE path = 'grouped' AND id IN (1, 2, 5, 7, 9) GROUP BY id ORDER BY id;

-- seeded answers on both paths (answer cache off: two charged releases each), per group: identical
-- where the scales are bit for bit or the draws do not depend on their last bits; 2 and 3 differ
-- (scales 1e-12 apart: the seeded sampler consumes its stream differently), which is why the
-- plans above are compared with a tolerance
SET dxpriv.cache_lifetime = 0;
CREATE TEMP TABLE ga_answers (path text, id int, key text, answer float8[]);
GRANT INSERT ON ga_answers TO dx_regress_galloc;
CREATE FUNCTION pg_temp.answers(path text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record; rec record; j jsonb; k text; vals float8[];
BEGIN
	FOR r IN SELECT id, q FROM ga_q WHERE id IN (1, 2, 3, 4, 5, 6, 8, 9) ORDER BY id LOOP
		FOR rec IN EXECUTE r.q LOOP
			j := to_jsonb(rec);
			vals := ARRAY(SELECT (value #>> '{}')::float8 FROM jsonb_each(j) WHERE key IN ('count', 'sum', 'avg') ORDER BY key);
			k := (SELECT string_agg(value::text, ',' ORDER BY key) FROM jsonb_each(j) WHERE key NOT IN ('count', 'sum', 'avg'));
			INSERT INTO ga_answers VALUES (path, r.id, k, vals);
		END LOOP;
	END LOOP;
END $$;
SET dxpriv.test_seed = 5959;
SET ROLE dx_regress_galloc;
SELECT pg_temp.answers('grouped');
RESET ROLE;
SET dxpriv.test_seed = 5959;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_galloc;
SELECT pg_temp.answers('exhaustive');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
SELECT g.id, count(*) AS groups, count(e.id) AS matched, bool_and(g.answer IS NOT DISTINCT FROM e.answer) AS same_answer
FROM ga_answers g LEFT JOIN ga_answers e ON e.path = 'exhaustive' AND e.id = g.id AND e.key = g.key
WHERE g.path = 'grouped' GROUP BY g.id ORDER BY g.id;
SELECT count(*) AS releases FROM dx.ledger WHERE role = 'dx_regress_galloc'::regrole;
