-- Shared analysis memo (src/pg/planner/shared_memo.h): a statement analysed in one session is not
-- analysed again in a new session when the query, the role, the policy, the table's contents, the
-- settings and the cluster's catalog generation (metadata/catalog_generation.h) are the same.
-- Attack tests: a DDL between the sessions (a function the statement calls redefined, ALTER TABLE,
-- GRANT), a policy change, another role, a transaction that wrote something and a session with
-- temporary objects each get a fresh analysis; a replay gives the answer a fresh analysis gives.
CREATE TABLE smemo_t (g int, v int);
INSERT INTO smemo_t SELECT i % 3, i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('smemo_t');
SELECT dx.set_column('smemo_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE FUNCTION smemo_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x';
CREATE ROLE dx_regress_smemo;
CREATE ROLE dx_regress_smemo2;
SELECT dx.add_analyst('dx_regress_smemo'), dx.add_analyst('dx_regress_smemo2');
SELECT dx.grant_budget('dx_regress_smemo', 'smemo_t', 1000), dx.grant_budget('dx_regress_smemo2', 'smemo_t', 1000),
	dx.grant_budget(current_user::regrole, 'smemo_t', 1000);
CREATE TABLE smemo_other (x int);
GRANT INSERT ON smemo_other TO dx_regress_smemo;
-- the setting and the function are there; they cannot be changed in a session
SHOW dxpriv.shared_memo_memory;
SELECT err('SET dxpriv.shared_memo_memory = 1024');
SELECT err('SET dxpriv.shared_memo_memory = -1');
SELECT err($$SELECT set_config('dxpriv.shared_memo_memory', 'lots', false)$$);
-- analysts cannot read the counter
SET ROLE dx_regress_smemo;
SELECT err('SELECT dx._shared_memo_hits()');
RESET ROLE;
-- each session below: the same settings (they are part of the key), answers not reused from the
-- answer cache (cache_lifetime 0: every statement is analysed or replayed, then answered afresh
-- with the deterministic noise of test_seed); two statements: the owner's, through a function
-- (analysts may not call user functions on protected columns), and the analyst's
CREATE TABLE smemo_log (ord serial, step text, owner_answer float8, analyst_answer float8, shared_hits bigint,
	memo_hits bigint, release text);

-- 1. the first session analyses (and stores)
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'first session: analysed', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 2. a new session: both statements answered from the shared memo, the same answers
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'new session: shared hits', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 3. the function the owner's statement calls is redefined (its result changes): fresh analyses
CREATE OR REPLACE FUNCTION smemo_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + 1';
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'function redefined: analysed', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'next session: shared hits of the new analyses', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 4. ALTER TABLE: fresh analyses
ALTER TABLE smemo_t ADD COLUMN w int;
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'ALTER TABLE: analysed', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 5. GRANT: fresh analyses
GRANT SELECT ON smemo_other TO dx_regress_smemo2;
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'GRANT: analysed', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 6. another role: its own analysis (the owner's statement: a shared hit)
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo2;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'another role: analysed (owner: hit)', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 7. the policy changes (not a DDL: a new policy version): fresh analyses, other answers
SELECT dx.set_column('smemo_t', 'v', '{"min": 0, "max": 149}', '{"type": "absolute", "scale": 10}');
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'policy changed: analysed', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 8. a transaction that wrote something neither reads nor stores
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
BEGIN;
INSERT INTO smemo_other VALUES (1);
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
COMMIT;
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'a write in the transaction: analysed (owner: hit)', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 9. a session with a temporary table (its CREATE is a DDL: a new generation) neither reads nor stores
\c
CREATE TEMP TABLE smemo_tmp (x int);
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'session with a temporary table: analysed', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 10. a plain new session, no DDL since the temporary table's: analysed (the session with the
-- temporary table stored nothing), stored
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'new session: analysed (nothing stored by 9)', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';
-- 11. and the next one is answered from the shared memo again
\c
SET dxpriv.test_seed = 11; SET dxpriv.cache_lifetime = 0;
SELECT dx.sum(smemo_f(v)) AS owner FROM smemo_t \gset
SET ROLE dx_regress_smemo;
SELECT dx.sum(v) AS analyst FROM smemo_t WHERE v > 10 \gset
SELECT string_agg(aggregate || ' ' || kind || '(' || expression || ') scale ' || round(noise_scale::numeric, 6), '; ') AS rel
FROM dx.last_release() \gset
RESET ROLE;
INSERT INTO smemo_log (step, owner_answer, analyst_answer, shared_hits, memo_hits, release)
SELECT 'new session: shared hits', :owner, :analyst, dx._shared_memo_hits(), dx._analysis_memo_hits(), :'rel';

-- hits per session (each session's counters start at 0); whether each answer, and the analyst's
-- release as dx.last_release() describes it (registered again by a shared hit), is the previous
-- session's
SELECT step, shared_hits, memo_hits,
	owner_answer = lag(owner_answer) OVER w AS owner_same, analyst_answer = lag(analyst_answer) OVER w AS analyst_same,
	release = lag(release) OVER w AS release_same
FROM smemo_log WINDOW w AS (ORDER BY ord) ORDER BY ord;
SELECT DISTINCT release FROM smemo_log ORDER BY 1;
DROP TABLE smemo_log;
