-- Catalog changes and what was analysed or recorded before them (ddlhold).
-- 1. The ledger is append-only also under session_replication_role = replica (replication and
--    restore tools set it): its triggers, like every other trigger dxpriv installs, are ENABLE ALWAYS.
-- 2. A cached plan (PREPARE, a PL/pgSQL statement) whose analysis evaluated a function or a domain
--    on the declared points is analysed again when that function is redefined or the domain
--    altered: the plan cache's own dependencies are taken from the rewritten statement, which no
--    longer names them (planner/plan_dependencies.h).
-- 3. Inside one transaction, a statement after CREATE OR REPLACE FUNCTION is not answered from the
--    analysis memo of the old body (metadata/catalog_epoch.h counts the transaction's own function
--    and type invalidations).
-- 4. A DDL that changes a protected tree's shape is a write of its protected tables in its own
--    transaction (dx_tree_change), so the contents version moves when its commit becomes visible,
--    not only when its invalidation messages arrive (in between a session kept the old shape).
-- Every answer below is computed at epsilon 1000 with a fixed seed and rounded: the noise is far
-- below 0.5, so each shows the exact sum of the function's values.
CREATE TABLE cg_t (g int, v int);
INSERT INTO cg_t SELECT i % 3, i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('cg_t');
SELECT dx.set_column('cg_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
SELECT dx.grant_budget(current_user::regrole, 'cg_t', 1e9);
SET dxpriv.test_seed = 5;
SET dxpriv.cache_lifetime = 0;

-- 1. triggers
SELECT c.relname, regexp_replace(t.tgname, '^dx_contents_' || c.oid || '$', 'dx_contents_<own relid>') AS tgname, t.tgenabled
FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE NOT t.tgisinternal AND (n.nspname = 'dx' OR c.relname = 'cg_t')
ORDER BY 1, 2;
SELECT evtname, evtenabled FROM pg_event_trigger WHERE evtname LIKE 'dx%' ORDER BY 1;
SELECT round(dx.sum(v, 1000)) AS ledgered FROM cg_t;
SET session_replication_role = replica;
SELECT err('DELETE FROM dx.ledger');
SELECT err('UPDATE dx.ledger SET epsilon = 0');
SELECT err('TRUNCATE dx.ledger');
SELECT err('DELETE FROM dx.ledger WHERE relid = ''cg_t''::regclass');
RESET session_replication_role;
SELECT count(*) > 0 AS ledger_kept FROM dx.ledger WHERE relid = 'cg_t'::regclass;
-- a write in replica mode moves the contents version (its trigger fires ALWAYS): the cached
-- answer is not replayed after it (the sum grows by the row's 99)
SET dxpriv.cache_lifetime = 3600;
SELECT round(dx.sum(v, 1000)) AS cached FROM cg_t;
SELECT round(dx.sum(v, 1000)) AS replayed FROM cg_t;
SET session_replication_role = replica;
INSERT INTO cg_t VALUES (7, 99);
RESET session_replication_role;
SELECT round(dx.sum(v, 1000)) AS after_replica_write FROM cg_t;
DELETE FROM cg_t WHERE g = 7;
SET dxpriv.cache_lifetime = 0;

-- 2. cached plans
CREATE FUNCTION cg_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 0';
PREPARE cg_p AS SELECT round(dx.sum(cg_f(v), 1000)) FROM cg_t;
EXECUTE cg_p;
CREATE OR REPLACE FUNCTION cg_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 1';
EXECUTE cg_p;
-- a statement of a PL/pgSQL function (a saved plan of its own)
CREATE FUNCTION cg_plpgsql() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	r numeric;
BEGIN
	SELECT round(dx.sum(cg_f(v), 1000)) INTO r FROM cg_t;
	RETURN r;
END $$;
SELECT cg_plpgsql();
CREATE OR REPLACE FUNCTION cg_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x';
SELECT cg_plpgsql();
EXECUTE cg_p;
-- a function the statement calls through an operator of its own
CREATE FUNCTION cg_plus(a int, b int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a + b';
CREATE OPERATOR #@# (LEFTARG = int, RIGHTARG = int, FUNCTION = cg_plus);
PREPARE cg_op AS SELECT round(dx.sum(v #@# 1, 1000)) FROM cg_t;
EXECUTE cg_op;
CREATE OR REPLACE FUNCTION cg_plus(a int, b int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT a + 2 * b';
EXECUTE cg_op;
-- a domain the statement's values are cast to: a new constraint is checked on the declared points
CREATE DOMAIN cg_d AS int CHECK (VALUE < 1000);
PREPARE cg_dom AS SELECT round(dx.sum(v, 1000)) FROM cg_t WHERE v::cg_d >= 0;
EXECUTE cg_dom;
ALTER DOMAIN cg_d ADD CONSTRAINT cg_d_small CHECK (VALUE < 50) NOT VALID;
SELECT err('EXECUTE cg_dom');
SELECT err('SELECT round(dx.sum(v, 1000)) FROM cg_t WHERE v::cg_d >= 0');
-- a type's change analyses again only when the analysis used it (a new table's row type does not);
-- any function's change does (the evaluated one may call it): cg_g counts its evaluations
CREATE FUNCTION cg_g(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM set_config('cg.calls', (coalesce(nullif(current_setting('cg.calls', true), ''), '0')::int + 1)::text, false);
	RETURN x;
END $$;
CREATE FUNCTION cg_other(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x';
PREPARE cg_q AS SELECT round(dx.sum(cg_g(v), 1000)) FROM cg_t;
SELECT current_setting('cg.calls') AS evaluations_prepared;
EXECUTE cg_q;
CREATE TABLE cg_unrelated (a int);
DROP TABLE cg_unrelated;
EXECUTE cg_q;
SELECT current_setting('cg.calls') AS evaluations_after_another_type;
CREATE OR REPLACE FUNCTION cg_other(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + 1';
EXECUTE cg_q;
SELECT current_setting('cg.calls') AS evaluations_after_another_function;
-- a function called by the evaluated one (PL/pgSQL: no dependency names it), and one called by a
-- domain's CHECK: their redefinition is the statement's (review3)
CREATE FUNCTION cg_inner(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN 0; END';
CREATE FUNCTION cg_outer(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN cg_inner(x); END';
PREPARE cg_nested AS SELECT round(dx.sum(cg_outer(v), 1000)) FROM cg_t;
EXECUTE cg_nested;
CREATE OR REPLACE FUNCTION cg_inner(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN 1; END';
EXECUTE cg_nested;
SELECT round(dx.sum(cg_outer(v), 1000)) FROM cg_t;
CREATE FUNCTION cg_ok(x int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN true; END';
CREATE DOMAIN cg_checked AS int CHECK (cg_ok(VALUE));
PREPARE cg_checked_q AS SELECT round(dx.sum(v, 1000)) FROM cg_t WHERE v::cg_checked >= 0;
EXECUTE cg_checked_q;
CREATE OR REPLACE FUNCTION cg_ok(x int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN x < 50; END';
SELECT err('EXECUTE cg_checked_q');
-- a STABLE function reading a table, evaluated on the points at analysis: the prepared statement
-- is analysed again in the next transaction (the table may have changed), not within one
CREATE TABLE cg_cfg (k int);
INSERT INTO cg_cfg VALUES (0);
CREATE FUNCTION cg_k(x int) RETURNS int LANGUAGE sql STABLE AS 'SELECT x * k FROM cg_cfg';
PREPARE cg_stable AS SELECT round(dx.sum(cg_k(v), 1000)) FROM cg_t;
EXECUTE cg_stable;
UPDATE cg_cfg SET k = 1;
EXECUTE cg_stable;
SELECT round(dx.sum(cg_k(v), 1000)) FROM cg_t;
BEGIN;
EXECUTE cg_stable;
UPDATE cg_cfg SET k = 2;
EXECUTE cg_stable;
COMMIT;
EXECUTE cg_stable;
-- the same beside other aggregates (dxpriv's own volatile aggregates, which the analysis adds and
-- removes, are not counted as values that may change)
PREPARE cg_stable_more AS SELECT round(dx.sum(cg_k(v), 1000)), round(dx.avg(v, 1000)), round(dx.count(v, 1000)),
	round(dx.sum(v, 1000) FILTER (WHERE v > 50)) FROM cg_t;
EXECUTE cg_stable_more;
UPDATE cg_cfg SET k = 1;
EXECUTE cg_stable_more;
CREATE OR REPLACE FUNCTION cg_g(x int) RETURNS int LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	PERFORM set_config('cg.calls', (coalesce(nullif(current_setting('cg.calls', true), ''), '0')::int + 1)::text, false);
	RETURN x;
END $$;
EXECUTE cg_q;
SELECT current_setting('cg.calls') AS evaluations_after_redefinition;

-- 3. one transaction: each statement after a redefinition is analysed with the new body
BEGIN;
SELECT round(dx.sum(cg_f(v), 1000)) FROM cg_t;
CREATE OR REPLACE FUNCTION cg_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 2';
SELECT round(dx.sum(cg_f(v), 1000)) FROM cg_t;
SAVEPOINT s;
CREATE OR REPLACE FUNCTION cg_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 3';
SELECT round(dx.sum(cg_f(v), 1000)) FROM cg_t;
ROLLBACK TO SAVEPOINT s;
SELECT round(dx.sum(cg_f(v), 1000)) FROM cg_t;
EXECUTE cg_p;
COMMIT;
EXECUTE cg_p;

-- 4. trigger disabled, rows written, trigger enabled again, in one transaction: counted
BEGIN;
SELECT pg_current_xact_id() AS ddl_xid \gset
DO $$ BEGIN EXECUTE format('ALTER TABLE cg_t DISABLE TRIGGER %I', 'dx_contents_' || 'cg_t'::regclass::oid); END $$;
INSERT INTO cg_t VALUES (0, 5);
DO $$ BEGIN EXECUTE format('ALTER TABLE cg_t ENABLE ALWAYS TRIGGER %I', 'dx_contents_' || 'cg_t'::regclass::oid); END $$;
COMMIT;
SELECT count(*) AS ddl_counted FROM dx.contents_changes WHERE relid = 'cg_t'::regclass AND xid = :'ddl_xid';
-- CREATE TRIGGER on a member, and ATTACH PARTITION under a protected parent
CREATE FUNCTION cg_noop() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN RETURN NULL; END';
BEGIN;
SELECT pg_current_xact_id() AS ddl_xid \gset
CREATE TRIGGER cg_noop AFTER INSERT ON cg_t FOR EACH STATEMENT EXECUTE FUNCTION cg_noop();
COMMIT;
SELECT count(*) AS create_trigger_counted FROM dx.contents_changes WHERE relid = 'cg_t'::regclass AND xid = :'ddl_xid';
CREATE TABLE cg_tree (v int) PARTITION BY RANGE (v);
CREATE TABLE cg_tree_1 PARTITION OF cg_tree FOR VALUES FROM (0) TO (50);
SELECT dx.protect_table('cg_tree');
SELECT dx.set_column('cg_tree', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE TABLE cg_tree_2 (v int);
INSERT INTO cg_tree_2 VALUES (60);
BEGIN;
SELECT pg_current_xact_id() AS ddl_xid \gset
ALTER TABLE cg_tree ATTACH PARTITION cg_tree_2 FOR VALUES FROM (50) TO (100);
COMMIT;
SELECT count(*) AS attach_counted FROM dx.contents_changes WHERE relid = 'cg_tree'::regclass AND xid = :'ddl_xid';
-- an ALTER TABLE of a table in no protected tree counts nothing
CREATE TABLE cg_plain (x int);
BEGIN;
SELECT pg_current_xact_id() AS ddl_xid \gset
ALTER TABLE cg_plain ADD COLUMN y int;
COMMIT;
SELECT count(*) AS plain_counted FROM dx.contents_changes WHERE xid = :'ddl_xid';

DEALLOCATE ALL;
RESET dxpriv.test_seed;
RESET dxpriv.cache_lifetime;
