-- The sealed path for elevated execution (issue 21, class 1; src/pg/elevated): an analyst owns a
-- schema that shadows the built-in functions, aggregates, operators and types dxpriv emits (same
-- names and signatures, earlier on her search_path); every shadow records its call. The catalog
-- lookups, releases, attribute-privacy reads and synthetic releases dxpriv runs for her (as the
-- extension or table owner) must call none of them, and her settings must not change what is read.
\set VERBOSITY default
SET dxpriv.test_seed = 31;
CREATE ROLE dx_seal_ana LOGIN;
GRANT CREATE ON DATABASE dxpriv_regress TO dx_seal_ana;
CREATE TABLE seal_src (id int, band int, sex text, income float8, female int);
INSERT INTO seal_src SELECT i, (i * 7) % 4, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END, 10 * (i % 9), i % 2
FROM generate_series(1, 300) AS i;
SELECT dx.protect_table('seal_src', 'Infinity');
SELECT dx.set_column('seal_src', 'band', '{"min": 0, "max": 3}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('seal_src', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('seal_src', 'income', '{"min": 0, "max": 100}', '{"type": "absolute", "scale": 10}');
SELECT dx.add_analyst('dx_seal_ana');
SELECT dx.grant_budget('dx_seal_ana', 'seal_src', 1000);
SELECT dx.grant_budget(current_user::regrole, 'seal_src', 1000);
SELECT dx.protect_attribute('seal_src', 'female', 0.2,
	'{"family": "gaussian", "attributes": ["income", "female"], "covariance": [[400, 5], [5, 0.25]]}',
	epsilon => 0.5, delta => 1e-5);
SELECT dx.grant_attribute_budget('dx_seal_ana', 'seal_src', 10, 1e-3);

SET ROLE dx_seal_ana;
CREATE SCHEMA ana;
CREATE TABLE ana.calls (what text, who name);
GRANT INSERT ON ana.calls TO PUBLIC;
CREATE FUNCTION ana.spy(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO ana.calls VALUES (what, current_user);
	RETURN true;
END $$;
-- every plain pg_catalog function and operator over common types, shadowed with its signature
DO $$
DECLARE
	p record;
	n int := 0;
	common regtype[] := ARRAY['int2', 'int4', 'int8', 'float4', 'float8', 'numeric', 'text', 'bool', 'bytea',
		'oid', 'regclass', 'name', 'jsonb', 'date', 'timestamptz', 'interval', 'bpchar', 'varchar',
		'int4[]', 'int8[]', 'float8[]', 'text[]', 'numeric[]']::regtype[];
BEGIN
	FOR p IN SELECT f.oid, f.proname, f.proargtypes::oid[]::regtype[] AS args, f.prorettype::regtype AS ret
	         FROM pg_proc f
	         WHERE f.pronamespace = 'pg_catalog'::regnamespace AND f.prokind = 'f' AND NOT f.proretset
	           AND f.provariadic = 0 AND f.pronargs BETWEEN 1 AND 3 AND f.prorettype = ANY (common)
	           AND f.proargtypes::oid[]::regtype[] <@ common LOOP
		EXECUTE format('CREATE FUNCTION ana.%I(%s) RETURNS %s LANGUAGE plpgsql AS %L', p.proname,
			array_to_string(p.args::text[], ', '), p.ret,
			format('BEGIN PERFORM ana.spy(%L); RETURN NULL; END', p.proname));
		n := n + 1;
	END LOOP;
	FOR p IN SELECT o.oprname, o.oprleft::regtype AS l, o.oprright::regtype AS r, o.oprresult::regtype AS ret,
	                row_number() OVER () AS k
	         FROM pg_operator o
	         WHERE o.oprnamespace = 'pg_catalog'::regnamespace AND o.oprleft = ANY (common)
	           AND o.oprright = ANY (common) AND o.oprresult = ANY (common) LOOP
		EXECUTE format('CREATE FUNCTION ana.op_%s(%s, %s) RETURNS %s LANGUAGE plpgsql AS %L', p.k, p.l, p.r, p.ret,
			format('BEGIN PERFORM ana.spy(%L); RETURN NULL; END', 'operator ' || p.oprname));
		EXECUTE format('CREATE OPERATOR ana.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = ana.op_%s)', p.oprname, p.l,
			p.r, p.k);
		n := n + 1;
	END LOOP;
	RAISE NOTICE 'shadowed more than 500 functions and operators: %', n > 500;
END $$;
-- the aggregates and types dxpriv's statements name
CREATE FUNCTION ana.agg_step(int8) RETURNS int8 LANGUAGE plpgsql AS $$ BEGIN PERFORM ana.spy('count(*)'); RETURN 0; END $$;
CREATE FUNCTION ana.agg_step1(int8, anyelement) RETURNS int8 LANGUAGE plpgsql AS
	$$ BEGIN PERFORM ana.spy('aggregate'); RETURN 0; END $$;
CREATE AGGREGATE ana.count(*) (SFUNC = ana.agg_step, STYPE = int8, INITCOND = '0');
CREATE AGGREGATE ana.count(anyelement) (SFUNC = ana.agg_step1, STYPE = int8, INITCOND = '0');
CREATE AGGREGATE ana.sum(anyelement) (SFUNC = ana.agg_step1, STYPE = int8, INITCOND = '0');
CREATE AGGREGATE ana.avg(anyelement) (SFUNC = ana.agg_step1, STYPE = int8, INITCOND = '0');
CREATE AGGREGATE ana.min(anyelement) (SFUNC = ana.agg_step1, STYPE = int8, INITCOND = '0');
CREATE AGGREGATE ana.max(anyelement) (SFUNC = ana.agg_step1, STYPE = int8, INITCOND = '0');
CREATE DOMAIN ana.text AS pg_catalog.text CHECK (ana.spy('domain text'));
CREATE DOMAIN ana.float8 AS pg_catalog.float8 CHECK (ana.spy('domain float8'));
CREATE DOMAIN ana.int8 AS pg_catalog.int8 CHECK (ana.spy('domain int8'));
CREATE DOMAIN ana.bytea AS pg_catalog.bytea CHECK (ana.spy('domain bytea'));
CREATE DOMAIN ana.jsonb AS pg_catalog.jsonb CHECK (ana.spy('domain jsonb'));
-- a shadow works where the search path reaches it (checked as the analyst, then cleared)
SET search_path = ana, pg_catalog, public;
SELECT 1 + 1 AS shadowed, count(*) AS shadow_count FROM (VALUES (1)) v;
SET search_path = pg_catalog, public;
SELECT count(*) > 0 AS shadows_fire FROM ana.calls;
DELETE FROM ana.calls;
-- settings that would change what dxpriv's statements read or print
SET search_path = ana, pg_catalog, public;
SET DateStyle = 'SQL, DMY';
SET IntervalStyle = 'sql_standard';
SET TimeZone = 'Pacific/Chatham';
SET extra_float_digits = -15;
SET transform_null_equals = on;

-- dxpriv's lookups, releases and explains as the analyst (noiseless checks only; her own
-- statements name pg_catalog's functions and operators explicitly)
SELECT dx.count(*) IS NOT NULL AS counted FROM public.seal_src;
SELECT band, dx.count(*) IS NOT NULL AS counted FROM public.seal_src GROUP BY band ORDER BY band;
SELECT dx.sum(income) IS NOT NULL AS summed, dx.avg(income) IS NOT NULL AS averaged FROM public.seal_src
WHERE sex OPERATOR(pg_catalog.=) 'F';
SELECT pg_catalog.count(*) IS NOT NULL AS plain_count, pg_catalog.sum(income) IS NOT NULL AS plain_sum FROM public.seal_src;
SELECT pg_catalog.count(*) AS explained_cells FROM dx.explain('SELECT dx.count(*) FROM public.seal_src GROUP BY sex');
SELECT dx.mode(band) IS NOT NULL AS mode_released FROM public.seal_src;
-- an attribute-privacy release: the table is read as its owner
SELECT dx.attr_avg('public.seal_src', 'income') IS NOT NULL AS attr_released;
-- a synthetic release: the histogram is read as the table owner, the table written as the analyst
SELECT dx.release_mwem('public.seal_src', ARRAY['sex', 'band'], 'marginals:1', 1.0, 'ana.seal_mwem', 5) IS NOT NULL
	AS released;
SELECT pg_catalog.count(*) AS points FROM ana.seal_mwem;
-- nothing the analyst owns ran
RESET search_path;
SELECT what, who FROM ana.calls ORDER BY 1, 2;
RESET ROLE;
RESET DateStyle;
RESET IntervalStyle;
RESET TimeZone;
RESET extra_float_digits;
RESET transform_null_equals;

-- the superuser's own paths (the DBA functions and attribute reads) with the shadows on the path
SET search_path = ana, pg_catalog, public;
SELECT dx.set_column('public.seal_src', 'income', '{"min": 0, "max": 100}', '{"type": "absolute", "scale": 10}');
SELECT dx.count(*) IS NOT NULL AS counted FROM public.seal_src;
RESET search_path;
SELECT what, who FROM ana.calls ORDER BY 1, 2;

-- the settings are restored after every sealed scope
SET ROLE dx_seal_ana;
SET search_path = ana, public;
SET DateStyle = 'SQL, DMY';
SELECT dx.count(*) IS NOT NULL AS counted FROM public.seal_src;
SELECT current_setting('search_path') AS search_path, current_setting('DateStyle') AS datestyle;
RESET ROLE;
RESET search_path;
RESET DateStyle;

SET client_min_messages = warning;
DROP SCHEMA ana CASCADE;
RESET client_min_messages;
SELECT dx.unprotect_table('seal_src');
DROP TABLE seal_src;
SELECT dx.remove_analyst('dx_seal_ana');
REVOKE CREATE ON DATABASE dxpriv_regress FROM dx_seal_ana;
DROP OWNED BY dx_seal_ana;
DROP ROLE dx_seal_ana;
