-- The catalog follows DDL (issue 21): event triggers installed by CREATE EXTENSION (as a superuser)
-- keep dx's rows consistent through DROP TABLE, RENAME TABLE, RENAME COLUMN, SET SCHEMA, ALTER
-- COLUMN TYPE and DROP COLUMN; temporary tables cannot be protected or public; protecting a table
-- takes PUBLIC's and analysts' grants away. After each DDL, dx.add_analyst works and a protected
-- query is still answered and charged (and a raw read still refused).
\set VERBOSITY default
SET dxpriv.cache_lifetime = 0; -- every check below is charged afresh
SELECT rolsuper AS installed_by_superuser FROM pg_roles r JOIN pg_extension e ON e.extowner = r.oid WHERE e.extname = 'dxpriv';
SELECT evtname, evtevent, evttags, evtenabled FROM pg_event_trigger WHERE evtname LIKE 'dx\_%' ORDER BY 1;
-- the trigger functions: SECURITY DEFINER (plpgsql) with a fixed search_path, not executable by PUBLIC
SELECT p.oid::regprocedure AS fn, p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'EXECUTE') AS public_exec
FROM pg_proc p WHERE p.pronamespace = 'dx'::regnamespace AND (p.proname LIKE '\_ddl\_%' OR p.proname LIKE '\_on\_%')
ORDER BY 1;

CREATE ROLE ddl30_analyst;
CREATE ROLE ddl30_member;
GRANT ddl30_analyst TO ddl30_member;
CREATE ROLE ddl30_other;
CREATE TABLE ddl30 (id int, age int, sex text, pid int, note text);
INSERT INTO ddl30 SELECT i, i % 90, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END, i, 'n' || i FROM generate_series(1, 500) i;
-- grants that must not survive protection: PUBLIC, an analyst role, a member of an analyst role
GRANT SELECT ON ddl30 TO PUBLIC;
GRANT SELECT, INSERT ON ddl30 TO ddl30_analyst, ddl30_member, ddl30_other;
GRANT SELECT (note) ON ddl30 TO ddl30_analyst;
SELECT dx.add_analyst('ddl30_analyst');
SELECT dx.protect_table('ddl30', 1.0);
SELECT pg_catalog.array_to_string(ARRAY(SELECT a::text FROM unnest(relacl) a ORDER BY 1), ' ') AS acl FROM pg_class WHERE oid = 'ddl30'::regclass;
SELECT has_column_privilege('ddl30_analyst', 'ddl30', 'note', 'SELECT') AS analyst_note;
-- a grant made after protection is the owner's explicit choice (README "Analysts": BI tools); adding
-- another analyst does not take it away, protecting the table again does
GRANT SELECT (age) ON ddl30 TO ddl30_analyst;
SELECT dx.add_analyst('ddl30_other');
SELECT has_column_privilege('ddl30_analyst', 'ddl30', 'age', 'SELECT') AS analyst_age_after_add_analyst,
	has_table_privilege('ddl30_other', 'ddl30', 'SELECT') AS other_after_add_analyst;
SELECT dx.remove_analyst('ddl30_other');
GRANT SELECT, INSERT ON ddl30 TO ddl30_other;
SELECT dx.protect_table('ddl30', 1.0);
SELECT has_column_privilege('ddl30_analyst', 'ddl30', 'age', 'SELECT') AS analyst_age_after_protect,
	has_table_privilege('ddl30_other', 'ddl30', 'SELECT') AS other_after_protect;
