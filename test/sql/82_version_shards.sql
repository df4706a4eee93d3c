-- dx.version_shards(regclass) (issue 23, citusunit) on a server without Citus, and its bad inputs:
-- refused with 0A000 and a hint (local tables get their trigger from dx.protect_table), for a
-- protected table, an unprotected one and NULL; an analyst may not call it (42501). Nothing changes.
\set SHOW_CONTEXT never
CREATE TABLE vs_t (id int, person int);
INSERT INTO vs_t SELECT g, g % 7 FROM generate_series(1, 50) g;
SELECT dx.protect_table('vs_t', 1.0);
SELECT dx.set_privacy_unit('vs_t', 'person', 2);
CREATE ROLE dx_regress_vs;
SELECT dx.add_analyst('dx_regress_vs');
CREATE FUNCTION pg_temp.state_of(sql text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE s text; m text; h text;
BEGIN
	EXECUTE sql;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS s = RETURNED_SQLSTATE, m = MESSAGE_TEXT, h = PG_EXCEPTION_HINT;
	RETURN s || ': ' || m || ' (hint: ' || coalesce(nullif(h, ''), 'none') || ')';
END $$;
SELECT pg_temp.state_of('SELECT dx.version_shards(''vs_t'')');
SELECT pg_temp.state_of('SELECT dx.version_shards(''pg_class'')');
SELECT pg_temp.state_of('SELECT dx.version_shards(NULL)');
SELECT pg_temp.state_of('SELECT dx.version_shards(''no_such_table'')');
SET ROLE dx_regress_vs;
SELECT pg_temp.state_of('SELECT dx.version_shards(''vs_t'')');
RESET ROLE;
-- the table's local trigger is untouched
SELECT count(*) FROM pg_trigger WHERE tgrelid = 'vs_t'::regclass AND tgname LIKE 'dx_contents_%';
SELECT dx.unprotect_table('vs_t');
DROP TABLE vs_t;
DROP OWNED BY dx_regress_vs;
DROP ROLE dx_regress_vs;
