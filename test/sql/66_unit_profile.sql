-- Unit profiles (executor/unit_profile.cpp) and their foundation, the contents version.
--
-- Part 1: the contents version counts a writing transaction once (its dx.contents_changes row is
-- inserted ON CONFLICT DO NOTHING), so INSERT; SELECT; INSERT; SELECT in ONE transaction read the
-- same version twice and the second SELECT replayed the first one's answer (stale, free). The
-- version now also holds the transaction's xid and the snapshot's command id once it wrote.
CREATE TABLE up_fresh (g int, v int);
INSERT INTO up_fresh SELECT i % 2, i % 50 FROM generate_series(1, 400) AS i;
SELECT dx.protect_table('up_fresh');
SELECT dx.set_column('up_fresh', 'v', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}');
CREATE ROLE dx_regress_up LOGIN;
SELECT dx.add_analyst('dx_regress_up');
SELECT dx.grant_budget('dx_regress_up', 'up_fresh', 100);
CREATE TEMP TABLE up_spent (step text, spent numeric);
GRANT ALL ON up_spent TO dx_regress_up;
CREATE FUNCTION pg_temp.up_note(step text) RETURNS void LANGUAGE sql AS
$$ INSERT INTO up_spent SELECT step, round(spent::numeric, 6) FROM dx.budgets WHERE "table" = 'up_fresh'::regclass $$;
SET dxpriv.epsilon = 0.5;
BEGIN;
INSERT INTO up_fresh VALUES (1, 1);
SET LOCAL ROLE dx_regress_up;
SELECT pg_temp.up_note('in a transaction, before');
SELECT sum(v) IS NOT NULL AS answered FROM up_fresh;
SELECT sum(v) IS NOT NULL AS answered FROM up_fresh; -- no command between: replayed (one charge)
SELECT pg_temp.up_note('after its first write, the same statement twice: charged once');
RESET ROLE;
INSERT INTO up_fresh VALUES (1, 2);
SET LOCAL ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM up_fresh;
SELECT pg_temp.up_note('after a second write of the same transaction: charged');
RESET ROLE;
SAVEPOINT s1;
DELETE FROM up_fresh WHERE v = 2;
ROLLBACK TO SAVEPOINT s1;
SET LOCAL ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM up_fresh;
SELECT pg_temp.up_note('after a rolled-back savepoint: charged (conservative)');
RESET ROLE;
COMMIT;
SET ROLE dx_regress_up;
SELECT sum(v) IS NOT NULL AS answered FROM up_fresh;
SELECT pg_temp.up_note('after commit: charged (another version)');
SELECT sum(v) IS NOT NULL AS answered FROM up_fresh;
SELECT pg_temp.up_note('again: replayed');
RESET ROLE;
-- what each step cost, in units of one release (0: replayed); any command of a writing
-- transaction (the notes' INSERT too) gives a new version: conservative
SELECT step, round((spent - lag(spent) OVER (ORDER BY ord)) / 0.5, 3) AS releases
FROM (SELECT step, spent, row_number() OVER () AS ord FROM up_spent) s ORDER BY ord;
