-- Median-mechanism sessions (issue 14, MECHANISMS.md §7): opening charges the first sparse-vector
-- run; hard queries are charged, easy ones are free, answered ones are returned again for free;
-- the state lives in dx.median_sessions and survives the connection; bad input is refused before
-- any charge. Deterministic through the test seed.
\set VERBOSITY default
SET dxpriv.test_seed = 25;
CREATE TABLE med_src (band int, sex text);
INSERT INTO med_src SELECT CASE WHEN i % 10 < 6 THEN 0 ELSE 1 + i % 3 END, CASE WHEN i % 4 = 0 THEN 'M' ELSE 'F' END
FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('med_src', 'Infinity');
SELECT dx.set_column('med_src', 'band', '{"min": 0, "max": 3}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('med_src', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.grant_budget(current_user::regrole, 'med_src', 20);

-- workload over band x sex (8 points, sex fastest): the 8 cells, then the 4 band and 2 sex marginals
SELECT dx.median_session_open('med_src', ARRAY['band', 'sex'], ARRAY[
	[1,0,0,0,0,0,0,0], [0,1,0,0,0,0,0,0], [0,0,1,0,0,0,0,0], [0,0,0,1,0,0,0,0],
	[0,0,0,0,1,0,0,0], [0,0,0,0,0,1,0,0], [0,0,0,0,0,0,1,0], [0,0,0,0,0,0,0,1],
	[1,1,0,0,0,0,0,0], [0,0,1,1,0,0,0,0], [0,0,0,0,1,1,0,0], [0,0,0,0,0,0,1,1],
	[1,0,1,0,1,0,1,0], [0,1,0,1,0,1,0,1]]::float8[], 2.0, alpha => 0.1, size => 10) AS session \gset
SELECT spent FROM dx.budgets WHERE "table" = 'med_src'::regclass;
SELECT workload, epsilon_hard, alpha, size, max_hard, hard, answered, status FROM dx.my_median_sessions WHERE id = :session;
SELECT query, label, answer FROM dx.median_session_queries(:session) ORDER BY query;
SELECT dx.median_session_query(:session, 0);
SELECT dx.median_session_query(:session, 15);
-- every query once, then again (reused, free; the one the budget could not pay is refused)
SELECT q, (r).hard, (r).epsilon, (r).reused, (r).status, round((r).answer) AS answer
FROM generate_series(1, 14) q, LATERAL dx.median_session_query(:session, q) r ORDER BY q;
SELECT q, (r).reused, (r).epsilon, round((r).answer) AS answer FROM generate_series(1, 13) q,
	LATERAL dx.median_session_query(:session, q) r ORDER BY q;
SELECT dx.median_session_query(:session, 14);
SELECT band, sex, count(*) FROM med_src GROUP BY band, sex ORDER BY band, sex;
-- charges: the opening run plus epsilon_hard per hard query, one ledger row each
SELECT s.hard, b.spent = 1.0 + 2.0 * s.hard AS spent_matches,
	(SELECT count(*) FROM dx.ledger WHERE fingerprint = 'median:' || :session) = 1 + s.hard AS ledger_rows
FROM dx.my_median_sessions s, dx.budgets b WHERE s.id = :session AND b."table" = 'med_src'::regclass;
SELECT query, label, round(answer) AS answer, hard FROM dx.median_session_queries(:session) ORDER BY query;
-- the state survives a new connection
\c
SELECT (dx.median_session_query(:session, 2)).reused, round((dx.median_session_query(:session, 2)).answer) AS answer;

-- a workload of WHERE predicates is evaluated once, at open, on the declared points and kept as
-- weight vectors (the same session as the weights would give)
SELECT dx.median_session_open('med_src', ARRAY['band', 'sex'], ARRAY['band < 2', 'sex = ''M'' OR band = 3'], 1.0, alpha => 0.1, size => 10) AS psession \gset
SELECT workload, size FROM dx.my_median_sessions WHERE id = :psession;
SELECT query, label FROM dx.median_session_queries(:psession) ORDER BY query;
SELECT weights FROM dx.median_sessions WHERE id = :psession;
SELECT dx.median_session_open('med_src', ARRAY['band'], ARRAY['sex = ''F'''], 1.0);

-- refusals
SELECT dx.median_session_query(123456, 1);
BEGIN;
SELECT dx.median_session_query(:session, 1);
ROLLBACK;
SELECT dx.median_session_open('med_src', ARRAY['band'], 'marginals:1', 0);
SELECT dx.median_session_open('med_src', ARRAY['band'], 'marginals:1', 1, alpha => 0);
SELECT dx.median_session_open('med_src', ARRAY['band'], 'marginals:1', 1, size => 0);
SELECT dx.median_session_open('med_src', ARRAY['band', 'sex'], 'marginals:1', 1, size => 500);
SELECT dx.median_session_open('med_src', ARRAY['nope'], 'marginals:1', 1);
SELECT dx.median_session_open('med_src', ARRAY['band'], 'marginals:1', 1000);
SELECT count(*) AS sessions FROM dx.my_median_sessions;
