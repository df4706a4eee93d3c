-- Analysis memo (src/pg/planner/analysis_memo.h): a statement analysed before in this backend is not
-- analysed again, and a statement answered from the answer cache reads no row. The memo key holds
-- the parsed query, the role, the policy version, the table's contents version and the settings.
-- Attack tests: every difference that could change the release (a constant, the table a name
-- resolves to, the policy, a setting, the role, the rows, a parameter) is a new, charged release;
-- only the same statement is replayed, free.
CREATE TABLE memo_t (g int, v int);
INSERT INTO memo_t SELECT i % 3, i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('memo_t');
SELECT dx.set_column('memo_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('memo_t', 'g', '{"min": 0, "max": 2}', '{"type": "discrete"}');
CREATE SCHEMA memo_b;
CREATE TABLE memo_b.memo_t (g int, v int);
INSERT INTO memo_b.memo_t SELECT i % 3, 99 - i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('memo_b.memo_t');
SELECT dx.set_column('memo_b.memo_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE ROLE dx_regress_memo;
CREATE ROLE dx_regress_memo2;
GRANT USAGE ON SCHEMA memo_b TO dx_regress_memo, dx_regress_memo2;
SELECT dx.add_analyst('dx_regress_memo');
SELECT dx.add_analyst('dx_regress_memo2');
SELECT dx.grant_budget('dx_regress_memo', 'memo_t', 100), dx.grant_budget('dx_regress_memo', 'memo_b.memo_t', 100),
	dx.grant_budget('dx_regress_memo2', 'memo_t', 100), dx.grant_budget('dx_regress_memo2', 'memo_b.memo_t', 100),
	dx.grant_budget(current_user::regrole, 'memo_t', 100);
-- the policy tables carry the policy-version trigger
SELECT count(*) AS policy_triggers FROM pg_trigger
WHERE tgname = 'dx_contents_0' AND tgenabled = 'A';
-- analysts cannot read the memo counter
SET ROLE dx_regress_memo;
SELECT err('SELECT dx._analysis_memo_hits()');
RESET ROLE;

-- each step: what every (role, table) was charged and whether the memo answered (superuser view)
CREATE TEMP TABLE memo_log (ord serial, step text, spent numeric[], hits bigint);
CREATE FUNCTION pg_temp.note(step text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO memo_log (step, spent, hits)
	SELECT step, array_agg(round(g.spent::numeric, 6) ORDER BY g.role::text, g.relid::regclass::text),
	       dx._analysis_memo_hits()
	FROM dx.budget_grants g WHERE g.role::text LIKE 'dx_regress_memo%' $$;
SELECT pg_temp.note('start');
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('first: charged'); SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('same statement: replayed, memo'); SET ROLE dx_regress_memo;
select SUM(v) is not null as answered from memo_t;
RESET ROLE; SELECT pg_temp.note('other spacing and case, same length: replayed, memo'); SET ROLE dx_regress_memo;
SELECT  sum(v)IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('same length, every location moved by one: replayed, memo'); SET ROLE dx_regress_memo;
SELECT sum(v)   IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('another length (a new release, as before the memo): charged'); SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t WHERE v > 10;
RESET ROLE; SELECT pg_temp.note('WHERE v > 10: charged'); SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t WHERE v > 11;
RESET ROLE; SELECT pg_temp.note('another constant: charged'); SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t WHERE v > 10;
RESET ROLE; SELECT pg_temp.note('WHERE v > 10 again: replayed, memo'); SET ROLE dx_regress_memo;
-- the same text resolving to another table
SET search_path = memo_b, public;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('search_path to memo_b.memo_t: charged on it'); SET ROLE dx_regress_memo;
RESET search_path;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('back to public.memo_t: replayed, memo'); SET ROLE dx_regress_memo;
-- a setting that changes the release, and one that may change an analysis
SET dxpriv.epsilon = 0.25;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('epsilon 0.25: charged 0.25'); SET ROLE dx_regress_memo;
SET dxpriv.epsilon = 0.5000001; -- shown as 0.5: the key holds the exact value
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('epsilon 0.5000001: charged'); SET ROLE dx_regress_memo;
SET dxpriv.epsilon = 0.5;
SET DateStyle = 'German';
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('DateStyle: analysed again (same release: replayed)'); SET ROLE dx_regress_memo;
RESET DateStyle;
-- another role
SET ROLE dx_regress_memo2;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('another role: charged to it'); SET ROLE dx_regress_memo;
-- the policy changes: a larger scale (the presence edge still rules the sensitivity: the same
-- release, replayed after a new analysis), then a wider domain (a new release)
RESET ROLE;
SELECT dx.set_column('memo_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 20}');
SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('scale changed: analysed again, same release (replayed)');
SELECT dx.set_column('memo_t', 'v', '{"min": 0, "max": 149}', '{"type": "absolute", "scale": 20}');
SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('policy changed: charged'); SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('again: replayed, memo'); SET ROLE dx_regress_memo;
-- a policy change inside the reading transaction (owner and analyst in one session)
RESET ROLE;
BEGIN;
SELECT dx.set_column('memo_t', 'v', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}');
SET LOCAL ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
COMMIT;
SELECT pg_temp.note('policy changed in the transaction: charged'); SET ROLE dx_regress_memo;
-- the rows change
RESET ROLE;
UPDATE memo_t SET v = 99 - v WHERE g = 0;
SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('rows changed: charged'); SET ROLE dx_regress_memo;
SELECT sum(v) IS NOT NULL AS answered FROM memo_t;
RESET ROLE; SELECT pg_temp.note('again: replayed, memo'); SET ROLE dx_regress_memo;
-- prepared statements: each parameter value is its own release
PREPARE memo_p(int) AS SELECT sum(v) IS NOT NULL AS answered FROM memo_t WHERE v > $1;
EXECUTE memo_p(30);
RESET ROLE; SELECT pg_temp.note('prepared, v > 30: charged'); SET ROLE dx_regress_memo;
EXECUTE memo_p(30);
RESET ROLE; SELECT pg_temp.note('prepared, v > 30 again: replayed'); SET ROLE dx_regress_memo;
EXECUTE memo_p(31);
RESET ROLE; SELECT pg_temp.note('prepared, v > 31: charged'); SET ROLE dx_regress_memo;
DEALLOCATE memo_p;
PREPARE memo_q AS SELECT sum(v) IS NOT NULL AS answered FROM memo_t WHERE v > 40;
EXECUTE memo_q;
RESET ROLE; SELECT pg_temp.note('prepared without parameters: charged'); SET ROLE dx_regress_memo;
EXECUTE memo_q;
RESET ROLE; SELECT pg_temp.note('executed again: replayed'); SET ROLE dx_regress_memo;
DEALLOCATE memo_q;
RESET ROLE;
-- cost per (role, table): [memo: memo_b.memo_t, memo_t; memo2: memo_b.memo_t, memo_t]
SELECT step, hits - prev_hits AS memo_hits,
	(SELECT array_agg(round(x - y, 6) ORDER BY i) FROM unnest(spent, prev) WITH ORDINALITY u(x, y, i)) AS cost
FROM (SELECT *, lag(spent) OVER w AS prev, lag(hits) OVER w AS prev_hits FROM memo_log WINDOW w AS (ORDER BY ord)) s
ORDER BY ord;

-- a replay returns the released answers exactly and reads no row; its groups are all there
SET ROLE dx_regress_memo;
SELECT dx.sum(v) AS s0, dx.sum(v) FILTER (WHERE g = 1) AS s1, dx.avg(v) AS a FROM memo_t \gset first_
SELECT dx.sum(v) AS s0, dx.sum(v) FILTER (WHERE g = 1) AS s1, dx.avg(v) AS a FROM memo_t \gset again_
SELECT :first_s0 = :again_s0 AND :first_s1 = :again_s1 AND :first_a = :again_a AS same_answers;
SELECT g, dx.count(*) IS NOT NULL AS answered FROM memo_t GROUP BY g ORDER BY g;
SELECT g, dx.count(*) IS NOT NULL AS answered FROM memo_t GROUP BY g ORDER BY g;
-- every group's answer, replayed without reading a row, is the released one
SELECT string_agg(g || ':' || s, ' ' ORDER BY g) AS groups
FROM (SELECT g, dx.sum(v) AS s FROM memo_t WHERE v > 5 GROUP BY g) r \gset first_
SELECT string_agg(g || ':' || s, ' ' ORDER BY g) AS groups
FROM (SELECT g, dx.sum(v) AS s FROM memo_t WHERE v > 5 GROUP BY g) r \gset again_
SELECT :'first_groups' = :'again_groups' AS same_group_answers, array_length(string_to_array(:'again_groups', ' '), 1) AS groups;
RESET ROLE;
SET dxpriv.epsilon = 0.5;
SELECT dx.count(*) IS NOT NULL AS answered FROM memo_t WHERE v < 50;
-- (an EXPLAIN ANALYZE reads the rows; the same EXPLAIN ANALYZE again is replayed: its scan returns nothing)
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT dx.count(*) IS NOT NULL AS answered FROM memo_t WHERE v < 50;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT dx.count(*) IS NOT NULL AS answered FROM memo_t WHERE v < 50;
SELECT round(spent::numeric, 6) AS superuser_spent FROM dx.budget_grants
WHERE role = current_user::regrole AND relid = 'memo_t'::regclass;
RESET dxpriv.epsilon;

-- dx.explain accepts every query that runs: a discrete column of 10^5 values (its plain-DP
-- baseline needs no enumeration of the 5 * 10^9 pairs)
CREATE TABLE memo_disc (k int);
INSERT INTO memo_disc SELECT i * 37 FROM generate_series(1, 2000) AS i;
SELECT dx.protect_table('memo_disc');
SELECT dx.set_column('memo_disc', 'k', '{"min": 1, "max": 100000}', '{"type": "discrete"}');
SELECT dx.grant_budget('dx_regress_memo', 'memo_disc', 100);
SET ROLE dx_regress_memo;
SELECT dx.count(*) IS NOT NULL AS answered FROM memo_disc WHERE k < 5000;
SELECT component, epsilon, plain_dp_scale > 0 AS has_baseline
FROM dx.explain('SELECT dx.count(*) FROM memo_disc WHERE k < 5000');
SELECT dx.sum(k) IS NOT NULL AS answered FROM memo_disc;
SELECT component, epsilon, plain_dp_scale > 0 AS has_baseline FROM dx.explain('SELECT dx.sum(k) FROM memo_disc');
RESET ROLE;

-- Direct evaluation at the declared points (float8 of an integer column, integer comparisons with
-- constants, AND/OR/NOT) gives exactly what the executor computes: the same query written so that
-- the executor must evaluate it (v + 0) has the same cells, scales and baselines.
SET ROLE dx_regress_memo;
SELECT a.cell, a.component, a.noise_scale = b.noise_scale AS same_scale,
	a.plain_dp_scale IS NOT DISTINCT FROM b.plain_dp_scale AS same_baseline
FROM (SELECT * FROM dx.explain('SELECT dx.sum(v), dx.count(*) FILTER (WHERE v > 20 AND NOT v = 50), '
                               'dx.avg(v) FILTER (WHERE g <> 1 OR v <= 3) FROM memo_t WHERE 7 < v')
      WHERE cell IS NOT NULL) a
FULL JOIN (SELECT * FROM dx.explain('SELECT dx.sum(v + 0), dx.count(*) FILTER (WHERE v + 0 > 20 AND NOT v + 0 = 50), '
                                    'dx.avg(v + 0) FILTER (WHERE g + 0 <> 1 OR v + 0 <= 3) FROM memo_t WHERE 7 < v + 0')
           WHERE cell IS NOT NULL) b
USING (cell, component) ORDER BY 1, 2;
SELECT a.group_key, a.noise_scale = b.noise_scale AS same_scale
FROM dx.explain('SELECT g, dx.sum(v) FROM memo_t WHERE v BETWEEN 10 AND 60 GROUP BY g') a
FULL JOIN dx.explain('SELECT g, dx.sum(v + 0) FROM memo_t WHERE v + 0 BETWEEN 10 AND 60 GROUP BY g') b
USING (cell, component) ORDER BY 1;
RESET ROLE;
