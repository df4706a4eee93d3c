-- The unit profile build (executor/unit_profile.cpp) reads the protected table inside the sealed path
-- (elevated/sealed_scan.h): as the table's owner, in a security-restricted operation, with the sealed
-- settings (search_path pg_catalog, pg_temp; DateStyle, extra_float_digits, lc_numeric, ... fixed).
-- The unit type's hash function is the DBA's choice (its default hash opclass) and may be written in
-- SQL or PL/pgSQL: it runs there too, in the build and in the per-row dx._unit_keep (and in the hash
-- pass's hash and equality), never under the analyst's search path or settings. Here the DBA's hash
-- function of json units records who called it and under which settings, and its result depends on
-- the search path (an unqualified lower()) and on extra_float_digits (a float8 printed as text): an
-- analyst with a hostile search path (a schema of theirs with a lower(text) before pg_catalog) and
-- hostile settings gets the same kept rows and the same seeded answers as a clean session.
SET client_min_messages = warning;
CREATE ROLE dx_regress_sb LOGIN;
SELECT dx.add_analyst('dx_regress_sb');
CREATE SCHEMA sb_evil AUTHORIZATION dx_regress_sb;
CREATE TABLE public.sb_calls (who text, owner_ok boolean, search_path text, datestyle text, efd text, lc_numeric text);
GRANT INSERT, SELECT ON public.sb_calls TO PUBLIC; -- (whoever runs the hash may record: the test shows who did)
-- the DBA's json hash opclass: equality on the text, hash of the lowered text and of a float printed as text
CREATE FUNCTION public.sb_json_eq(a json, b json) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.sb_calls SELECT current_user, current_user = 'dx_regress_sb_owner',
		current_setting('search_path'), current_setting('DateStyle'), current_setting('extra_float_digits'),
		current_setting('lc_numeric');
	RETURN lower(a::text) = lower(b::text);
END $$;
CREATE FUNCTION public.sb_json_hash(v json) RETURNS int4 LANGUAGE sql IMMUTABLE AS
$$ SELECT pg_catalog.hashtext(v::text) $$;
CREATE FUNCTION public.sb_json_hash_ext(v json, seed int8) RETURNS int8 LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.sb_calls SELECT current_user, current_user = 'dx_regress_sb_owner',
		current_setting('search_path'), current_setting('DateStyle'), current_setting('extra_float_digits'),
		current_setting('lc_numeric');
	RETURN pg_catalog.hashtextextended(lower(v::text) || ((v ->> 'w')::float8)::text, seed);
END $$;
CREATE OPERATOR public.= (LEFTARG = json, RIGHTARG = json, FUNCTION = public.sb_json_eq);
CREATE OPERATOR CLASS public.sb_json_ops DEFAULT FOR TYPE json USING hash AS
	OPERATOR 1 public.=(json, json), FUNCTION 1 public.sb_json_hash(json), FUNCTION 2 public.sb_json_hash_ext(json, int8);
-- the table belongs to another role than the superuser running the test
CREATE ROLE dx_regress_sb_owner;
-- person p has 1 + (p * p) % 9 visits; its json carries a float whose text depends on extra_float_digits
-- (1 + p / 3.0: with extra_float_digits = -15 the units 1 + p / 3.0 of one integer part print alike)
CREATE TABLE sb_visits (person json, age int);
INSERT INTO sb_visits
SELECT json_build_object('p', p, 'w', 1 + p / 3.0), (p * 7 + i * 11) % 100
FROM generate_series(1, 120) p, generate_series(1, 1 + (p * p) % 9) i;
ALTER TABLE sb_visits OWNER TO dx_regress_sb_owner;
SELECT dx.protect_table('sb_visits', 'Infinity');
SELECT dx.set_column('sb_visits', 'age', '{"min":0,"max":100}', '{"type":"none"}');
SELECT dx.grant_budget('dx_regress_sb', 'sb_visits', 1e6);
SELECT dx.set_privacy_unit('sb_visits', 'person', 3);
-- the rule: each unit keeps its 3 rows of smallest dx._unit_rank (under the test seed, the profile's
-- rank key): their count (sum over units of min(rows, 3)) and their sum of ages (which depends on
-- the table's OID, part of each row's rank)
SET dxpriv.test_seed = 7474;
SELECT count(*) AS rule_n, sum(age) AS rule_s
FROM (SELECT age, row_number() OVER (PARTITION BY person::text ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r
      FROM sb_visits v) s WHERE r <= 3 \gset
RESET dxpriv.test_seed;
SELECT :rule_n = sum(least(3, 1 + (p * p) % 9)) AS rule_count_ok FROM generate_series(1, 120) p;
-- the analyst's schema: a lower(text) that would merge every unit into one and leak the values
CREATE FUNCTION sb_evil.lower(t text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	RAISE WARNING 'sb_evil.lower saw %', t;
	RETURN 'one unit';
END $$;
ALTER FUNCTION sb_evil.lower(text) OWNER TO dx_regress_sb;
-- one statement as the analyst under the test seed, after a write (a new contents version: the
-- profile is built by this statement); profiles 'on' (build + dx._unit_keep) or 'off' (hash pass)
CREATE FUNCTION pg_temp.sb_run(session text, profiles text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	UPDATE sb_visits SET age = age WHERE false;
	PERFORM dx.clear_cache(NULL);
	PERFORM pg_catalog.set_config('dxpriv.unit_profiles', profiles, false);
	PERFORM pg_catalog.set_config('dxpriv.test_seed', '7474', false);
END $$;

-- 1. a clean session (each answer: the rule's count of kept rows and their sum)
SELECT pg_temp.sb_run('clean', 'on');
SET ROLE dx_regress_sb;
SELECT 'clean' AS session, 'profile' AS bounding, dx.count(*) = :rule_n AS rule_n, dx.sum(age) = :rule_s AS rule_s FROM sb_visits;
RESET ROLE;
SELECT pg_temp.sb_run('clean', 'off');
SET ROLE dx_regress_sb;
SELECT 'clean' AS session, 'hash pass' AS bounding, dx.count(*) = :rule_n AS rule_n, dx.sum(age) = :rule_s AS rule_s FROM sb_visits;
RESET ROLE;
TRUNCATE public.sb_calls;

-- 2. a hostile session: the analyst's schema before pg_catalog, and formatting settings changed
SELECT pg_temp.sb_run('hostile', 'on');
SET ROLE dx_regress_sb;
SET search_path = sb_evil, pg_catalog, public;
SET extra_float_digits = -15;
SET DateStyle = 'SQL, DMY';
SET lc_numeric = 'C.utf8';
SELECT lower('X') AS analysts_lower; -- their own statements do see their lower()
SELECT 'hostile' AS session, 'profile' AS bounding, dx.count(*) = :rule_n AS rule_n, dx.sum(age) = :rule_s AS rule_s FROM sb_visits;
RESET ROLE;
SELECT pg_temp.sb_run('hostile', 'off');
SET ROLE dx_regress_sb;
SELECT 'hostile' AS session, 'hash pass' AS bounding, dx.count(*) = :rule_n AS rule_n, dx.sum(age) = :rule_s AS rule_s FROM sb_visits;
RESET ROLE;
RESET search_path;
RESET extra_float_digits;
RESET DateStyle;
RESET lc_numeric;
RESET dxpriv.unit_profiles;
RESET dxpriv.test_seed;

-- the statements that sort or group the stored units in the analyst's statement (count_units, the
-- sort bounding) would call the DBA's PL/pgSQL equality there, under her settings: refused (0A000)
SET dxpriv.unit_bounding = 'sort';
SET ROLE dx_regress_sb;
SELECT err('SELECT dx.count(*) FROM sb_visits') AS sort_bounding;
RESET ROLE;
RESET dxpriv.unit_bounding;
SET ROLE dx_regress_sb;
SELECT err('SELECT dx.count_units(person) FROM sb_visits') AS count_units;
RESET ROLE;
-- every call of the DBA's functions in the hostile session ran with the sealed settings; the
-- profile's build and dx._unit_keep as the table's owner, the hash pass (the analyst's own
-- statement, no owner switch) as the analyst
SELECT who, owner_ok, search_path, datestyle, efd, lc_numeric, count(*) > 0 AS called
FROM public.sb_calls GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1, 2, 3, 4, 5, 6;

DROP TABLE sb_visits;
DROP OPERATOR CLASS public.sb_json_ops USING hash;
DROP OPERATOR FAMILY public.sb_json_ops USING hash;
DROP OPERATOR public.= (json, json);
DROP FUNCTION public.sb_json_eq(json, json), public.sb_json_hash(json), public.sb_json_hash_ext(json, int8);
DROP TABLE public.sb_calls;
DROP SCHEMA sb_evil CASCADE;
DROP ROLE dx_regress_sb_owner;
