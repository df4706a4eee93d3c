-- Group release (issue 25): dx.release_synthetic measures whole query groups (marginal tables,
-- blocks of disjoint predicates, user-given blocks) and dx.release_synthetic_error reports the
-- expected noise per workload query before anything is spent. Deterministic through the test seed
-- and noiseless checks (metric none: sensitivity 0); bad input refused before the charge; attacks:
-- showing a row, skipping or shrinking the charge, a sensitivity computed for other values.
\set VERBOSITY default
SET dxpriv.test_seed = 38;
SET dxpriv.progress_interval = 0;
CREATE TABLE sg_src (id int, band int, region text, sex text, secret text);
INSERT INTO sg_src SELECT i, (i * 7) % 4, (ARRAY['n', 's', 'e'])[1 + (i * i) % 3],
	CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END, 'x' || i
FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('sg_src', 1.0);
SELECT dx.set_column('sg_src', 'band', '{"min": 0, "max": 3}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('sg_src', 'region', '{"values": ["n", "s", "e"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('sg_src', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'sg_src', 10);

-- expected error before spending (data-independent, free): one GROUP BY's cells are one group,
-- measured jointly (rounds 1 = groups 1): the scale is the cells' allocation at epsilon (an edge
-- of band moves two cells, presence one: 2 / epsilon), as for the direct answer
SELECT query, label, grp, group_count, release_rounds, joint, round(noise_scale::numeric, 6) AS scale,
	round(rmse::numeric, 4) AS rmse, round(ci95_half_width::numeric, 4) AS ci95,
	round(direct_noise_scale::numeric, 6) AS direct_scale
FROM dx.release_synthetic_error('sg_src', ARRAY['band', 'region'], 'marginals:2', 1.0) WHERE query <= 3;
-- three 2-way tables: presence edges move every table, so the joint measurement gives each table
-- a third of epsilon (the direct answers' epsilon / 3); rounds => 2 selects two of them
SELECT DISTINCT grp, group_count, release_rounds, joint, round(noise_scale::numeric, 6) AS scale,
	round(direct_noise_scale::numeric, 6) AS direct_scale
FROM dx.release_synthetic_error('sg_src', ARRAY['band', 'region', 'sex'], 'marginals:2', 1.0) ORDER BY grp;
SELECT DISTINCT grp, release_rounds, joint, round(noise_scale::numeric, 6) AS scale
FROM dx.release_synthetic_error('sg_src', ARRAY['band', 'region', 'sex'], 'marginals:2', 1.0, 2) ORDER BY grp;
-- user-given blocks: queries with the same number are measured together
SELECT query, grp, group_count, round(noise_scale::numeric, 6) AS scale
FROM dx.release_synthetic_error('sg_src', ARRAY['band'], ARRAY['band = 0', 'band >= 1', 'band <= 2'], 1.0, NULL,
	ARRAY[1, 1, 2]) ORDER BY query;
-- automatic blocks of predicates: consecutive disjoint predicates share a block
SELECT query, grp, group_count FROM dx.release_synthetic_error('sg_src', ARRAY['band'],
	ARRAY['band = 0', 'band = 1', 'band >= 1', 'band = 3'], 1.0) ORDER BY query;
SELECT spent FROM dx.budgets WHERE "table" = 'sg_src'::regclass;

-- a release: charged once, exactly epsilon, before the table exists; one row per declared point
SELECT dx.release_synthetic('sg_src', ARRAY['band', 'region', 'sex'], 'marginals:2', 1.0, 'sg_out');
SELECT spent FROM dx.budgets WHERE "table" = 'sg_src'::regclass;
SELECT mechanism, epsilon, scales FROM dx.ledger WHERE relid = 'sg_src'::regclass ORDER BY id;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
WHERE attrelid = 'sg_out'::regclass AND attnum > 0 ORDER BY attnum;
SELECT count(*) AS points, bool_and(weight >= 0) AS nonnegative, abs(sum(weight) - 400) < 60 AS total_near_400 FROM sg_out;
SELECT mechanism, epsilon, iterations, workload, details ->> 'queries' AS queries,
	(details ->> 'count_epsilon')::float8 AS count_eps, details ->> 'output' AS output
FROM dx.my_releases WHERE target = 'sg_out'::regclass;
-- selection rounds (rounds => 2 of 3 tables) and predicates
SELECT dx.release_synthetic('sg_src', ARRAY['band', 'region', 'sex'], 'marginals:2', 0.5, 'sg_rounds', 2);
SELECT iterations, details ->> 'output' AS output FROM dx.my_releases WHERE target = 'sg_rounds'::regclass;
SELECT dx.release_synthetic('sg_src', ARRAY['band', 'sex'], ARRAY['band = 0 AND sex = ''F''', 'band >= 2'], 0.5, 'sg_pred');
SELECT count(*) AS points FROM sg_pred;
SELECT spent FROM dx.budgets WHERE "table" = 'sg_src'::regclass;

-- noiseless: no metric protects band and the count is public (sensitivity 0): one group (the
-- band table) measured exactly, so the release is the true histogram
CREATE TABLE sg_exact (band int);
INSERT INTO sg_exact SELECT (i * 5) % 4 FROM generate_series(1, 100) i WHERE i % 7 <> 0;
INSERT INTO sg_exact SELECT 3 FROM generate_series(1, 40);
SELECT dx.protect_table('sg_exact', 'Infinity');
SELECT dx.set_column('sg_exact', 'band', '{"min": 0, "max": 3}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'sg_exact', 1);
SELECT noise_scale, direct_noise_scale FROM dx.release_synthetic_error('sg_exact', ARRAY['band'], 'marginals:1', 0.5);
SELECT dx.release_synthetic('sg_exact', ARRAY['band'], 'marginals:1', 0.5, 'sg_exact_out');
SELECT s.band, round(s.weight::numeric, 3) AS synthetic, (SELECT count(*) FROM sg_exact e WHERE e.band = s.band) AS true_count
FROM sg_exact_out s ORDER BY s.band;

-- refused before anything is charged or written (errcode, lowercase message, hint)
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 0, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 'Infinity', 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', NULL, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, NULL);
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, 'nope', 0);
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, 'nope', 1001);
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, 'nope', NULL, ARRAY[1, 2]);
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, 'nope', NULL, ARRAY[[1, 2], [3, 4]]);
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, 'nope', NULL, ARRAY[1, NULL, 1, 1]);
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'everything', 1.0, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['secret'], 'marginals:1', 1.0, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band', 'band'], 'marginals:1', 1.0, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 1.0, 'sg_out');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 100, 'nope');
SELECT * FROM dx.release_synthetic_error('sg_src', ARRAY['band'], 'marginals:1', -1);
SELECT to_regclass('nope') IS NULL AS nothing_written, spent FROM dx.budgets WHERE "table" = 'sg_src'::regclass;

