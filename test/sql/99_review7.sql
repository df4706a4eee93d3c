-- review7: adversarial review of newsess (a new session's first statements without SPI). Each block
-- is an attack on one change; each output line is what must hold for the attack to fail.
-- A. the analysis memo's key over the noted dxpriv settings: every dxpriv.* setting and the
--    parsing/deparsing/evaluation settings (DateStyle, IntervalStyle, extra_float_digits, TimeZone,
--    search_path, lc_*), SET LOCAL, RESET, ALTER DATABASE SET, a function's SET clause: a change is
--    a memo miss (the same setting again is a hit, so the test can fail) and charges its own epsilon.
-- B. the analyst context read in C: analysts added or removed in the statement's own transaction
--    (and rolled back), a role made a member of an analyst, a SECURITY DEFINER function owned by a
--    reader, an analyst role renamed, shadow tables in pg_temp first in search_path at a reload.
--    (An analyst added by another session after the reading statement's snapshot: two sessions,
--    test/e2e/test_review7.py.)
-- C. dxpriv's functions by exact key: a same-named size function in the analyst's schema; the swap's
--    dx function dropped and re-created (new OID) in a session that used the old one.
-- D. the contents version from pg_trigger and pg_class: a trigger renamed, CREATE OR REPLACE TRIGGER
--    to another function and back, disabled and re-enabled inside one transaction after an answer
--    was stored in it, a rewrite that changes values (ALTER COLUMN TYPE ... USING: refused), a
--    rewrite (VACUUM FULL), an inheritance child added, a partition attached and detached: no
--    answer replayed for changed rows.
-- E. the statistics extensions: created inside the analyst's own transaction, after the lookup was
--    cached for the epoch.
CREATE TABLE r7_t (v int);
INSERT INTO r7_t SELECT i % 100 FROM generate_series(1, 1000) AS i;
SELECT dx.protect_table('r7_t');
SELECT dx.set_column('r7_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE ROLE dx_regress_r7;
SELECT dx.add_analyst('dx_regress_r7');
SELECT dx.grant_budget('dx_regress_r7', 'r7_t', 1e6);
CREATE ROLE dx_regress_r7_reader; -- not an analyst: the DBA lets it read the rows
GRANT SELECT ON r7_t TO dx_regress_r7_reader;
CREATE ROLE dx_regress_r7_late;   -- reads the rows, made an analyst later
GRANT SELECT ON r7_t TO dx_regress_r7_late;
CREATE TABLE r7_hits (ord serial, hits bigint);
CREATE FUNCTION r7_hit() RETURNS text LANGUAGE sql AS
$$ INSERT INTO r7_hits (hits) VALUES (dx._analysis_memo_hits());
   SELECT CASE WHEN hits - lag(hits) OVER (ORDER BY ord) > 0 THEN 'hit' ELSE 'miss' END
   FROM r7_hits ORDER BY ord DESC LIMIT 1 $$;
CREATE TABLE r7_log (ord serial, step text, spent numeric);
CREATE FUNCTION r7_note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO r7_log (step, spent) SELECT step, round(spent::numeric, 6) FROM dx.budgets
   WHERE "table" = 'r7_t'::regclass AND role = 'dx_regress_r7'::regrole $$;
\set q 'SELECT count(*) IS NOT NULL AS answered FROM r7_t WHERE v > 7'

-- A. settings (client_min_messages: dxpriv.show_error_bars' notices show noisy values)
\c
SET dxpriv.cache_lifetime = 0; SET dxpriv.epsilon = 0.5; SET client_min_messages = warning;
SELECT r7_hit() AS start;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS first;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS same_settings;
SET dxpriv.epsilon = 0.25;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS epsilon;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS epsilon_again;
SET dxpriv.allocation = 'equal_split';
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS allocation;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS allocation_again;
SET dxpriv.show_error_bars = on;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS show_error_bars;
SET dxpriv.unit_bounding = 'sort';
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS unit_bounding;
SET dxpriv.progress_interval = 7;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS progress_interval;
SET dxpriv.ledger_timeout = 12345;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS ledger_timeout;
SET DateStyle = 'SQL, DMY';
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS datestyle;
SET IntervalStyle = 'sql_standard';
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS intervalstyle;
SET extra_float_digits = 0;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS extra_float_digits;
SET TimeZone = 'Pacific/Chatham';
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS timezone;
SET search_path = pg_catalog, public;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS search_path;
SET lc_monetary = 'POSIX'; SET lc_numeric = 'POSIX'; SET lc_time = 'POSIX';
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS lc_settings;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS lc_settings_again;
BEGIN;
SET LOCAL dxpriv.epsilon = 0.125;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS set_local;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS set_local_again;
COMMIT;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS after_set_local_commit;
RESET dxpriv.epsilon;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS reset_epsilon;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS reset_epsilon_again;
RESET ALL;
SET dxpriv.cache_lifetime = 0; SET client_min_messages = warning;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_hit() AS reset_all;
-- a function's SET clause (proconfig) around the analyst's statement
CREATE FUNCTION r7_q() RETURNS boolean LANGUAGE sql SET dxpriv.epsilon = 0.0625 AS
$$ SELECT count(*) IS NOT NULL FROM r7_t WHERE v > 7 $$;
GRANT EXECUTE ON FUNCTION r7_q() TO dx_regress_r7;
SELECT r7_note('before proconfig');
SET ROLE dx_regress_r7; SELECT err('SELECT r7_q()') AS proconfig_call; RESET ROLE;
SELECT r7_note('proconfig (0.0625 if answered)');
-- charges: each setting's own epsilon, also in a new backend under ALTER DATABASE SET
SET dxpriv.epsilon = 0.03125;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_note('session 0.03125');
SELECT current_database() AS db \gset
ALTER DATABASE :"db" SET dxpriv.epsilon = 0.015625;
\c
SET dxpriv.cache_lifetime = 0;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_note('alter database 0.015625, new backend');
ALTER DATABASE :"db" RESET dxpriv.epsilon;
\c
SET dxpriv.cache_lifetime = 0; SET dxpriv.epsilon = 0.03125;
SET ROLE dx_regress_r7; :q; RESET ROLE; SELECT r7_note('session 0.03125, new backend');
SELECT step, spent - lag(spent) OVER (ORDER BY ord) AS cost FROM r7_log ORDER BY ord;
TRUNCATE r7_log;
DROP FUNCTION r7_q();

-- B. the analyst context
\c
-- B1. an analyst added in the statement's own transaction is one at once; rolled back it is not
BEGIN;
SELECT dx.add_analyst('dx_regress_r7_late');
SET LOCAL ROLE dx_regress_r7_late;
SELECT err('SELECT v FROM r7_t LIMIT 1') AS raw_read_added_same_transaction;
ROLLBACK;
SET ROLE dx_regress_r7_late;
SELECT err('SELECT v FROM r7_t LIMIT 1') = 'no error' AS reads_again_after_rollback;
RESET ROLE;
-- B2. an analyst removed in a rolled-back transaction is still one
BEGIN;
SELECT dx.remove_analyst('dx_regress_r7');
ROLLBACK;
SET ROLE dx_regress_r7;
SELECT err('SELECT v FROM r7_t LIMIT 1') AS raw_read_after_rolled_back_remove;
RESET ROLE;
-- B3. a reader made a member of an analyst is restricted from its next statement
SET ROLE dx_regress_r7_reader;
SELECT err('SELECT v FROM r7_t LIMIT 1') = 'no error' AS reader_reads;
RESET ROLE;
GRANT dx_regress_r7 TO dx_regress_r7_reader;
SET ROLE dx_regress_r7_reader;
SELECT err('SELECT v FROM r7_t LIMIT 1') AS raw_read_as_member_of_analyst;
RESET ROLE;
REVOKE dx_regress_r7 FROM dx_regress_r7_reader;
-- B4. a SECURITY DEFINER function of the reader, called from an analyst's session
CREATE FUNCTION r7_peek() RETURNS int LANGUAGE sql SECURITY DEFINER AS $$ SELECT v FROM r7_t LIMIT 1 $$;
ALTER FUNCTION r7_peek() OWNER TO dx_regress_r7_reader;
GRANT EXECUTE ON FUNCTION r7_peek() TO dx_regress_r7;
\c
SET SESSION AUTHORIZATION dx_regress_r7;
SELECT err('SELECT r7_peek()') AS security_definer_from_analyst_session;
RESET SESSION AUTHORIZATION;
DROP FUNCTION r7_peek();
-- B5. an analyst role renamed is still the analyst (by OID), from a new backend's first statement
ALTER ROLE dx_regress_r7 RENAME TO dx_regress_r7_renamed;
GRANT SELECT ON r7_t TO dx_regress_r7_renamed;
\c
SET ROLE dx_regress_r7_renamed;
SELECT err('SELECT v FROM r7_t LIMIT 1') AS raw_read_renamed_analyst;
RESET ROLE;
REVOKE SELECT ON r7_t FROM dx_regress_r7_renamed;
ALTER ROLE dx_regress_r7_renamed RENAME TO dx_regress_r7;
-- B6. shadow tables in pg_temp, first in search_path, when the context is read again
\c
CREATE TEMP TABLE analysts (role oid);
CREATE TEMP TABLE protected_tables (relid oid);
SET search_path = pg_temp, public;
SELECT dx.add_analyst('dx_regress_r7_late'); -- (dx.analysts invalidated: read again below)
SELECT dx.remove_analyst('dx_regress_r7_late');
SET ROLE dx_regress_r7;
SELECT err('SELECT v FROM public.r7_t LIMIT 1') AS raw_read_pg_temp_shadows;
RESET ROLE;
RESET search_path;

-- C. dxpriv's functions by exact key
CREATE SCHEMA r7_own AUTHORIZATION dx_regress_r7;
CREATE FUNCTION r7_own.analyst_relation_size(regclass) RETURNS bigint LANGUAGE sql AS 'SELECT 4242::bigint';
ALTER FUNCTION r7_own.analyst_relation_size(regclass) OWNER TO dx_regress_r7;
\c
SET search_path = r7_own, public;
SET ROLE dx_regress_r7;
SELECT pg_relation_size('public.r7_t') AS size_with_shadow_in_search_path;
SELECT pg_catalog.pg_relation_size('public.r7_t'::regclass) AS qualified_size;
RESET ROLE;
-- the dx function dropped and re-created (a new OID) while this backend used the old one
ALTER EXTENSION dxpriv DROP FUNCTION dx.analyst_relation_size(regclass);
SELECT 'dx.analyst_relation_size(regclass)'::regprocedure::oid AS old_oid \gset
DROP FUNCTION dx.analyst_relation_size(regclass);
CREATE FUNCTION dx.analyst_relation_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS '$libdir/dxpriv', 'dx_analyst_size';
ALTER EXTENSION dxpriv ADD FUNCTION dx.analyst_relation_size(regclass);
SELECT 'dx.analyst_relation_size(regclass)'::regprocedure::oid <> :old_oid AS new_oid;
SET ROLE dx_regress_r7;
SELECT pg_relation_size('public.r7_t') AS size_after_recreate;
RESET ROLE;
RESET search_path;
DROP SCHEMA r7_own CASCADE;

-- D. the contents version
SELECT 'dx_contents_' || 'r7_t'::regclass::oid AS trg \gset
SELECT pg_get_triggerdef(oid) AS trgdef FROM pg_trigger WHERE tgrelid = 'r7_t'::regclass AND tgname = :'trg' \gset
CREATE FUNCTION r7_noop() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
\set a 'SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_r7; SELECT sum(v) IS NOT NULL AS answered FROM r7_t; RESET ROLE'
\c
SELECT r7_note('start');
:a; SELECT r7_note('first: charged');
:a; SELECT r7_note('again: replayed');
-- D1. renamed (still counting), renamed back
ALTER TRIGGER :"trg" ON r7_t RENAME TO r7_renamed;
:a; SELECT r7_note('trigger renamed: charged');
ALTER TRIGGER r7_renamed ON r7_t RENAME TO :"trg";
:a; SELECT r7_note('renamed back: charged');
:a; SELECT r7_note('renamed back, again: replayed');
-- D2. CREATE OR REPLACE TRIGGER to another function, a write, and back (same trigger OID)
SELECT replace(:'trgdef', 'CREATE TRIGGER', 'CREATE OR REPLACE TRIGGER') AS redef,
       regexp_replace(replace(:'trgdef', 'CREATE TRIGGER', 'CREATE OR REPLACE TRIGGER'),
                      'EXECUTE FUNCTION .*$', 'EXECUTE FUNCTION r7_noop()') AS noopdef \gset
SELECT oid AS trgoid FROM pg_trigger WHERE tgrelid = 'r7_t'::regclass AND tgname = :'trg' \gset
:noopdef;
UPDATE r7_t SET v = 0 WHERE v = 2; -- not counted
:redef;
ALTER TABLE r7_t ENABLE ALWAYS TRIGGER :"trg";
SELECT oid = :trgoid AS same_trigger_oid FROM pg_trigger WHERE tgrelid = 'r7_t'::regclass AND tgname = :'trg';
:a; SELECT r7_note('replaced and back: charged');
:a; SELECT r7_note('replaced and back, again: replayed');
-- D3. inside one transaction: enabled, an answer stored, disabled, a write, enabled again
BEGIN;
ALTER TABLE r7_t DISABLE TRIGGER :"trg";
ALTER TABLE r7_t ENABLE ALWAYS TRIGGER :"trg";
:a; SELECT r7_note('one transaction, enabled: charged');
ALTER TABLE r7_t DISABLE TRIGGER :"trg";
UPDATE r7_t SET v = 0 WHERE v = 3; -- not counted
ALTER TABLE r7_t ENABLE ALWAYS TRIGGER :"trg";
:a; SELECT r7_note('one transaction, disabled, written, enabled: charged');
COMMIT;
\c
:a; SELECT r7_note('that transaction committed, new backend: charged');
:a; SELECT r7_note('again: replayed');
-- D4. a rewrite that changes the values (no statement trigger fires): refused for a declared column
SELECT err($$ALTER TABLE r7_t ALTER COLUMN v TYPE int USING (CASE WHEN v = 4 THEN 0 ELSE v END)$$) AS rewrite_with_other_values;
VACUUM FULL r7_t; -- (a rewrite: another relfilenode, the same rows)
:a; SELECT r7_note('rewritten (VACUUM FULL): charged');
:a; SELECT r7_note('again: replayed');
-- D5. an inheritance child with rows
CREATE TABLE r7_child () INHERITS (r7_t);
INSERT INTO r7_child SELECT 50 FROM generate_series(1, 10);
:a; SELECT r7_note('inheritance child added: charged');
:a; SELECT r7_note('inheritance child, again: charged (no contents trigger)');
DROP TABLE r7_child;
:a; SELECT r7_note('inheritance child dropped: charged');
SELECT step, spent - lag(spent) OVER (ORDER BY ord) AS cost FROM r7_log ORDER BY ord;
TRUNCATE r7_log;
-- D6. a partition attached and detached
CREATE TABLE r7_p (v int) PARTITION BY RANGE (v);
CREATE TABLE r7_p1 PARTITION OF r7_p FOR VALUES FROM (0) TO (50);
INSERT INTO r7_p SELECT i % 50 FROM generate_series(1, 500) AS i;
CREATE TABLE r7_p2 (v int);
INSERT INTO r7_p2 SELECT 50 + i % 50 FROM generate_series(1, 500) AS i;
SELECT dx.protect_table('r7_p');
SELECT dx.set_column('r7_p', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
SELECT dx.grant_budget('dx_regress_r7', 'r7_p', 1e6);
CREATE OR REPLACE FUNCTION r7_note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO r7_log (step, spent) SELECT step, round(spent::numeric, 6) FROM dx.budgets
   WHERE "table" = 'r7_p'::regclass AND role = 'dx_regress_r7'::regrole $$;
\set p 'SET dxpriv.epsilon = 0.5; SET ROLE dx_regress_r7; SELECT sum(v) IS NOT NULL AS answered FROM r7_p; RESET ROLE'
\c
SELECT r7_note('start');
:p; SELECT r7_note('partitioned: charged');
:p; SELECT r7_note('again: replayed');
ALTER TABLE r7_p ATTACH PARTITION r7_p2 FOR VALUES FROM (50) TO (100);
:p; SELECT r7_note('partition attached: charged');
:p; SELECT r7_note('attached, again: charged (r7_p2 has no contents trigger)');
ALTER TABLE r7_p DETACH PARTITION r7_p2;
:p; SELECT r7_note('partition detached: charged');
\c
:p; SELECT r7_note('partition detached, new backend: replayed or charged, never the attached answer');
SELECT step, spent - lag(spent) OVER (ORDER BY ord) AS cost FROM r7_log ORDER BY ord;

-- E. a statistics extension created inside the analyst's own transaction, the lookup cached before
\c
SET ROLE dx_regress_r7;
SELECT count(*) IS NOT NULL AS answered FROM r7_t WHERE v > 5;
RESET ROLE;
BEGIN;
CREATE EXTENSION pg_buffercache;
GRANT SELECT ON pg_buffercache TO dx_regress_r7;
GRANT EXECUTE ON FUNCTION pg_buffercache_pages() TO dx_regress_r7;
SET LOCAL ROLE dx_regress_r7;
SELECT err('SELECT count(*) FROM pg_buffercache') AS buffercache_same_transaction;
SELECT err('SELECT count(*) FROM pg_buffercache_pages() AS p(b int, f oid, t oid, d oid, fk int2, bn int8, dirty bool, u int2, pin int4)') AS buffercache_pages_same_transaction;
ROLLBACK;
CREATE SCHEMA r7_ext;
CREATE EXTENSION pg_buffercache SCHEMA r7_ext;
GRANT USAGE ON SCHEMA r7_ext TO dx_regress_r7;
GRANT SELECT ON r7_ext.pg_buffercache TO dx_regress_r7;
GRANT EXECUTE ON FUNCTION r7_ext.pg_buffercache_pages() TO dx_regress_r7;
SET ROLE dx_regress_r7;
SELECT err('SELECT count(*) FROM r7_ext.pg_buffercache') AS buffercache_other_schema;
RESET ROLE;
DROP EXTENSION pg_buffercache;
DROP SCHEMA r7_ext;

DROP FUNCTION r7_note(text);
DROP TABLE r7_log;
DROP FUNCTION r7_hit();
DROP TABLE r7_hits;
DROP FUNCTION r7_noop() CASCADE;
SELECT dx.unprotect_table('r7_p');
DROP TABLE r7_p, r7_p2;
SELECT dx.unprotect_table('r7_t');
DROP TABLE r7_t;
SELECT dx.remove_analyst('dx_regress_r7');
DROP ROLE dx_regress_r7, dx_regress_r7_reader, dx_regress_r7_late;
