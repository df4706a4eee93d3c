-- Answer-cache freshness: a release is keyed on the contents version of its table, read under the
-- statement's snapshot. The same statement twice is replayed (free); after any write to the table
-- (INSERT, UPDATE, DELETE, TRUNCATE, COPY, a write to a partition) it is a new release, charged.
CREATE TABLE fresh (g int, v int);
INSERT INTO fresh SELECT i % 2, i % 50 FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('fresh');
SELECT dx.set_column('fresh', 'v', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}');
SELECT tgname = 'dx_contents_' || 'fresh'::regclass::oid AS named_for_table, tgenabled FROM pg_trigger WHERE tgrelid = 'fresh'::regclass;
CREATE ROLE dx_regress_fresh LOGIN;
SELECT dx.add_analyst('dx_regress_fresh');
SELECT dx.grant_budget('dx_regress_fresh', 'fresh', 100);
-- the analyst reads neither the versions nor the trigger function
SET ROLE dx_regress_fresh;
SELECT err('SELECT count(*) FROM dx.contents_changes');
SET dxpriv.epsilon = 0.5;
CREATE TEMP TABLE spent_log (step text, spent numeric);
CREATE FUNCTION pg_temp.note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO spent_log SELECT step, round(spent::numeric, 6) FROM dx.budgets WHERE "table" = 'fresh'::regclass $$;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('first');
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('same statement: replayed');
RESET ROLE;
UPDATE fresh SET v = 49 - v WHERE g = 0;
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after UPDATE: charged');
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('again: replayed');
RESET ROLE;
INSERT INTO fresh VALUES (1, 7);
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after INSERT: charged');
RESET ROLE;
DELETE FROM fresh WHERE v = 7 AND g = 1 AND ctid = (SELECT max(ctid) FROM fresh WHERE v = 7);
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after DELETE: charged');
RESET ROLE;
-- a statement that changes no row still counts as a write (conservative: charged)
UPDATE fresh SET v = v WHERE false;
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after empty UPDATE: charged');
RESET ROLE;
-- a rolled-back write changes nothing: replayed
BEGIN;
UPDATE fresh SET v = 0;
ROLLBACK;
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after ROLLBACK: replayed');
RESET ROLE;
-- a rewrite with the same rows (VACUUM FULL) and TRUNCATE + reload
VACUUM FULL fresh;
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after VACUUM FULL: charged');
RESET ROLE;
CREATE TEMP TABLE fresh_copy AS SELECT * FROM fresh;
TRUNCATE fresh;
INSERT INTO fresh SELECT * FROM fresh_copy;
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after TRUNCATE + reload: charged');
RESET ROLE;
-- COPY fires the trigger too
COPY fresh FROM PROGRAM 'echo 1,3' WITH (FORMAT csv);
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('after COPY: charged');
RESET ROLE;
-- a dropped or disabled trigger: never replayed (charged every time), until protect_table reinstalls it
ALTER TABLE fresh DISABLE TRIGGER ALL;
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('trigger disabled: charged');
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('trigger disabled, again: charged');
RESET ROLE;
UPDATE fresh SET v = 0 WHERE v = 1; -- not counted: the trigger is disabled
ALTER TABLE fresh ENABLE TRIGGER ALL; -- enabled on origin only: still not trusted
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('trigger not ALWAYS: charged');
RESET ROLE;
SELECT format('DROP TRIGGER %I ON fresh', tgname) AS drop_trigger FROM pg_trigger WHERE tgrelid = 'fresh'::regclass \gset
:drop_trigger;
SELECT dx.protect_table('fresh');
SET ROLE dx_regress_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('trigger reinstalled (writes were missed): charged');
SELECT sum(v) IS NOT NULL AS answered FROM fresh;
SELECT pg_temp.note('trigger reinstalled, again: replayed');
-- each step: what it cost (0 = replayed)
SELECT step, spent - coalesce(lag(spent) OVER (ORDER BY ord), 0) AS cost
FROM (SELECT step, spent, row_number() OVER () AS ord FROM spent_log) s ORDER BY ord;
RESET ROLE;

-- partitions: a write to one partition directly changes the version of the protected parent
CREATE TABLE fresh_p (k int, v int) PARTITION BY RANGE (k);
CREATE TABLE fresh_p1 PARTITION OF fresh_p FOR VALUES FROM (0) TO (10);
CREATE TABLE fresh_p2 PARTITION OF fresh_p FOR VALUES FROM (10) TO (20);
INSERT INTO fresh_p SELECT i % 20, i % 50 FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('fresh_p');
SELECT dx.set_column('fresh_p', 'v', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}');
SELECT dx.grant_budget('dx_regress_fresh', 'fresh_p', 100);
SELECT c.relname, count(t.tgname) AS triggers FROM pg_class c LEFT JOIN pg_trigger t ON t.tgrelid = c.oid
WHERE c.relname LIKE 'fresh_p%' GROUP BY c.relname ORDER BY c.relname;
SET ROLE dx_regress_fresh;
TRUNCATE spent_log;
CREATE FUNCTION pg_temp.note_p(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO spent_log SELECT step, round(spent::numeric, 6) FROM dx.budgets WHERE "table" = 'fresh_p'::regclass $$;
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('first');
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('replayed');
RESET ROLE;
UPDATE fresh_p2 SET v = 0 WHERE k = 15;
SET ROLE dx_regress_fresh;
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('after UPDATE of a partition: charged');
RESET ROLE;
-- a partition attached later has no trigger: not replayed until protect_table runs again
CREATE TABLE fresh_p3 (k int, v int);
ALTER TABLE fresh_p ATTACH PARTITION fresh_p3 FOR VALUES FROM (20) TO (30);
SET ROLE dx_regress_fresh;
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('new partition without trigger: charged');
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('again: charged');
RESET ROLE;
SELECT dx.protect_table('fresh_p');
SET ROLE dx_regress_fresh;
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('triggers reinstalled: charged');
SELECT count(*) IS NOT NULL AS answered FROM fresh_p;
SELECT pg_temp.note_p('again: replayed');
SELECT step, spent - coalesce(lag(spent) OVER (ORDER BY ord), 0) AS cost
FROM (SELECT step, spent, row_number() OVER () AS ord FROM spent_log) s ORDER BY ord;
RESET ROLE;
-- unprotecting removes the triggers
SELECT dx.unprotect_table('fresh_p');
SELECT count(*) AS triggers_left FROM pg_trigger WHERE tgname LIKE 'dx_contents_%' AND tgrelid IN
	('fresh_p'::regclass, 'fresh_p1'::regclass, 'fresh_p2'::regclass, 'fresh_p3'::regclass);
DROP TABLE fresh_p;
SELECT dx.unprotect_table('fresh');
DROP TABLE fresh;
DROP TABLE spent_log, fresh_copy;
DROP FUNCTION pg_temp.note(text), pg_temp.note_p(text);
SELECT dx.remove_analyst('dx_regress_fresh');
DROP ROLE dx_regress_fresh;
