-- Stage errors: an error raised in each stage of the pipeline (parse analysis, admission, planning,
-- charge, execution, release log) leaves the session usable, and the next statement is answered as
-- if the error had not happened: the same noiseless answer, charged exactly once, with its own
-- release log. Each check fails when a stage keeps state from the failed statement (hooks.cpp
-- resets every stage at transaction end; the utility marks are left in a PG_FINALLY).
CREATE TABLE stage_t (k int, v int, grp text);
INSERT INTO stage_t SELECT i, i % 10, CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END FROM generate_series(1, 90) AS i;
SELECT dx.protect_table('stage_t', 'Infinity'); -- presence public, metric none: noiseless answers
SELECT dx.set_column('stage_t', 'v', '{"min": 0, "max": 9}', '{"type": "none"}');
SELECT dx.set_column('stage_t', 'grp', '{"values": ["a", "b"]}', '{"type": "none"}');
CREATE ROLE dx_regress_stage LOGIN;
SELECT dx.add_analyst('dx_regress_stage');
SELECT dx.grant_budget('dx_regress_stage', 'stage_t', 1000);
GRANT SELECT ON stage_t TO dx_regress_stage;
SET dxpriv.cache_lifetime = 0; -- every answered statement is charged (no replay)
-- charges(): ledger rows of stage_t so far; the reference answer is sum(v) = 405, count 90
CREATE FUNCTION pg_temp.charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS
$$ SELECT count(*) FROM dx.ledger WHERE relid = 'stage_t'::regclass $$;
GRANT EXECUTE ON FUNCTION pg_temp.charges() TO dx_regress_stage;
SELECT sum(v) AS reference_sum, count(*) AS reference_count FROM stage_t;

SET ROLE dx_regress_stage;
SELECT pg_temp.charges() AS before;
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS after_one_answer;

-- parse analysis: a refusal inside the analysis (undeclared column)
SELECT err('SELECT dx.sum(k) FROM stage_t');
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS charged_once_more;
-- parse analysis inside a utility statement (the analysis counters are bracketed by PG_FINALLY):
-- a failed EXPLAIN, COPY and CREATE TABLE AS leave no mark on the next statement (a COPY counter
-- left behind would refuse it: analysts cannot copy or store queries)
SELECT err('EXPLAIN SELECT dx.sum(k) FROM stage_t');
COPY (SELECT dx.sum(v) FROM stage_t) TO STDOUT;
SELECT err('CREATE TEMP TABLE stage_copy AS SELECT dx.sum(k) FROM stage_t');
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS charged_once_more;
-- dx.explain fails while its capture is on: the next statement is answered and charged, not captured
SELECT err($$SELECT * FROM dx.explain('SELECT dx.sum(k) FROM stage_t')$$);
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS charged_once_more;

-- admission: an analyst's read of the protected table without aggregates
SELECT err('SELECT v FROM stage_t');
SELECT dx.count(*) AS answer FROM stage_t;
SELECT pg_temp.charges() AS charged_once_more;

-- planning: a forced generic plan of a query with parameters refuses to be planned
SET plan_cache_mode = force_generic_plan;
PREPARE stage_p(int) AS SELECT dx.sum(v) FROM stage_t WHERE v >= $1;
SELECT err('EXECUTE stage_p(0)');
RESET plan_cache_mode;
DEALLOCATE stage_p;
PREPARE stage_p(int) AS SELECT dx.sum(v) FROM stage_t WHERE v >= $1;
EXECUTE stage_p(0);
DEALLOCATE stage_p;
SELECT pg_temp.charges() AS charged_once_more;

-- charge: the budget cannot pay (an epsilon above the remaining budget): nothing is charged
SELECT err('SELECT dx.sum(v, 5000) FROM stage_t');
SELECT pg_temp.charges() AS nothing_charged;
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS charged_once_more;

-- execution: an error after the charge (in the post-processing of the released answer); the charge
-- stands (it was committed by the ledger before the statement ran), the next statement is its own
SET dxpriv.show_error_bars = on;
SELECT err('SELECT dx.sum(v) / 0 FROM stage_t');
SELECT pg_temp.charges() AS failed_statement_charged;
-- release log: the failed statement never reached ExecutorEnd; its release is not reported with the
-- next statement's, and dx.last_release() shows the next statement only
SELECT dx.count(*) AS answer FROM stage_t;
SELECT aggregate, answer FROM dx.last_release() ORDER BY 1;
SELECT pg_temp.charges() AS charged_once_more;
RESET dxpriv.show_error_bars;

-- the same inside one transaction: a failed statement in a subtransaction (plpgsql EXCEPTION) and
-- after a ROLLBACK TO SAVEPOINT; the statements after it are answered and charged once each
BEGIN;
SELECT err('SELECT dx.sum(v) / 0 FROM stage_t');
SELECT dx.sum(v) AS answer FROM stage_t;
SAVEPOINT s;
SELECT dx.sum(k) FROM stage_t;
ROLLBACK TO SAVEPOINT s;
SELECT dx.sum(v) AS answer FROM stage_t;
COMMIT;
SELECT pg_temp.charges() AS three_more;

-- a failed transaction: the next transaction starts clean
BEGIN;
SELECT dx.sum(v) / 0 FROM stage_t;
SELECT dx.sum(v) FROM stage_t; -- in an aborted transaction
ROLLBACK;
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS two_more;
RESET ROLE;
-- the table owner: a failed view definition and a failed EXPLAIN leave no mark (a definition counter
-- left behind would refuse the next query: dx aggregates cannot be used in view definitions)
SELECT dx.grant_budget(current_user::regrole, 'stage_t', 1000);
SELECT err('CREATE VIEW stage_v AS SELECT dx.sum(v) FROM stage_t');
SELECT err('EXPLAIN SELECT dx.sum(k) FROM stage_t');
SELECT dx.sum(v) AS answer FROM stage_t;
SELECT pg_temp.charges() AS charged_once_more;
