-- redteam3: attacks on the session-17 features. (A) The Small shape's inline matching of short
-- enumerated columns (short_enum_index, row_point.h) against the domain indexer's (DomainIndexer::
-- index) for column types regress 84 does not cover: a domain over text, an enum type, citext, a
-- nondeterministic ICU collation, unconstrained bpchar, "char", bytea with NUL bytes, int8 values
-- equal in their low 32 bits, date, float8 with -0 and NaN, boolean. Two tables hold the same rows:
-- sa declares at most 8 labels per column of at most 8 bytes (matched inline as words), sb the
-- same labels in the same order followed by padding labels no row holds (9 labels, one of 9 bytes:
-- no short keys, so the indexer's own loop maps every row). Every noiseless answer over sa must
-- equal sb's, serially, in parallel, with the GROUP BY folded and not. Stored values that equal a
-- label only under the type's equality (citext 'm', 'A' under a case-insensitive collation, 'M '
-- in bpchar, -0 and NaN in float8) are not labels: both map them to the first label (the byte rule,
-- doc/dba-guide.md), which section (A2) pins against a native reference of that rule.
SET dxpriv.cache_lifetime = 0;
SET datestyle = 'ISO, MDY'; -- (the GROUP BY keys below compared as text)
CREATE EXTENSION IF NOT EXISTS citext;
CREATE DOMAIN rt_text AS text;
CREATE TYPE rt_mood AS ENUM ('sad', 'ok', 'happy', 'e4', 'e5', 'e6', 'e7', 'e8', 'e9');
CREATE COLLATION rt_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE sa (a int, d rt_text, en rt_mood, ci citext, nd text COLLATE rt_ci, bp bpchar, ch "char",
                 ba bytea, i8 int8, dt date, f8 float8, bo bool);
INSERT INTO sa SELECT i % 10,
 (ARRAY['F', 'M', 'X', 'm', 'M ', '', 'MMMMMMMMMM', NULL])[1 + i % 8],
 (ARRAY['sad', 'ok', 'happy', NULL])[1 + i % 4]::rt_mood,
 (ARRAY['F', 'f', 'M', 'm', 'MM', NULL])[1 + i % 6],
 (ARRAY['a', 'A', 'b', 'B', 'c', 'ａ'])[1 + i % 6],
 (ARRAY['M', 'M ', 'F', 'F  ', 'X', ''])[1 + i % 6],
 (ARRAY['a', 'b', 'c', 'd', NULL])[1 + i % 5]::"char",
 (ARRAY['\x00', '\x0000', '\x0001', '\x', '\x0000000000000000', '\x000000000000000000'])[1 + i % 6]::bytea,
 (ARRAY[0, 4294967296, -1, 1, 8589934592, -4294967296])[1 + i % 6]::int8,
 date '2020-01-01' + i % 4,
 (ARRAY[0.0, -0.0, 1.5, 'NaN', 2, '-Infinity'])[1 + i % 6]::float8,
 CASE WHEN i % 7 = 0 THEN NULL ELSE i % 3 = 0 END
