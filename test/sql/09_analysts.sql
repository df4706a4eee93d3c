-- Analysts: validated aggregates only, plain SQL rewritten, side channels closed, catalogs visible.
\set VERBOSITY default
CREATE ROLE dx_regress_bi LOGIN;
GRANT SELECT ON people TO dx_regress_bi;         -- taken away by dx.add_analyst
CREATE TABLE open_lookup (code text, label text);
INSERT INTO open_lookup VALUES ('M', 'male'), ('F', 'female');
GRANT SELECT ON open_lookup TO dx_regress_bi;
-- an immutable user function that would leak the values it sees
CREATE FUNCTION leak(int) RETURNS boolean LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RAISE NOTICE 'age %', $1; RETURN true; END $$;
CREATE FUNCTION leak_pattern() RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '^3' $$;
SELECT dx.add_analyst('dx_regress_bi');
SELECT dx.grant_budget('dx_regress_bi', 'people', 100);
SELECT has_table_privilege('dx_regress_bi', 'people', 'SELECT') AS still_has_select;
-- errors
SELECT dx.add_analyst(NULL);
SELECT dx.add_analyst('postgres');
SELECT dx.remove_analyst('dx_regress_other');

SET dxpriv.test_seed = 5;
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_bi;
SELECT dx.is_analyst();
-- plain aggregates are rewritten into d_X-private ones and charged
SELECT count(*) > 0 AS answered FROM people;
SELECT sex, count(*) > 0 AS answered FROM people GROUP BY sex ORDER BY sex;
SELECT "public"."people"."sex" AS "sex", count(*) > 0 AS "count" FROM "public"."people"
GROUP BY "public"."people"."sex" ORDER BY "public"."people"."sex" ASC LIMIT 2000;
SELECT sex, pg_typeof(avg(age)) AS avg_type, pg_typeof(sum(income)) AS sum_type, pg_typeof(count(age)) AS count_type
FROM people GROUP BY sex ORDER BY sex LIMIT 1;
-- raw data paths are refused
SELECT * FROM people LIMIT 1;
TABLE people;
SELECT age FROM people;
SELECT DISTINCT sex FROM people;
SELECT min(age) FROM people;
SELECT count(*) FROM people p JOIN open_lookup l ON p.sex = l.code;
SELECT count(*) FROM people WHERE sex IN (SELECT code FROM open_lookup);
WITH x AS (SELECT * FROM people) SELECT count(*) FROM x;
SELECT count(*) FROM (SELECT * FROM people) s;
SELECT count(*) FROM people WHERE note = 'row 1';
SELECT count(*) FROM people WHERE age > random();
SELECT count(*) FROM people WHERE leak(age);
SELECT count(*) FROM people WHERE age::text ~ leak_pattern();
EXPLAIN SELECT count(*) FROM people;
EXPLAIN ANALYZE SELECT count(*) FROM people;
COPY people TO STDOUT;
COPY (SELECT * FROM people) TO STDOUT; -- (COPY of a release is answered: 41_bi_shapes)
CREATE TEMP TABLE stolen AS SELECT count(*) FROM people;
SELECT count(*) INTO TEMP stolen2 FROM people;
CREATE TEMP VIEW sneaky AS SELECT count(*) FROM people;
-- a parameter is bound before analysis: each EXECUTE is analysed with its value (age > 200 matches
-- no declared age: an exact 0); an undeclared column is refused at PREPARE already
PREPARE pa(int) AS SELECT count(*) FROM people WHERE age > $1;
EXECUTE pa(200);
DEALLOCATE pa;
PREPARE pn(text) AS SELECT count(*) FROM people WHERE note = $1;
-- side channels
-- (size estimates read as unknown: relpages 0, reltuples -1; 41_bi_shapes)
SELECT reltuples FROM pg_class WHERE relname = 'people';
SELECT relname, relpages, reltuples, relallvisible FROM pg_class WHERE relname = 'people';
SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'people';
SELECT * FROM pg_stats WHERE tablename = 'people';
SELECT pg_relation_size('people');
SELECT pg_total_relation_size('people');
SELECT pg_stat_get_live_tuples('people'::regclass);
-- catalog introspection still works
SELECT relname, relkind FROM pg_class WHERE relname = 'people';
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'people'::regclass AND attnum > 0 ORDER BY attnum;
SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'people' ORDER BY ordinal_position;
SELECT table_schema, table_name FROM information_schema.tables WHERE table_name = 'people';
-- public tables stay readable
SELECT count(*) FROM open_lookup;
-- EXPLAIN and stored results through a prepared statement
PREPARE p AS SELECT count(*) FROM people WHERE age = 30;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE p;
EXPLAIN EXECUTE p;
CREATE TEMP TABLE stolen3 AS EXECUTE p;
EXPLAIN ANALYZE CREATE TEMP TABLE stolen4 AS EXECUTE p;
DEALLOCATE p;
-- refusals name what was refused
SELECT dx.ibu(age, 0, 120, 1.0, 'geometric', 10) FROM people;
SELECT count(*) FROM people p CROSS JOIN LATERAL (SELECT p.age) s;
INSERT INTO open_lookup SELECT count(*)::text, 'n' FROM people;
SELECT count(*) FROM people GROUP BY ();
-- log and debug messages (auto_explain, debug_print_plan) would describe the data
SET client_min_messages = log;
SELECT count(*) FROM people;
RESET client_min_messages;
-- a cursor is charged when it opens
BEGIN;
DECLARE c CURSOR FOR SELECT sex, count(*) > 0 AS answered FROM people GROUP BY sex ORDER BY sex;
FETCH 1 FROM c;
COMMIT;
RESET ROLE;
-- partitions and inheritance children are protected by their protected ancestor, also when
-- attached or created after dx.protect_table
CREATE TABLE parted (region int, age int) PARTITION BY LIST (region);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
INSERT INTO parted SELECT 1, i % 90 FROM generate_series(1, 50) i;
SELECT dx.protect_table('parted');
SELECT dx.set_column('parted', 'region', '{"values": [1, 2]}', '{"type": "discrete"}');
SELECT dx.grant_budget('dx_regress_bi', 'parted', 100);
CREATE TABLE parted_2 (region int, age int);
INSERT INTO parted_2 VALUES (2, 40);
ALTER TABLE parted ATTACH PARTITION parted_2 FOR VALUES IN (2);
CREATE TABLE people_child () INHERITS (people);
-- a protected child under an unprotected parent
CREATE TABLE open_parent (region int);
CREATE TABLE closed_child () INHERITS (open_parent);
SELECT dx.protect_table('closed_child');
GRANT SELECT ON parted_1, parted_2, people_child, open_parent TO PUBLIC;
SET ROLE dx_regress_bi;
SELECT * FROM parted_1;
SELECT count(*) FROM parted_2;
SELECT count(*) FROM people_child;
SELECT region FROM parted;
SELECT count(*) IS NOT NULL AS answered FROM parted WHERE region = 2;
SELECT count(*) IS NOT NULL AS answered FROM ONLY parted;
SELECT count(*) FROM open_parent;
SELECT count(*) FROM ONLY open_parent;
CREATE TEMP TABLE mine () INHERITS (people);
RESET ROLE;
SELECT dx.unprotect_table('parted'), dx.unprotect_table('closed_child');
DROP TABLE people_child, parted, open_parent, closed_child;
RESET dxpriv.test_seed;
SELECT count(*) AS analyst_ledger_rows, sum(epsilon) AS spent FROM dx.ledger WHERE role = 'dx_regress_bi'::regrole;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT dx.remove_analyst('dx_regress_bi');