SELECT dx.set_column('ddl30', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}');
SELECT dx.set_column('ddl30', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete"}');
SELECT dx.grant_budget('ddl30_analyst', 'ddl30', 100);

-- check(rel, col): the analyst's protected query is answered and charged once; a raw read refused
CREATE FUNCTION ddl30_check(rel text, col text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	before bigint;
	answered boolean;
	raw text;
BEGIN
	SELECT count(*) INTO before FROM dx.ledger WHERE role = 'ddl30_analyst'::regrole;
	SET LOCAL ROLE ddl30_analyst;
	EXECUTE format('SELECT dx.count(*) IS NOT NULL FROM %s WHERE %I < 50', rel, col) INTO answered;
	raw := err(format('SELECT %I FROM %s LIMIT 1', col, rel));
	RESET ROLE;
	RETURN format('answered %s, charged %s, raw read %s', answered,
		(SELECT count(*) FROM dx.ledger WHERE role = 'ddl30_analyst'::regrole) - before, split_part(raw, ':', 1));
END $$;
SELECT ddl30_check('ddl30', 'age');

-- RENAME COLUMN: the declaration follows the new name, and so does a median session over it
SELECT dx.grant_budget(current_user::regrole, 'ddl30', 10);
SELECT dx.median_session_open('ddl30', ARRAY['age', 'sex'], 'marginals:1', 0.5) AS sid \gset
ALTER TABLE ddl30 RENAME COLUMN age TO years;
SELECT relid, column_name FROM dx.protected_columns WHERE relid = 'ddl30'::regclass ORDER BY 2;
SELECT columns FROM dx.median_sessions WHERE id = :sid;
SELECT status FROM dx.median_session_query(:sid, 2);
SELECT ddl30_check('ddl30', 'years');
SELECT err('SELECT dx.count(*) FROM ddl30 WHERE note = ''x''') AS undeclared_still_refused;
SELECT dx.add_analyst('ddl30_other');
SELECT dx.remove_analyst('ddl30_other');

-- RENAME TABLE and SET SCHEMA: the catalog references the table by oid
ALTER TABLE ddl30 RENAME TO ddl30_people;
CREATE SCHEMA ddl30_s;
GRANT USAGE ON SCHEMA ddl30_s TO ddl30_analyst;
ALTER TABLE ddl30_people SET SCHEMA ddl30_s;
SELECT relid, column_name FROM dx.protected_columns WHERE relid = 'ddl30_s.ddl30_people'::regclass ORDER BY 2;
SELECT "table", granted FROM dx.budgets WHERE role = 'ddl30_analyst'::regrole;
SELECT ddl30_check('ddl30_s.ddl30_people', 'years');
ALTER SCHEMA ddl30_s RENAME TO ddl30_t;
SELECT ddl30_check('ddl30_t.ddl30_people', 'years');
SELECT dx.add_analyst('ddl30_other');
SELECT dx.remove_analyst('ddl30_other');

-- ALTER COLUMN TYPE of a declared column: refused; of an undeclared one: allowed
ALTER TABLE ddl30_t.ddl30_people ALTER COLUMN years TYPE bigint;
ALTER TABLE ddl30_t.ddl30_people ALTER COLUMN sex TYPE varchar(1), ALTER COLUMN note TYPE varchar(20);
ALTER TABLE ddl30_t.ddl30_people ALTER COLUMN note TYPE varchar(20);
SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = 'ddl30_t.ddl30_people'::regclass AND attname = 'years';
SELECT ddl30_check('ddl30_t.ddl30_people', 'years');

-- the privacy unit column follows a rename too, and cannot be dropped or retyped
SELECT dx.set_privacy_unit('ddl30_t.ddl30_people', 'pid', 2);
ALTER TABLE ddl30_t.ddl30_people RENAME COLUMN pid TO person;
SELECT relid, unit_column FROM dx.privacy_units WHERE relid::text LIKE 'ddl30%';
ALTER TABLE ddl30_t.ddl30_people DROP COLUMN person;
ALTER TABLE ddl30_t.ddl30_people ALTER COLUMN person TYPE bigint;
SELECT ddl30_check('ddl30_t.ddl30_people', 'years');
SELECT dx.unset_privacy_unit('ddl30_t.ddl30_people');

-- DDL by someone who does not own the table: the trigger refuses before touching the catalog
SET ROLE ddl30_analyst;
ALTER TABLE ddl30_t.ddl30_people RENAME COLUMN years TO age;
ALTER TABLE ddl30_t.ddl30_people ALTER COLUMN years TYPE int8;
DROP TABLE ddl30_t.ddl30_people;
RESET ROLE;
SELECT column_name FROM dx.protected_columns WHERE relid = 'ddl30_t.ddl30_people'::regclass ORDER BY 1;

-- DROP COLUMN of a declared column: its declaration goes (and a column group containing it)
ALTER TABLE ddl30_t.ddl30_people DROP COLUMN sex;
SELECT column_name FROM dx.protected_columns WHERE relid = 'ddl30_t.ddl30_people'::regclass ORDER BY 1;
SELECT ddl30_check('ddl30_t.ddl30_people', 'years');

-- column groups follow renames and go with a dropped member
CREATE TABLE ddl30_geo (x int, y int, z int);
INSERT INTO ddl30_geo SELECT i % 10, (i * 3) % 10, i FROM generate_series(1, 100) i;
SELECT dx.protect_table('ddl30_geo', 1.0);
SELECT dx.set_column_group('ddl30_geo', '{x,y}', '{"grid": [{"min": 0, "max": 9}, {"min": 0, "max": 9}]}', '{"type": "l1", "scale": 1}');
ALTER TABLE ddl30_geo RENAME COLUMN y TO lat;
SELECT columns FROM dx.protected_column_groups WHERE relid = 'ddl30_geo'::regclass;
ALTER TABLE ddl30_geo ALTER COLUMN lat TYPE bigint;
ALTER TABLE ddl30_geo DROP COLUMN lat;
SELECT count(*) AS groups_left FROM dx.protected_column_groups WHERE relid = 'ddl30_geo'::regclass;

-- columns of an attribute-privacy model: renaming, retyping and dropping them are refused
CREATE TABLE ddl30_staff (salary float8, female int, age int, extra int);
INSERT INTO ddl30_staff SELECT 40 + i % 60, i % 2, 20 + i % 45, i FROM generate_series(1, 200) i;
SELECT dx.protect_table('ddl30_staff', 'Infinity');
SELECT dx.set_column('ddl30_staff', 'salary', '{"min": 0, "max": 200}', '{"type": "absolute", "scale": 10}');
SELECT dx.protect_attribute('ddl30_staff', 'female', 0.2, '{"family": "gaussian", "attributes": ["salary", "female", "age"],
	"covariance": [[400, 5, 10], [5, 0.25, 0.01], [10, 0.01, 150]]}');
ALTER TABLE ddl30_staff RENAME COLUMN age TO years;
ALTER TABLE ddl30_staff RENAME COLUMN salary TO pay;
ALTER TABLE ddl30_staff DROP COLUMN female;
ALTER TABLE ddl30_staff ALTER COLUMN age TYPE bigint;
ALTER TABLE ddl30_staff RENAME COLUMN extra TO other;
ALTER TABLE ddl30_staff DROP COLUMN other;
SELECT attribute, attributes FROM dx.attribute_policies WHERE relid = 'ddl30_staff'::regclass;
DROP TABLE ddl30_staff;
SELECT count(*) AS stale_attribute_policies FROM dx.attribute_policies a WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = a.relid);

-- DROP TABLE: policy, declarations, budgets and public rows go; ledger rows stay (history)
SELECT count(*) AS ledger_rows_before FROM dx.ledger WHERE role = 'ddl30_analyst'::regrole;
DROP TABLE ddl30_t.ddl30_people;
DROP TABLE ddl30_geo;
SELECT count(*) AS policies FROM dx.protected_tables p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid);
SELECT count(*) AS grants FROM dx.budget_grants WHERE role = 'ddl30_analyst'::regrole;
SELECT count(*) AS ledger_rows_after FROM dx.ledger WHERE role = 'ddl30_analyst'::regrole;
SELECT status AS session_over_dropped_table FROM dx.median_sessions WHERE id = :sid;
SELECT dx.add_analyst('ddl30_other');
SELECT dx.remove_analyst('ddl30_other');
-- DROP SCHEMA ... CASCADE drops protected and public tables alike
CREATE SCHEMA ddl30_u;
CREATE TABLE ddl30_u.a (v int);
CREATE TABLE ddl30_u.b (v int);
SELECT dx.protect_table('ddl30_u.a');
SELECT dx.set_public('ddl30_u.b');
DROP SCHEMA ddl30_u CASCADE;
SELECT (SELECT count(*) FROM dx.protected_tables p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid)) AS stale_policies,
	(SELECT count(*) FROM dx.public_tables p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid)) AS stale_public;