FROM generate_series(1, 3000) i;
-- long and compressed values of the varlena columns (never labels)
INSERT INTO sa (a, d, ci, nd, bp, ba) VALUES (5, repeat('M', 3000), repeat('M', 3000), repeat('a', 3000), repeat('M', 3000), decode(repeat('00', 3000), 'hex'));
CREATE TABLE sb AS SELECT * FROM sa;
ALTER TABLE sb ALTER COLUMN nd TYPE text COLLATE rt_ci;
SELECT dx.protect_table(t, 'Infinity') FROM (VALUES ('sa'::regclass), ('sb')) AS p(t);
SELECT dx.set_column('sa', c::name, s::jsonb, '{"type": "none"}'), dx.set_column('sb', c::name, coalesce(l, s)::jsonb, '{"type": "none"}')
FROM (VALUES ('a', '{"min": 0, "max": 9}', NULL),
 ('d', '{"values": ["F", "M", "X", ""]}', '{"values": ["F", "M", "X", "", "p5", "p6", "p7", "p8", "ninebytes"]}'),
 ('en', '{"values": ["sad", "ok", "happy"]}', '{"values": ["sad", "ok", "happy", "e4", "e5", "e6", "e7", "e8", "e9"]}'),
 ('ci', '{"values": ["F", "M"]}', '{"values": ["F", "M", "p3", "p4", "p5", "p6", "p7", "p8", "ninebytes"]}'),
 ('nd', '{"values": ["a", "b"]}', '{"values": ["a", "b", "p3", "p4", "p5", "p6", "p7", "p8", "ninebytes"]}'),
 ('bp', '{"values": ["M", "F", ""]}', '{"values": ["M", "F", "", "p4", "p5", "p6", "p7", "p8", "ninebytes"]}'),
 ('ch', '{"values": ["a", "b", "c"]}', '{"values": ["a", "b", "c", "p", "q", "r", "s", "t", "u"]}'),
 ('ba', '{"values": ["\\x00", "\\x0001", "\\x", "\\x0000000000000000"]}',
        '{"values": ["\\x00", "\\x0001", "\\x", "\\x0000000000000000", "\\x05", "\\x06", "\\x07", "\\x08", "\\x090909090909090909"]}'),
 ('i8', '{"values": [0, -1, 4294967296]}', '{"values": [0, -1, 4294967296, 4, 5, 6, 7, 8, 9]}'),
 ('dt', '{"values": ["2020-01-01", "2020-01-02"]}',
        '{"values": ["2020-01-01", "2020-01-02", "2021-01-03", "2021-01-04", "2021-01-05", "2021-01-06", "2021-01-07", "2021-01-08", "2021-01-09"]}'),
 ('f8', '{"values": [1.5, 0]}', '{"values": [1.5, 0, 3, 4, 5, 6, 7, 8, 9]}'),
 ('bo', '{"values": [true, false]}', NULL)) AS t(c, s, l);