-- attack: show a row. Only declared points are written (never a stored value), predicates on an
-- undeclared column, on a column not released, or reading the table are refused
SELECT dx.release_synthetic('sg_src', ARRAY['band'], ARRAY['secret = ''x1'''], 0.3, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], ARRAY['sex = ''F'''], 0.3, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], ARRAY['band IN (SELECT band FROM sg_src WHERE secret = ''x1'')'], 0.3, 'nope');
SELECT dx.release_synthetic('sg_src', ARRAY['band'], ARRAY['sg_src.ctid IS NULL'], 0.3, 'nope');
-- a stored value outside the declared domain is mapped to a declared point: no new row appears
INSERT INTO sg_src VALUES (9999, 77, 'mars', 'F', 'outlier');
SELECT dx.release_synthetic('sg_src', ARRAY['band', 'region'], 'marginals:1', 0.3, 'sg_outlier');
SELECT count(*) AS points, count(*) FILTER (WHERE band NOT BETWEEN 0 AND 3 OR region NOT IN ('n', 's', 'e')) AS undeclared
FROM sg_outlier;

-- attack: a sensitivity for other values. The groups argument cannot lower a group's sensitivity:
-- putting overlapping queries in one block makes it larger (both cells move on one edge), and a
-- block of two copies of the same query costs twice one copy
SELECT query, grp, round(noise_scale::numeric, 6) AS scale
FROM dx.release_synthetic_error('sg_src', ARRAY['band'], ARRAY['band >= 1', 'band >= 1'], 1.0, NULL, ARRAY[5, 5]);
SELECT query, grp, round(noise_scale::numeric, 6) AS scale
FROM dx.release_synthetic_error('sg_src', ARRAY['band'], ARRAY['band >= 1'], 1.0);

-- attack: skip or shrink the charge. No budget: nothing written; a rolled-back release keeps its
-- charge; a second role without budget is refused
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 9.0, 'sg_too_much');
SELECT to_regclass('sg_too_much') IS NULL AS nothing_written;
BEGIN;
SELECT dx.release_synthetic('sg_src', ARRAY['sex'], 'marginals:1', 0.25, 'sg_rolled_back');
ROLLBACK;
SELECT to_regclass('sg_rolled_back') IS NULL AS gone, spent FROM dx.budgets WHERE "table" = 'sg_src'::regclass;
CREATE ROLE sg_analyst;
GRANT USAGE ON SCHEMA public TO sg_analyst;
GRANT CREATE ON SCHEMA public TO sg_analyst;
SET ROLE sg_analyst;
SELECT dx.release_synthetic('sg_src', ARRAY['band'], 'marginals:1', 0.1, 'sg_analyst_out');
SET dxpriv.test_seed = 1;
RESET ROLE;
SELECT to_regclass('sg_analyst_out') IS NULL AS nothing_written;
REVOKE ALL ON SCHEMA public FROM sg_analyst;
DROP ROLE sg_analyst;

-- progress: a NOTICE per round once the interval has passed (here: every round); the detail
-- (seconds elapsed) is not shown in terse mode
SET dxpriv.progress_interval = 0.000001;
\set VERBOSITY terse
SELECT dx.release_synthetic('sg_src', ARRAY['band', 'region', 'sex'], 'marginals:2', 0.2, 'sg_progress', 2) IS NOT NULL AS ok;
\set VERBOSITY default
SET dxpriv.progress_interval = 0;
SELECT spent FROM dx.budgets WHERE "table" = 'sg_src'::regclass;

-- the old signatures still work
SELECT dx.release_mwem('sg_src', ARRAY['sex'], 'marginals:1', 0.2, 'sg_old_mwem', 2) IS NOT NULL AS mwem_ok;
SELECT dx.release_smalldb('sg_src', ARRAY['sex'], 'marginals:1', 0.2, 'sg_old_small', 3) IS NOT NULL AS smalldb_ok;