-- rows of a table dropped without the trigger (as a version without it left them): dx.add_analyst
-- removes them instead of failing, and dx.unprotect_table removes them by oid
CREATE TABLE ddl30_stale (v int);
CREATE TABLE ddl30_stale2 (v int);
SELECT dx.protect_table('ddl30_stale');
SELECT dx.protect_table('ddl30_stale2');
ALTER EVENT TRIGGER dx_sql_drop DISABLE;
CREATE TEMP TABLE ddl30_oids AS SELECT 'ddl30_stale2'::regclass::oid AS o;
DROP TABLE ddl30_stale, ddl30_stale2;
ALTER EVENT TRIGGER dx_sql_drop ENABLE ALWAYS;
SELECT count(*) AS stale FROM dx.protected_tables p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid);
SELECT dx.unprotect_table((SELECT o FROM ddl30_oids)::regclass);
SELECT regexp_replace(err('SELECT dx.unprotect_table(' || (SELECT o FROM ddl30_oids) || '::oid::regclass)'), '[0-9]{4,}', 'N') AS again;
SELECT dx.add_analyst('ddl30_other');
SELECT count(*) AS stale FROM dx.protected_tables p WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = p.relid);
SELECT dx.remove_analyst('ddl30_other');
DROP TABLE ddl30_oids;

-- temporary tables: neither protected nor public (their rows would dangle after the session)
SET ROLE ddl30_analyst;
CREATE TEMP TABLE ddl30_tmp (v int);
SELECT err('SELECT dx.protect_table(''pg_temp.ddl30_tmp'')') AS protect_temp;
SELECT err('SELECT dx.set_public(''pg_temp.ddl30_tmp'')') AS public_temp;
DROP TABLE ddl30_tmp;
RESET ROLE;
CREATE TEMP TABLE ddl30_tmp (v int);
SELECT err('SELECT dx.protect_table(''pg_temp.ddl30_tmp'')') AS protect_temp_superuser;
SELECT count(*) AS protected_temp FROM dx.protected_tables p JOIN pg_class c ON c.oid = p.relid WHERE c.relpersistence = 't';
DROP TABLE ddl30_tmp;

DROP FUNCTION ddl30_check(text, text);
SELECT dx.remove_analyst('ddl30_analyst');
DROP SCHEMA ddl30_t;
DROP OWNED BY ddl30_analyst, ddl30_member, ddl30_other;
DROP ROLE ddl30_member, ddl30_analyst, ddl30_other;