SELECT dx.grant_budget(current_user::regrole, t, 1e9) FROM (VALUES ('sa'::regclass), ('sb')) AS p(t);
CREATE FUNCTION pg_temp.against(q text, ref text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE n bigint; rows_dx bigint; BEGIN
	PERFORM pg_catalog.set_config('client_min_messages', 'warning', true);
	DROP TABLE IF EXISTS pg_temp.got, pg_temp.want;
	EXECUTE 'CREATE TEMP TABLE got AS ' || q;
	EXECUTE 'CREATE TEMP TABLE want AS ' || ref;
	SELECT count(*) INTO n FROM ((SELECT * FROM got EXCEPT ALL SELECT * FROM want)
	                              UNION ALL (SELECT * FROM want EXCEPT ALL SELECT * FROM got)) d;
	SELECT count(*) INTO rows_dx FROM got;
	RETURN CASE WHEN n = 0 THEN 'equal' ELSE 'DIFFERENT' END || ', ' || rows_dx || ' rows';
END $$;
-- per column: each short label's count under a range condition (the Small shape: two columns), the
-- same as FILTERs, and the column as a GROUP BY key (sb: its padding groups left out, all zero)
CREATE TEMP TABLE rcases (col text, labels text);
INSERT INTO rcases VALUES ('d', $$'F', 'M', 'X', ''$$), ('en', $$'sad', 'ok', 'happy'$$), ('ci', $$'F', 'M'$$),
 ('nd', $$'a', 'b'$$), ('bp', $$'M', 'F', ''$$), ('ch', $$'a', 'b', 'c'$$),
 ('ba', $$'\x00', '\x0001', '\x', '\x0000000000000000'$$), ('i8', $$0, -1, 4294967296$$),
 ('dt', $$'2020-01-01', '2020-01-02'$$), ('f8', $$1.5, 0$$);
CREATE FUNCTION pg_temp.rq(tab text, col text, labels text, form text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE l text; parts text[] := '{}'; i int := 0; BEGIN
	IF form = 'group' THEN
		RETURN format('SELECT %I::text AS k, dx.count(*) AS x, dx.sum(a) AS y FROM %I WHERE a > 2 GROUP BY %I', col, tab, col);
	END IF;
	FOREACH l IN ARRAY string_to_array(labels, ', ') LOOP
		i := i + 1;
		parts := parts || format('dx.count(*) FILTER (WHERE %I = %s AND a > 2) AS x%s', col, l, i);
		parts := parts || format('dx.count(*) FILTER (WHERE %I <> %s AND a <= 6) AS y%s', col, l, i);
	END LOOP;
	RETURN format('SELECT %s FROM %I', array_to_string(parts, ', '), tab);
END $$;
CREATE FUNCTION pg_temp.rcheck(col text, labels text, form text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	IF form = 'group' THEN
		RETURN pg_temp.against(pg_temp.rq('sa', col, labels, form),
		                       format('SELECT * FROM (%s) g WHERE k IN (SELECT %s::text FROM (VALUES (%s)) v(l))',
		                              pg_temp.rq('sb', col, labels, form), 'l', replace(labels, ', ', '), (')));
	END IF;
	RETURN pg_temp.against(pg_temp.rq('sa', col, labels, form), pg_temp.rq('sb', col, labels, form));
END $$;
SELECT col, pg_temp.rcheck(col, labels, 'where') AS where_serial, pg_temp.rcheck(col, labels, 'group') AS group_serial FROM rcases ORDER BY col;
SET dxpriv.group_fold = off;
SELECT col, pg_temp.rcheck(col, labels, 'group') AS group_not_folded FROM rcases ORDER BY col;
RESET dxpriv.group_fold;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT col, pg_temp.rcheck(col, labels, 'where') AS where_parallel, pg_temp.rcheck(col, labels, 'group') AS group_parallel FROM rcases ORDER BY col;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
-- (A2) the byte rule against native references: a value is a label only when its bytes are the
-- label's (citext 'm' and 'MM', 'A' and fullwidth 'ａ' under the case-insensitive collation, 'M ' and
-- 'F  ' in unconstrained bpchar, -0, NaN and -Infinity in float8, int8 values sharing the low 32
-- bits of a label, bytea '\x0000' and the 9-byte zeros, NULL, the long values): the first label
CREATE TEMP VIEW sa_points AS
SELECT a,
       CASE WHEN ci::text = ANY (ARRAY['F', 'M']) THEN ci::text ELSE 'F' END AS ci,
       CASE WHEN nd COLLATE "C" = ANY (ARRAY['a', 'b']) THEN nd COLLATE "C" ELSE 'a' END AS nd,
       CASE WHEN bp = 'M' AND octet_length(bp) = 1 THEN 'M' WHEN bp = 'F' AND octet_length(bp) = 1 THEN 'F'
            WHEN octet_length(bp) = 0 THEN '' ELSE 'M' END AS bp,
       CASE WHEN f8::text IN ('1.5', '0') THEN f8 ELSE 1.5 END AS f8,
       CASE WHEN i8 IN (0, -1, 4294967296) THEN i8 ELSE 0 END AS i8,
       CASE WHEN ba IN ('\x00', '\x0001', '\x', '\x0000000000000000') THEN ba ELSE '\x00' END AS ba,
       coalesce(bo, true) AS bo
FROM sa;
SELECT pg_temp.against($$SELECT ci::text AS k, dx.count(*) AS x FROM sa WHERE a > 2 GROUP BY ci$$,
                       $$SELECT ci, count(*) FILTER (WHERE a > 2) FROM sa_points GROUP BY ci$$) AS ci,
       pg_temp.against($$SELECT nd::text COLLATE "C" AS k, dx.count(*) AS x FROM sa WHERE a > 2 GROUP BY nd$$,
                       $$SELECT nd, count(*) FILTER (WHERE a > 2) FROM sa_points GROUP BY nd$$) AS nd,
       pg_temp.against($$SELECT bp::text AS k, dx.count(*) AS x FROM sa WHERE a > 2 GROUP BY bp$$,
                       $$SELECT bp, count(*) FILTER (WHERE a > 2) FROM sa_points GROUP BY bp$$) AS bp,
       pg_temp.against($$SELECT f8 AS k, dx.count(*) AS x FROM sa WHERE a > 2 GROUP BY f8$$,
                       $$SELECT f8, count(*) FILTER (WHERE a > 2) FROM sa_points GROUP BY f8$$) AS f8,
       pg_temp.against($$SELECT i8 AS k, dx.count(*) AS x FROM sa WHERE a > 2 GROUP BY i8$$,
                       $$SELECT i8, count(*) FILTER (WHERE a > 2) FROM sa_points GROUP BY i8$$) AS i8,
       pg_temp.against($$SELECT ba AS k, dx.count(*) AS x FROM sa WHERE a > 2 GROUP BY ba$$,
                       $$SELECT ba, count(*) FILTER (WHERE a > 2) FROM sa_points GROUP BY ba$$) AS ba,
       pg_temp.against($$SELECT dx.count(*) FILTER (WHERE bo AND a > 2) AS x, dx.count(*) FILTER (WHERE NOT bo AND a < 5) AS y FROM sa$$,
                       $$SELECT count(*) FILTER (WHERE bo AND a > 2) AS x, count(*) FILTER (WHERE NOT bo AND a < 5) AS y FROM sa_points$$) AS bo;
-- (the native equality differs: e.g. citext = 'M' natively matches 'm' too)
SELECT (SELECT count(*) FROM sa WHERE ci = 'M' AND a > 2) AS native_citext_m,
       (SELECT count(*) FROM sa_points WHERE ci = 'M' AND a > 2) AS byte_rule_m;
-- (A3) values a row does not store: columns added with a default (attmissingval: the rows written
-- before ALTER TABLE read the default from the catalog) and a stored generated column, matched
-- inline as the stored ones are
CREATE TABLE sm3 (a int);
INSERT INTO sm3 SELECT i % 10 FROM generate_series(1, 1000) i;
ALTER TABLE sm3 ADD COLUMN s text DEFAULT 'M', ADD COLUMN c char(2) DEFAULT 'x', ADD COLUMN e int8 DEFAULT 4294967296,
                ADD COLUMN g text GENERATED ALWAYS AS (CASE WHEN a > 5 THEN 'F' ELSE 'M' END) STORED;
INSERT INTO sm3 (a) SELECT i % 10 FROM generate_series(1, 100) i;
INSERT INTO sm3 (a, s, c, e) SELECT i % 10, 'F', 'y', 0 FROM generate_series(1, 50) i;
SELECT count(*) FILTER (WHERE atthasmissing) AS missing_defaults FROM pg_attribute WHERE attrelid = 'sm3'::regclass AND attnum > 0;
SELECT dx.protect_table('sm3', 'Infinity');
SELECT dx.set_column('sm3', c::name, s::jsonb, '{"type": "none"}')
FROM (VALUES ('a', '{"min": 0, "max": 9}'), ('s', '{"values": ["F", "M"]}'), ('c', '{"values": ["y", "x"]}'),
             ('e', '{"values": [0, 4294967296]}'), ('g', '{"values": ["F", "M"]}')) t(c, s);
SELECT dx.grant_budget(current_user::regrole, 'sm3', 1e9);
SELECT pg_temp.against(
  $$SELECT dx.count(*) FILTER (WHERE s = 'M' AND a > 2) AS s, dx.count(*) FILTER (WHERE c = 'x' AND a > 2) AS c,
           dx.count(*) FILTER (WHERE e = 4294967296 AND a > 2) AS e, dx.count(*) FILTER (WHERE g = 'M' AND a > 2) AS g FROM sm3$$,
  $$SELECT count(*) FILTER (WHERE s = 'M' AND a > 2) AS s, count(*) FILTER (WHERE c = 'x' AND a > 2) AS c,
           count(*) FILTER (WHERE e = 4294967296 AND a > 2) AS e, count(*) FILTER (WHERE g = 'M' AND a > 2) AS g FROM sm3$$) AS not_stored;
SELECT dx.unprotect_table(t) FROM (VALUES ('sa'::regclass), ('sb'), ('sm3')) AS p(t);
DROP TABLE sa, sb, sm3 CASCADE;
DROP TYPE rt_mood;
DROP DOMAIN rt_text;
DROP COLLATION rt_ci;
DROP EXTENSION citext;
