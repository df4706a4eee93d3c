-- A new session's first statements (newsess): dxpriv's per-backend state is built from the catalog
-- without SPI and without opening relations: the analyst context (dx.analysts and
-- dx.protected_tables read in C), dxpriv's functions (found by pg_proc's exact key), each protected
-- tree's and the policy tables' contents triggers and relfilenodes (pg_trigger and pg_class). Every
-- block below starts a new backend (\c) whose first statements build that state again.
-- Attack tests: tables named analysts and protected_tables in an analyst's own schema, first in its
-- search_path; an internal aggregate called directly as a backend's first statement; the contents
-- trigger disabled, enabled only on origin, or replaced by a trigger of the same name calling another
-- function (each: no answer replayed, every statement charged); a policy table's contents trigger
-- disabled (no analysis kept for another session); a statistics extension (pageinspect) created after
-- a backend's first statements (its functions refused to the analyst at once).
CREATE TABLE ns_t (v int);
INSERT INTO ns_t SELECT i % 100 FROM generate_series(1, 1000) AS i;
SELECT dx.protect_table('ns_t');
SELECT dx.set_column('ns_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE ROLE dx_regress_ns;
SELECT dx.add_analyst('dx_regress_ns');
SELECT dx.grant_budget('dx_regress_ns', 'ns_t', 1e6);
CREATE SCHEMA ns_own AUTHORIZATION dx_regress_ns;
CREATE TABLE ns_own.analysts (role oid);
CREATE TABLE ns_own.protected_tables (relid oid);
ALTER TABLE ns_own.analysts OWNER TO dx_regress_ns;
ALTER TABLE ns_own.protected_tables OWNER TO dx_regress_ns;
CREATE FUNCTION ns_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
SELECT 'dx_contents_' || 'ns_t'::regclass::oid AS trg \gset
CREATE TABLE ns_log (ord serial, step text, spent numeric);
CREATE FUNCTION ns_note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO ns_log (step, spent) SELECT step, round(spent::numeric, 6) FROM dx.budgets
   WHERE "table" = 'ns_t'::regclass AND role = 'dx_regress_ns'::regrole $$;

-- 1. an analyst from its backend's first statement, whatever its search_path finds first
\c
SET search_path = ns_own, public;
SET ROLE dx_regress_ns;
SELECT err('SELECT v FROM public.ns_t LIMIT 1') AS raw_read;
SELECT err('SELECT count(*) FROM ns_own.analysts') AS own_table_readable;
RESET ROLE;
-- 2. the internal aggregates are known from a backend's first statement (by the analyst, by the owner)
\c
SET ROLE dx_regress_ns;
SELECT err('SELECT dx._noisy_count(1.0, 0, ARRAY[1.0]::float8[]) FROM ns_t') AS internal_by_analyst;
RESET ROLE;
\c
SELECT err('SELECT dx._noisy_count(1.0, 0, ARRAY[1.0]::float8[]) FROM ns_t') AS internal_by_owner;

-- 3. the contents trigger read from pg_trigger by each new backend
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('first: charged');
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('new session: replayed');
ALTER TABLE ns_t DISABLE TRIGGER :"trg";
UPDATE ns_t SET v = 0 WHERE v = 1; -- not counted
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('trigger disabled: charged');
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('trigger disabled, new session: charged');
ALTER TABLE ns_t ENABLE TRIGGER :"trg"; -- on origin only
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('trigger enabled on origin only: charged');
DROP TRIGGER :"trg" ON ns_t;
CREATE TRIGGER :"trg" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON ns_t FOR EACH STATEMENT EXECUTE FUNCTION ns_noop();
ALTER TABLE ns_t ENABLE ALWAYS TRIGGER :"trg";
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('same name, another function: charged');
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('same name, another function, new session: charged');
DROP TRIGGER :"trg" ON ns_t;
SELECT dx.protect_table('ns_t');
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('trigger reinstalled: charged');
\c
SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_ns;
SELECT sum(v) IS NOT NULL AS answered FROM ns_t;
RESET ROLE; SELECT ns_note('trigger reinstalled, new session: replayed');
SELECT step, spent - coalesce(lag(spent) OVER (ORDER BY ord), 0) AS cost FROM ns_log ORDER BY ord;

-- 4. the policy's version from its tables' triggers: with dx.analysts' contents trigger disabled a
--    new session's first statement is analysed (no memo), and shared again once it is enabled
SELECT format('ALTER TABLE dx.analysts DISABLE TRIGGER %I', tgname) AS disable_policy,
       format('ALTER TABLE dx.analysts ENABLE ALWAYS TRIGGER %I', tgname) AS enable_policy
FROM pg_trigger WHERE tgrelid = 'dx.analysts'::regclass AND tgname = 'dx_contents_0' \gset
:disable_policy;
\c
SET dxpriv.epsilon = 0.25; SET ROLE dx_regress_ns;
SELECT count(*) IS NOT NULL AS answered FROM ns_t WHERE v > 5;
RESET ROLE;
\c
SET dxpriv.epsilon = 0.25; SET ROLE dx_regress_ns;
SELECT count(*) IS NOT NULL AS answered FROM ns_t WHERE v > 5;
RESET ROLE;
SELECT dx._shared_memo_hits() AS policy_trigger_disabled_shared_hits;
:enable_policy;
\c
SET dxpriv.epsilon = 0.25; SET ROLE dx_regress_ns;
SELECT count(*) IS NOT NULL AS answered FROM ns_t WHERE v > 5;
RESET ROLE;
\c
SET dxpriv.epsilon = 0.25; SET ROLE dx_regress_ns;
SELECT count(*) IS NOT NULL AS answered FROM ns_t WHERE v > 5;
RESET ROLE;
SELECT dx._shared_memo_hits() AS policy_trigger_enabled_shared_hits;

-- 5. the statistics extensions installed (looked up by name, kept while the catalog epoch holds):
--    one created after this backend's statements is seen at once, by the analyst's next statement
\c
SET ROLE dx_regress_ns;
SELECT count(*) IS NOT NULL AS answered FROM ns_t WHERE v > 5;
RESET ROLE;
CREATE EXTENSION pageinspect;
SET ROLE dx_regress_ns;
SELECT err($$SELECT get_raw_page('ns_t', 0)$$) AS raw_page_same_backend;
RESET ROLE;
\c
SET ROLE dx_regress_ns;
SELECT err($$SELECT get_raw_page('ns_t', 0)$$) AS raw_page_new_backend;
RESET ROLE;
DROP EXTENSION pageinspect;

DROP FUNCTION ns_note(text);
DROP TABLE ns_log;
SELECT dx.unprotect_table('ns_t');
DROP TABLE ns_t;
DROP FUNCTION ns_noop();
DROP SCHEMA ns_own CASCADE;
SELECT dx.remove_analyst('dx_regress_ns');
DROP ROLE dx_regress_ns;
