-- The work known before the pair searches is refused first (issue 23, l2refuse2): over a points
-- column under the pair tree, evaluating the statement's expressions at every point is counted
-- against dxpriv.analysis_work_limit before it runs, and each pair tree's construction (its fits,
-- for the cells that vary) before it is built, in units of about the same CPU time whatever the
-- dimension and the cells; a statement that does not fit is refused (54000) with the points,
-- expressions, cells, units and the limit, uncharged. A statement that fits is planned exactly as
-- without a limit (the same plan as the exhaustive path).
CREATE TABLE rf2_t (id int, x float8, y float8);
INSERT INTO rf2_t SELECT g, ((g * 7919) % 3001) * 0.0173 + ((g * 13) % 7) * 0.001,
	((g * 104729) % 2999) * 0.0093 + ((g * 31) % 11) * 0.0007 FROM generate_series(0, 2999) g;
CREATE TABLE rf2_small (id int, x float8, y float8);
INSERT INTO rf2_small SELECT id, x, y FROM rf2_t WHERE id < 300;
SELECT dx.protect_table(t, 'Infinity') FROM unnest('{rf2_t,rf2_small}'::regclass[]) t;
SELECT dx.set_column_group(t, '{x,y}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(x, y) ORDER BY id)) FROM rf2_t WHERE id < n),
	'{"type": "l2", "scale": 1}') FROM (VALUES ('rf2_t'::regclass, 3000), ('rf2_small'::regclass, 300)) v(t, n);
CREATE ROLE dx_regress_l2refuse2;
SELECT dx.add_analyst('dx_regress_l2refuse2');
SELECT dx.grant_budget('dx_regress_l2refuse2', t, 10) IS NOT NULL AS granted FROM unnest('{rf2_t,rf2_small}'::text[]) t;
CREATE FUNCTION pg_temp.attempt(q text) RETURNS TABLE (code text, message text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN QUERY SELECT '00000'::text, 'accepted'::text;
EXCEPTION WHEN OTHERS THEN
	RETURN QUERY SELECT SQLSTATE::text, SQLERRM::text;
END $$;
-- the plan of a statement as (cell, epsilon, noise scale), rounded to 12 digits
CREATE FUNCTION pg_temp.plan(q text) RETURNS TABLE (cell int, eps text, scale text)
LANGUAGE sql AS $$
	SELECT cell::int, round(epsilon::numeric, 12)::text, round(noise_scale::numeric, 12)::text
	FROM dx.explain(q) ORDER BY cell
$$;
SET dxpriv.epsilon = 0.5;

-- the default (units of about 7 ns of CPU; superusers only, regress 75)
SHOW dxpriv.analysis_work_limit;

-- under the smallest limit, two sums over 3,000 points are evaluated (6e4 units) but refused
-- before their pair tree is built (2 varying cells: 2.09e5 units), with the numbers
SET dxpriv.analysis_work_limit = 1e5;
SET ROLE dx_regress_l2refuse2;
SELECT * FROM pg_temp.attempt('SELECT sum(x), sum(y) FROM rf2_t');
SELECT * FROM pg_temp.attempt('SELECT * FROM dx.explain(''SELECT sum(x), sum(y) FROM rf2_t'')');
-- five aggregates: their 11 expressions (1.32e5 units) are refused before any evaluation
SELECT * FROM pg_temp.attempt('SELECT count(*), count(*) FILTER (WHERE x > 20), sum(y), avg(x), sum(x) FILTER (WHERE y < 10) FROM rf2_t');
-- below the tree's 2,048 points the pair generation's scans are not counted: accepted
SELECT count(*) AS cells FROM dx.explain('SELECT sum(x), sum(y) FROM rf2_small');
RESET ROLE;

-- a limit the up-front work fits in but the searches do not: refused in the search
SET dxpriv.analysis_work_limit = 3e5;
SET ROLE dx_regress_l2refuse2;
SELECT code, message LIKE '%the pair tree over 3000 points (4.5e+06 pairs, 2 cells varying over them) spent%' AS in_search
FROM pg_temp.attempt('SELECT sum(x), sum(y) FROM rf2_t');
RESET ROLE;

-- under a limit it fits in, the plan is the exhaustive path's (no pair tree, no budget)
SET dxpriv.analysis_work_limit = 5e7;
SET ROLE dx_regress_l2refuse2;
CREATE TEMP TABLE fit AS SELECT * FROM pg_temp.plan('SELECT sum(x), sum(y), count(*) FILTER (WHERE x > 20) FROM rf2_t');
RESET ROLE;
SET dxpriv.exhaustive_analysis = on;
SET ROLE dx_regress_l2refuse2;
CREATE TEMP TABLE reference AS SELECT * FROM pg_temp.plan('SELECT sum(x), sum(y), count(*) FILTER (WHERE x > 20) FROM rf2_t');
RESET ROLE;
RESET dxpriv.exhaustive_analysis;
SELECT count(*) AS cells, bool_and(f.eps = r.eps AND f.scale = r.scale) AS same_plan
FROM fit f JOIN reference r USING (cell);

-- nothing was charged by the refusals; an accepted statement is charged once
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE role = 'dx_regress_l2refuse2'::regrole;
SET dxpriv.test_seed = 80;
SET ROLE dx_regress_l2refuse2;
SELECT s1 IS NOT NULL AS answered FROM (SELECT sum(x) AS s1, sum(y) AS s2 FROM rf2_t) q;
RESET ROLE;
RESET dxpriv.test_seed;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE role = 'dx_regress_l2refuse2'::regrole;
-- the answer cache's key hashes the per-point lookup tables instead of spelling them: the same
-- statement is replayed (the same answer, no new charge), a statement whose rewritten form differs
-- only in its table (y instead of x) is a new release
SET dxpriv.test_seed = 81;
SET ROLE dx_regress_l2refuse2;
SELECT sum(x) AS first_x FROM rf2_t \gset
SELECT sum(x) AS again_x FROM rf2_t \gset
SELECT sum(y) AS first_y FROM rf2_t \gset
RESET ROLE;
RESET dxpriv.test_seed;
SELECT :first_x = :again_x AS replayed, :first_x <> :first_y AS new_answer;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE role = 'dx_regress_l2refuse2'::regrole;
RESET dxpriv.analysis_work_limit;
RESET dxpriv.epsilon;
