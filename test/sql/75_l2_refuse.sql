-- A statement whose pair searches cannot prune is refused within a work budget, and a long analysis
-- can be cancelled (issue 23, l2refuse): every pair tree of one statement's analysis charges one
-- budget, dxpriv.analysis_work_limit (superusers; default 2e8 distance evaluations), and the
-- statement is refused (54000) where it runs out, with the numbers (limit, points, pairs, cells,
-- evaluations spent, share of the pairs settled) and a hint; a statement_timeout or a cancel stops
-- the analysis at its next check. Neither charges anything, and the next statement works.
CREATE TABLE rf_t (id int, x float8, y float8);
INSERT INTO rf_t SELECT g, ((g * 7919) % 3001) * 0.0173 + ((g * 13) % 7) * 0.001,
	((g * 104729) % 2999) * 0.0093 + ((g * 31) % 11) * 0.0007 FROM generate_series(0, 2999) g;
CREATE TABLE rf_big (id int, x float8, y float8);
INSERT INTO rf_big SELECT g, ((g * 7919) % 40009) * 0.00173 + ((g * 13) % 7) * 0.0001,
	((g::int8 * 104729) % 39989) * 0.00093 + ((g * 31) % 11) * 0.00007 FROM generate_series(0, 39999) g;
SELECT count(DISTINCT (x, y)) AS t_points FROM rf_t;
SELECT count(DISTINCT (x, y)) AS big_points FROM rf_big;
-- the bounded model (the row count public): no presence rows to cut the searches short
SELECT dx.protect_table(t, 'Infinity') FROM unnest('{rf_t,rf_big}'::regclass[]) t;
SELECT dx.set_column_group(t, '{x,y}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(x, y) ORDER BY id)) FROM rf_t),
	'{"type": "l2", "scale": 1}') FROM unnest('{rf_t}'::regclass[]) t;
SELECT dx.set_column_group('rf_big', '{x,y}',
	(SELECT jsonb_build_object('points', jsonb_agg(jsonb_build_array(x, y) ORDER BY id)) FROM rf_big),
	'{"type": "l2", "scale": 1}');
CREATE ROLE dx_regress_l2refuse;
SELECT dx.add_analyst('dx_regress_l2refuse');
SELECT dx.grant_budget('dx_regress_l2refuse', t, 10) IS NOT NULL AS granted FROM unnest('{rf_t,rf_big}'::text[]) t;
-- errcode, message and hint of a statement (run as the current role)
CREATE FUNCTION pg_temp.attempt(q text) RETURNS TABLE (code text, message text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE q;
	RETURN QUERY SELECT '00000'::text, 'accepted'::text;
EXCEPTION WHEN OTHERS THEN
	RETURN QUERY SELECT SQLSTATE::text, SQLERRM::text;
END $$;
CREATE FUNCTION pg_temp.attempt_hint(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE h text;
BEGIN
	EXECUTE q;
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS h = PG_EXCEPTION_HINT;
	RETURN h;
END $$;
SET dxpriv.epsilon = 0.5;

-- the setting: superusers only
SHOW dxpriv.analysis_work_limit;
SET ROLE dx_regress_l2refuse;
SET dxpriv.analysis_work_limit = 1e12;
RESET ROLE;
-- out of its range (1e5-1e12), or not a number: refused, the setting unchanged
SET dxpriv.analysis_work_limit = 1e4;
SET dxpriv.analysis_work_limit = 1e13;
SET dxpriv.analysis_work_limit = -1;
SET dxpriv.analysis_work_limit = 'many';
SHOW dxpriv.analysis_work_limit;

-- two sums over 3,000 points: accepted under the default
SET ROLE dx_regress_l2refuse;
SELECT cell, component FROM dx.explain('SELECT sum(x), sum(y) FROM rf_t') ORDER BY cell;
RESET ROLE;

-- under a limit of 1e6 it is refused, in dx.explain and as a statement, with the numbers and a hint
SET dxpriv.analysis_work_limit = 1e6;
SET ROLE dx_regress_l2refuse;
SELECT * FROM pg_temp.attempt('SELECT * FROM dx.explain(''SELECT sum(x), sum(y) FROM rf_t'')');
SELECT * FROM pg_temp.attempt('SELECT sum(x), sum(y) FROM rf_t');
SELECT pg_temp.attempt_hint('SELECT sum(x), sum(y) FROM rf_t');
-- one sum of x * y under the same limit: its single search prunes, accepted
SELECT * FROM pg_temp.attempt('SELECT * FROM dx.explain(''SELECT sum(x * y) FROM rf_t'')');
RESET ROLE;
-- 40,000 points, two sums: 4.3e9 units of work to plan (over a minute of CPU); refused at a limit of 2e7
SET dxpriv.analysis_work_limit = 2e7;
SET ROLE dx_regress_l2refuse;
SELECT * FROM pg_temp.attempt('SELECT sum(x), sum(y) FROM rf_big');
RESET ROLE;

-- a statement timeout cancels the long analysis (the limit raised out of the way); the next
-- statement works
SET dxpriv.analysis_work_limit = 1e12;
SET ROLE dx_regress_l2refuse;
SET statement_timeout = '200ms';
SELECT sum(x), sum(y) FROM rf_big;
SELECT * FROM dx.explain('SELECT sum(x), sum(y) FROM rf_big');
RESET statement_timeout;
SELECT cell, component FROM dx.explain('SELECT sum(x), sum(y) FROM rf_t') ORDER BY cell;
RESET ROLE;
RESET dxpriv.analysis_work_limit;

-- nothing was charged: no ledger row, nothing spent
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE role = 'dx_regress_l2refuse'::regrole;
SELECT "table", spent FROM dx.budgets WHERE role = 'dx_regress_l2refuse'::regrole ORDER BY 1;
-- and an accepted statement is charged once
SET dxpriv.test_seed = 75;
SET ROLE dx_regress_l2refuse;
SELECT s1 IS NOT NULL AS answered FROM (SELECT sum(x) AS s1, sum(y) AS s2 FROM rf_t) q;
RESET ROLE;
RESET dxpriv.test_seed;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE role = 'dx_regress_l2refuse'::regrole;
RESET dxpriv.epsilon;
