-- dx.contents_changes merged (dx.compact_contents_changes, and one writing transaction in 64 through
-- the contents trigger): the rows of ended transactions become one row per table and no contents
-- version changes, so a statement released before the merge is replayed after it (not charged),
-- a write after it is a new release (charged), and a transaction's own row is never merged.
CREATE TABLE compacted (g int, v int);
INSERT INTO compacted SELECT i % 2, i % 50 FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('compacted');
SELECT dx.set_column('compacted', 'v', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}');
CREATE ROLE dx_regress_compact LOGIN;
SELECT dx.add_analyst('dx_regress_compact');
SELECT dx.grant_budget('dx_regress_compact', 'compacted', 100);
SET ROLE dx_regress_compact;
CREATE TEMP TABLE spent_log (step text, spent numeric);
CREATE FUNCTION pg_temp.note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO spent_log SELECT step, round(spent::numeric, 6) FROM dx.budgets
   WHERE "table" = 'compacted'::regclass $$;
RESET ROLE;
-- 40 writing transactions (each statement of \gexec commits on its own)
\set ECHO none
\o /dev/null
SELECT format('UPDATE compacted SET v = v WHERE g = %s', i % 2) FROM generate_series(1, 40) AS i \gexec
\o
\set ECHO all
-- (41: those 40 and dx.protect_table's own ALTER TABLE ... ENABLE ALWAYS TRIGGER, counted by the
-- dx_tree_change event trigger)
SELECT count(*) > 1 AS several_rows, sum(n) AS transactions FROM dx.contents_changes WHERE relid = 'compacted'::regclass;
SET ROLE dx_regress_compact;
SET dxpriv.epsilon = 0.5;
SELECT sum(v) IS NOT NULL AS answered FROM compacted;
SELECT pg_temp.note('before the merge: charged');
RESET ROLE;
SELECT dx.compact_contents_changes('compacted'::regclass) > 0 AS merged;
SELECT count(*) AS rows, sum(n) AS transactions FROM dx.contents_changes WHERE relid = 'compacted'::regclass;
-- nothing left to merge: a second call removes nothing
SELECT dx.compact_contents_changes('compacted'::regclass) AS merged_again;
SET ROLE dx_regress_compact;
SELECT sum(v) IS NOT NULL AS answered FROM compacted;
SELECT pg_temp.note('after the merge: replayed');
RESET ROLE;
-- the merge inside a writing transaction keeps that transaction's own row (it has not ended)
BEGIN;
UPDATE compacted SET v = v WHERE g = 0;
SELECT dx.compact_contents_changes() >= 0 AS called;
SELECT count(*) AS rows, sum(n) AS transactions,
       count(*) FILTER (WHERE xid = pg_current_xact_id()) AS own_rows
FROM dx.contents_changes WHERE relid = 'compacted'::regclass;
COMMIT;
SET ROLE dx_regress_compact;
SELECT sum(v) IS NOT NULL AS answered FROM compacted;
SELECT pg_temp.note('after a write: charged');
SELECT sum(v) IS NOT NULL AS answered FROM compacted;
SELECT pg_temp.note('again: replayed');
RESET ROLE;
SELECT step, spent, spent > coalesce(lag(spent) OVER (ORDER BY ctid), 0) AS charged FROM spent_log ORDER BY ctid;
-- the trigger merges by itself: after 1280 more writing transactions the table holds fewer than 1000
-- rows (it fails only when none of the last 1000 or so merged: (63/64)^1000, about 10^-7)
\set ECHO none
\o /dev/null
SELECT format('UPDATE compacted SET v = v WHERE g = %s', i % 2) FROM generate_series(1, 1280) AS i \gexec
\o
\set ECHO all
SELECT count(*) < 1000 AS merged_by_writers, sum(n) AS transactions FROM dx.contents_changes WHERE relid = 'compacted'::regclass;
-- bad calls: not under repeatable read; an analyst may not call it; an unknown relid merges nothing
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT err('SELECT dx.compact_contents_changes()');
ROLLBACK;
SET ROLE dx_regress_compact;
SELECT err('SELECT dx.compact_contents_changes()');
SELECT err('SELECT count(*) FROM dx.contents_changes');
RESET ROLE;
SELECT dx.compact_contents_changes(4294967295::oid) AS unknown_relid;
SELECT dx.unprotect_table('compacted');
DROP TABLE compacted;
DROP TABLE spent_log;
DROP FUNCTION pg_temp.note(text);
DROP ROLE dx_regress_compact;
