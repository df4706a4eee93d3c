-- Attacks on dx_tree_change and on the plan dependencies of cached plans (review3).
-- 1. DDL that changes a protected tree's shape without a lock that stops readers must count as a
--    write of the tree's protected tables in its own transaction (a row of dx.contents_changes with
--    the DDL's xid): CREATE TABLE ... INHERITS takes only ShareUpdateExclusiveLock on the parent, as
--    ATTACH PARTITION does, and a child created and filled in one transaction has no contents
--    trigger yet (before: no row, the old version over the new rows). Also its forms under CREATE
--    SCHEMA, foreign tables, PARTITION OF, and ALTER TABLE forms on a child / partition. Each
--    "counted" below is 0 when the form is not counted.
-- 2. A cached plan whose analysis evaluated a function is analysed again when the function is
--    dropped and created again (a new OID) or when the function of a cast it uses is redefined, and
--    a stable built-in (current_date) is evaluated again when a setting moves its value; a function
--    used only in a row-level security policy takes effect in a cached plan.
CREATE TABLE r3_t (g int, v int);
INSERT INTO r3_t SELECT i % 3, i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('r3_t');
SELECT dx.set_column('r3_t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
SELECT dx.grant_budget(current_user::regrole, 'r3_t', 1e9);
SET dxpriv.test_seed = 5;
SET dxpriv.cache_lifetime = 0;

-- 1. tree shape changes
-- an inheritance child created and filled in one transaction
BEGIN;
SELECT pg_current_xact_id() AS x \gset
CREATE TABLE r3_child () INHERITS (r3_t);
INSERT INTO r3_child VALUES (0, 7);
SELECT count(*) AS inherits_counted FROM dx.contents_changes WHERE relid = 'r3_t'::regclass AND xid = :'x';
COMMIT;
-- the same as a subcommand of CREATE SCHEMA (its event trigger tag is CREATE SCHEMA)
BEGIN;
SELECT pg_current_xact_id() AS x \gset
CREATE SCHEMA r3_s CREATE TABLE r3_child2 () INHERITS (public.r3_t);
SELECT count(*) AS schema_counted FROM dx.contents_changes WHERE relid = 'r3_t'::regclass AND xid = :'x';
ROLLBACK;
-- a foreign table as a child (CREATE FOREIGN TABLE ... INHERITS)
CREATE FOREIGN DATA WRAPPER r3_fdw;
CREATE SERVER r3_srv FOREIGN DATA WRAPPER r3_fdw;
BEGIN;
SELECT pg_current_xact_id() AS x \gset
CREATE FOREIGN TABLE r3_ft () INHERITS (r3_t) SERVER r3_srv;
SELECT count(*) AS foreign_counted FROM dx.contents_changes WHERE relid = 'r3_t'::regclass AND xid = :'x';
ROLLBACK;
-- ALTER TABLE forms on the child (not on the protected table itself). (NO INHERIT is not counted:
-- the child has left pg_inherits when the event trigger runs; it holds AccessExclusiveLock on the
-- child, which a reader of the old shape locks, so that DDL has no window.)
ALTER TABLE r3_child NO INHERIT r3_t;
BEGIN;
SELECT pg_current_xact_id() AS x \gset
INSERT INTO r3_child VALUES (0, 8);
ALTER TABLE r3_child INHERIT r3_t;
SELECT count(*) AS inherit_counted FROM dx.contents_changes WHERE relid = 'r3_t'::regclass AND xid = :'x';
COMMIT;
-- a partition of a protected partitioned table: created, its trigger disabled, written
CREATE TABLE r3_pt (v int) PARTITION BY RANGE (v);
CREATE TABLE r3_pt0 PARTITION OF r3_pt FOR VALUES FROM (0) TO (50);
SELECT dx.protect_table('r3_pt');
SELECT dx.set_column('r3_pt', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
BEGIN;
SELECT pg_current_xact_id() AS x \gset
CREATE TABLE r3_pt1 PARTITION OF r3_pt FOR VALUES FROM (50) TO (100);
SELECT count(*) AS partition_of_counted FROM dx.contents_changes WHERE relid = 'r3_pt'::regclass AND xid = :'x';
COMMIT;
BEGIN;
SELECT pg_current_xact_id() AS x \gset
ALTER TABLE r3_pt1 DISABLE TRIGGER ALL;
INSERT INTO r3_pt1 VALUES (60);
ALTER TABLE r3_pt1 ENABLE TRIGGER ALL;
SELECT count(*) AS partition_trigger_counted FROM dx.contents_changes WHERE relid = 'r3_pt'::regclass AND xid = :'x';
COMMIT;
-- tables in no protected tree stay uncounted
BEGIN;
SELECT pg_current_xact_id() AS x \gset
CREATE TABLE r3_other (a int);
CREATE TABLE r3_other_child () INHERITS (r3_other);
CREATE TEMP TABLE r3_tmp (a int);
CREATE SCHEMA r3_s2 CREATE TABLE r3_plain (a int);
SELECT count(*) AS unrelated_counted FROM dx.contents_changes WHERE xid = :'x';
ROLLBACK;

-- 2. cached plans
-- a function dropped and created again with the same signature (a new OID)
CREATE FUNCTION r3_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 0';
PREPARE r3_p AS SELECT round(dx.sum(r3_f(v), 1000)) FROM ONLY r3_t;
EXECUTE r3_p;
DROP FUNCTION r3_f(int);
CREATE FUNCTION r3_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT 1';
EXECUTE r3_p;
-- the function of a cast to a composite type
CREATE TYPE r3_ty AS (a int);
CREATE FUNCTION r3_cast(x int) RETURNS r3_ty LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN ROW(0)::r3_ty; END';
CREATE CAST (int AS r3_ty) WITH FUNCTION r3_cast(int);
PREPARE r3_c AS SELECT round(dx.sum((v::r3_ty).a, 1000)) FROM ONLY r3_t;
EXECUTE r3_c;
CREATE OR REPLACE FUNCTION r3_cast(x int) RETURNS r3_ty LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN ROW(1)::r3_ty; END';
EXECUTE r3_c;
-- a function used only in a row-level security policy of the table (a non-superuser owner, FORCE)
CREATE ROLE dx_regress_r3owner;
CREATE TABLE r3_rls (v int);
INSERT INTO r3_rls SELECT i % 100 FROM generate_series(1, 3000) AS i;
SELECT dx.protect_table('r3_rls');
SELECT dx.set_column('r3_rls', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
CREATE FUNCTION r3_pol(x int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN true; END';
ALTER TABLE r3_rls ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
CREATE POLICY r3_p ON r3_rls USING (r3_pol(v));
ALTER TABLE r3_rls OWNER TO dx_regress_r3owner;
SELECT dx.grant_budget('dx_regress_r3owner'::regrole, 'r3_rls', 1e9);
SET ROLE dx_regress_r3owner;
PREPARE r3_r AS SELECT round(dx.sum(v, 1000)) FROM r3_rls;
EXECUTE r3_r;
RESET ROLE;
CREATE OR REPLACE FUNCTION r3_pol(x int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS 'BEGIN RETURN x < 10; END';
SET ROLE dx_regress_r3owner;
EXECUTE r3_r;
RESET ROLE;
DEALLOCATE ALL;
-- a stable built-in evaluated on the declared points (current_date, which follows TimeZone: Kiritimati
-- and Pago_Pago are always at least one day apart) is evaluated again by a cached plan and a PL/pgSQL
-- statement, as by a fresh statement
SET TimeZone = 'UTC';
CREATE TABLE r3_days (d date);
INSERT INTO r3_days SELECT current_date + k FROM generate_series(-3, 3) AS k, generate_series(1, 100);
SELECT dx.protect_table('r3_days');
SELECT dx.set_column('r3_days', 'd', format('{"min": "%s", "max": "%s"}', current_date - 10, current_date + 10)::jsonb,
                     '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'r3_days', 1e9);
CREATE FUNCTION r3_before_today() RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE
	r numeric;
BEGIN
	SELECT round(count(*)) INTO r FROM r3_days WHERE d < current_date;
	RETURN r;
END $$;
SET dxpriv.epsilon = 1000; -- (count(*) rewritten at this epsilon: noise far below 0.5)
SET TimeZone = 'Pacific/Kiritimati';
PREPARE r3_d AS SELECT round(count(*)) AS n FROM r3_days WHERE d < current_date;
EXECUTE r3_d \gset first_
SELECT r3_before_today() AS first_fn \gset
SET TimeZone = 'Pacific/Pago_Pago';
EXECUTE r3_d \gset cached_
SELECT r3_before_today() AS cached_fn \gset
SELECT round(count(*)) AS n FROM r3_days WHERE d < current_date \gset fresh_
SELECT :'cached_n' = :'fresh_n' AS cached_is_fresh, :'cached_fn' = :'fresh_n' AS plpgsql_is_fresh,
       :'first_n' <> :'fresh_n' AS the_date_moved, :'first_fn' = :'first_n' AS plpgsql_was_the_same;
RESET TimeZone;
RESET dxpriv.epsilon;
DEALLOCATE ALL;
