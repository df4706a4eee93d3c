-- Setup: the extension, tables with deterministic data, roles.
CREATE EXTENSION dxpriv;
SELECT extversion FROM pg_extension WHERE extname = 'dxpriv';

CREATE TABLE people (
	id int PRIMARY KEY,
	age int,
	sex text,
	native text,
	income numeric,
	visit date,
	note text
);
INSERT INTO people
SELECT i,
	CASE WHEN i = 1 THEN 150 WHEN i = 2 THEN -3 WHEN i = 3 THEN NULL ELSE 18 + (i * 7) % 60 END,
	CASE WHEN i % 2 = 0 THEN 'M' WHEN i = 5 THEN 'X' ELSE 'F' END,
	CASE WHEN i % 3 = 0 THEN 'N' ELSE 'Y' END,
	(i * 37) % 1000 * 10,
	date '2024-01-01' + (i * 13) % 366,
	'row ' || i
FROM generate_series(1, 1000) AS i;

CREATE ROLE dx_regress_analyst;
CREATE ROLE dx_regress_other;
GRANT SELECT ON people TO dx_regress_analyst, dx_regress_other;

-- err(q): runs q and returns its SQLSTATE, message and hint (every bad input must have an errcode, a
-- lowercase message and a hint), or 'no error'. Used by the test files that list bad inputs.
CREATE FUNCTION public.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	msg text;
	hint text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RETURN SQLSTATE || ': ' || msg || CASE WHEN hint <> '' THEN ' | ' || hint ELSE '' END;
END $$;

-- plan_has(q, pattern): whether a line of EXPLAIN (VERBOSE, COSTS OFF) of q is LIKE pattern.
CREATE FUNCTION public.plan_has(q text, pattern text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false; BEGIN
	FOR l IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || q LOOP
		found := found OR l LIKE pattern;
	END LOOP;
	RETURN found;
END $$;

-- one_pass_matches(q, native): 'matches' when the float8 answer of q (on a noiseless table) with
-- dxpriv.one_pass on and with it off both equal that of native, else the three values.
CREATE FUNCTION public.one_pass_matches(q text, native text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE a float8; b float8; n float8; BEGIN
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	EXECUTE q INTO a;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'off', true);
	EXECUTE q INTO b;
	PERFORM pg_catalog.set_config('dxpriv.one_pass', 'on', true);
	EXECUTE native INTO n;
	RETURN CASE WHEN a = n AND b = n THEN 'matches' ELSE format('DIFFERENT: on %s, off %s, native %s', a, b, n) END;
END $$;

-- onepass_hist(b): every point met by a serialised one-pass histogram (dx._onepass_serialize,
-- executor/onepass_format.h) and its count. Bytes: version, group int4, dense byte, points int8,
-- n int8, then version 1: n (point, count) int8 pairs; version 2: n (point, carry) int8 pairs, then a
-- uint16 per point (its count modulo 65,536). onepass_int8_at(b, o): the int8 at byte offset o.
CREATE FUNCTION public.onepass_int8_at(b bytea, o bigint) RETURNS bigint LANGUAGE sql AS $$
SELECT ('x' || encode(substring(b FROM o::int + 1 FOR 8), 'hex'))::bit(64)::bigint $$;
CREATE FUNCTION public.onepass_hist(b bytea) RETURNS TABLE (point bigint, n bigint) LANGUAGE sql AS $$
SELECT public.onepass_int8_at(b, 22 + 16 * k), public.onepass_int8_at(b, 30 + 16 * k)
FROM generate_series(0, public.onepass_int8_at(b, 14) - 1) k WHERE get_byte(b, 0) = 1
UNION ALL
SELECT u, n FROM (
	SELECT u, get_byte(b, (22 + 16 * c + 2 * u)::int) * 256 + get_byte(b, (23 + 16 * c + 2 * u)::int)
	          + coalesce((SELECT public.onepass_int8_at(b, 30 + 16 * k) FROM generate_series(0, c - 1) k
	                      WHERE public.onepass_int8_at(b, 22 + 16 * k) = u), 0) AS n
	FROM (SELECT public.onepass_int8_at(b, 14) AS c, public.onepass_int8_at(b, 6) AS points) h,
	     generate_series(0, h.points - 1) u
	WHERE get_byte(b, 0) = 2) d
WHERE n > 0 $$;
