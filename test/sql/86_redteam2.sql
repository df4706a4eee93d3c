-- Red-team findings of session 16 (redteam2), each check fails if its hole is open.
-- 1. dxpriv's event triggers fire under session_replication_role = replica: an event
-- trigger that is not ENABLE ALWAYS is skipped in that mode (PostgreSQL's rule, like an ordinary
-- trigger's), which replication and restore tools set. Before the fix, a superuser's RENAME COLUMN
-- in that mode was not followed: the unit policy kept the old name, so a later rename of the row id
-- to it made every row its own unit (a person's 600 rows all counted where k = 3 keeps 3), and
-- subscription DDL renewed no contents version. Each check below fails if a trigger is skipped.
-- 2. The columns of a typed table (CREATE TABLE ... OF type) are renamed, retyped and dropped by ALTER
-- TYPE ... CASCADE, not ALTER TABLE: the same holes without replica mode.
-- 3. A statement on a parent (a routed INSERT, an UPDATE or DELETE through it) fires the parent's
-- statement triggers only, not its partitions' or children's: a partition or child protected on its
-- own kept its contents version, so its cached unit profile was served stale (every new row of a
-- unit kept, 550 rows counted where the rule keeps 502). A protected table below an UNPROTECTED
-- parent (no contents trigger there) has no version at all now: its profile is built per statement.
\set SHOW_CONTEXT never
SET dxpriv.cache_lifetime = 0;
SELECT evtname, evtenabled FROM pg_event_trigger WHERE evtname LIKE 'dx\_%' ORDER BY 1;
CREATE TABLE rr86 (id int, person int, ward text);
INSERT INTO rr86 SELECT g, CASE WHEN g <= 600 THEN 1 ELSE g END, 'a' FROM generate_series(1, 1000) g;
SELECT dx.protect_table('rr86', 'Infinity');
SELECT dx.set_column('rr86', 'ward', '{"values": ["a", "b"]}', '{"type": "none"}');
SELECT dx.set_privacy_unit('rr86', 'person', 3);
SELECT dx.grant_budget(current_user::regrole, 'rr86', 1e9);
SELECT dx.count(*) AS bounded FROM rr86; -- 400 persons of one row, person 1 keeps 3
-- the unit column renamed, then the row id renamed to its old name, in replica mode
SET session_replication_role = replica;
ALTER TABLE rr86 RENAME COLUMN person TO pid;
ALTER TABLE rr86 RENAME COLUMN id TO person;
RESET session_replication_role;
SELECT unit_column FROM dx.privacy_units WHERE relid = 'rr86'::regclass;
SELECT dx.count(*) AS still_bounded FROM rr86;
-- dropping the unit column is refused in replica mode too
SET session_replication_role = replica;
ALTER TABLE rr86 DROP COLUMN pid;
RESET session_replication_role;
-- a protected table dropped in replica mode leaves no policy row behind
CREATE TABLE rr86_gone (id int, person int);
SELECT dx.protect_table('rr86_gone', 1.0);
SELECT 'rr86_gone'::regclass::oid AS gone_oid \gset
SET session_replication_role = replica;
DROP TABLE rr86_gone;
RESET session_replication_role;
SELECT count(*) AS policy_rows_left FROM dx.protected_tables WHERE relid::oid = :gone_oid;
-- subscription DDL in replica mode renews the contents version of every protected table
CREATE SUBSCRIPTION rr86_sub CONNECTION 'dbname=rr86_nowhere' PUBLICATION rr86_pub WITH (connect = false);
SELECT count(*) AS changes_before FROM dx.contents_changes WHERE relid = 'rr86'::regclass \gset
SET session_replication_role = replica;
ALTER SUBSCRIPTION rr86_sub SET (slot_name = NONE);
RESET session_replication_role;
SELECT count(*) - :changes_before AS renewed_by_alter FROM dx.contents_changes WHERE relid = 'rr86'::regclass;
SELECT count(*) AS changes_before FROM dx.contents_changes WHERE relid = 'rr86'::regclass \gset
SET session_replication_role = replica;
DROP SUBSCRIPTION rr86_sub;
RESET session_replication_role;
SELECT count(*) - :changes_before AS renewed_by_drop FROM dx.contents_changes WHERE relid = 'rr86'::regclass;
DROP TABLE rr86;
-- a typed table (and a table inheriting from it): ALTER TYPE ... RENAME ATTRIBUTE ... CASCADE renames
-- their columns; the unit policy follows, so the row id renamed to the unit's old name stays the id
CREATE TYPE rr86_row AS (id int, person int, ward text);
CREATE TABLE rr86_typed OF rr86_row;
CREATE TABLE rr86_child (extra int) INHERITS (rr86_typed);
INSERT INTO rr86_typed SELECT g, CASE WHEN g <= 600 THEN 1 ELSE g END, 'a' FROM generate_series(1, 1000) g;
INSERT INTO rr86_child SELECT g, CASE WHEN g <= 600 THEN 1 ELSE g END, 'a', 0 FROM generate_series(1, 1000) g;
SELECT dx.protect_table(t, 'Infinity'), dx.set_column(t, 'ward', '{"values": ["a", "b"]}', '{"type": "none"}'),
       dx.set_privacy_unit(t, 'person', 3), dx.grant_budget(current_user::regrole, t, 1e9)
FROM unnest(ARRAY['rr86_typed', 'rr86_child']::regclass[]) t;
SELECT dx.count(*) AS typed FROM ONLY rr86_typed;
SELECT dx.count(*) AS child FROM rr86_child;
ALTER TYPE rr86_row RENAME ATTRIBUTE person TO pid CASCADE;
ALTER TYPE rr86_row RENAME ATTRIBUTE id TO person CASCADE;
SELECT relid, unit_column FROM dx.privacy_units WHERE relid IN ('rr86_typed'::regclass, 'rr86_child'::regclass) ORDER BY 1;
SELECT dx.count(*) AS typed FROM ONLY rr86_typed;
SELECT dx.count(*) AS child FROM rr86_child;
-- the unit column and a declared column: refused like ALTER TABLE's DROP COLUMN and ALTER COLUMN TYPE
ALTER TYPE rr86_row DROP ATTRIBUTE pid CASCADE;
ALTER TYPE rr86_row ALTER ATTRIBUTE ward TYPE varchar CASCADE;
-- the same in replica mode
SET session_replication_role = replica;
ALTER TYPE rr86_row RENAME ATTRIBUTE ward TO area CASCADE;
RESET session_replication_role;
SELECT relid, column_name FROM dx.protected_columns WHERE relid IN ('rr86_typed'::regclass, 'rr86_child'::regclass) ORDER BY 1;
DROP TABLE rr86_child, rr86_typed;
DROP TYPE rr86_row;
-- a partition and an inheritance child protected on their own, beside their protected parent: each
-- write through the parent renews their contents version, so each noiseless count is the rule's
CREATE TABLE rr86_pv (person int, ward text) PARTITION BY LIST (ward);
CREATE TABLE rr86_pv_a PARTITION OF rr86_pv FOR VALUES IN ('a');
CREATE TABLE rr86_pv_b PARTITION OF rr86_pv FOR VALUES IN ('b');
INSERT INTO rr86_pv SELECT g, CASE WHEN g % 2 = 0 THEN 'a' ELSE 'b' END FROM generate_series(1, 1000) g;
CREATE TABLE rr86_ip (person int, ward text);
CREATE TABLE rr86_ic () INHERITS (rr86_ip);
INSERT INTO rr86_ic SELECT g, 'a' FROM generate_series(1, 500) g;
SELECT dx.protect_table(t, 'Infinity'), dx.set_column(t, 'ward', '{"values": ["a", "b"]}', '{"type": "none"}'),
       dx.set_privacy_unit(t, 'person', 3), dx.grant_budget(current_user::regrole, t, 1e9)
FROM unnest(ARRAY['rr86_pv', 'rr86_pv_a', 'rr86_ip', 'rr86_ic']::regclass[]) t;
CREATE FUNCTION pg_temp.rule(t regclass) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
	EXECUTE format('SELECT sum(least(n, 3)) FROM (SELECT count(*) AS n FROM %s GROUP BY person) s', t) INTO n;
	RETURN n;
END $$;
SELECT dx.count(*) AS partition_before FROM rr86_pv_a; -- (its profile cached)
SELECT dx.count(*) AS child_before FROM rr86_ic;
INSERT INTO rr86_pv SELECT 2, 'a' FROM generate_series(1, 50); -- routed into rr86_pv_a
UPDATE rr86_ip SET person = 4 WHERE person BETWEEN 6 AND 200;  -- rr86_ic's rows, through the parent
SELECT dx.count(*) AS partition_after_insert, pg_temp.rule('rr86_pv_a') AS rule FROM rr86_pv_a;
SELECT dx.count(*) AS child_after_update, pg_temp.rule('rr86_ic') AS rule FROM rr86_ic;
UPDATE rr86_pv SET person = 4 WHERE ward = 'a' AND person BETWEEN 6 AND 200;
DELETE FROM rr86_ip WHERE person = 4;
SELECT dx.count(*) AS partition_after_update, pg_temp.rule('rr86_pv_a') AS rule FROM rr86_pv_a;
SELECT dx.count(*) AS child_after_delete, pg_temp.rule('rr86_ic') AS rule FROM rr86_ic;
SELECT dx.count(*) AS parent, pg_temp.rule('rr86_pv') AS rule FROM rr86_pv;
-- the answer cache keys on the same version: a routed INSERT is a new release, not a replay
SET dxpriv.cache_lifetime = 3600;
SELECT dx.count(*) FROM rr86_pv_a;
SELECT dx.count(*) FROM rr86_pv_a; -- (replayed)
INSERT INTO rr86_pv SELECT 3, 'a' FROM generate_series(1, 20);
SELECT dx.count(*) FROM rr86_pv_a;
SELECT pg_temp.rule('rr86_pv_a') AS rule;
SET dxpriv.cache_lifetime = 0;
DROP TABLE rr86_pv, rr86_ip, rr86_ic;
-- below an unprotected inheritance parent and an unprotected partitioned root: writes through them
-- fire no dx trigger, so these tables have no contents version (each statement builds the profile)
CREATE TABLE rr86_up (person int, ward text);
CREATE TABLE rr86_tc () INHERITS (rr86_up);
INSERT INTO rr86_tc SELECT g, 'a' FROM generate_series(1, 500) g;
CREATE TABLE rr86_uroot (person int, ward text) PARTITION BY LIST (ward);
CREATE TABLE rr86_pp PARTITION OF rr86_uroot FOR VALUES IN ('a', 'b') PARTITION BY LIST (ward);
CREATE TABLE rr86_pp_a PARTITION OF rr86_pp FOR VALUES IN ('a');
INSERT INTO rr86_uroot SELECT g, 'a' FROM generate_series(1, 500) g;
SELECT dx.protect_table(t, 'Infinity'), dx.set_column(t, 'ward', '{"values": ["a", "b"]}', '{"type": "none"}'),
       dx.set_privacy_unit(t, 'person', 3), dx.grant_budget(current_user::regrole, t, 1e9)
FROM unnest(ARRAY['rr86_tc', 'rr86_pp']::regclass[]) t;
SELECT dx.count(*) AS child_before FROM rr86_tc;
SELECT dx.count(*) AS partition_before FROM rr86_pp;
UPDATE rr86_up SET person = 4 WHERE person BETWEEN 6 AND 200;
INSERT INTO rr86_uroot SELECT 2, 'a' FROM generate_series(1, 50);
SELECT dx.count(*) AS child_after, pg_temp.rule('rr86_tc') AS rule FROM rr86_tc;
SELECT dx.count(*) AS partition_after, pg_temp.rule('rr86_pp') AS rule FROM rr86_pp;
DROP TABLE rr86_up, rr86_tc, rr86_uroot;
