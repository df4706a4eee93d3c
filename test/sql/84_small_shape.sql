-- The one-pass transition's Small shape (executor/row_point.h, issue 23 "countwhere"): a statement
-- whose non-key columns are two to four, each a range column or a short enumerated column (at most
-- 8 labels, each at most 8 bytes, or a by-value type), maps a row to its point inline, the
-- enumerated values matched as words (short_enum_index) instead of through the indexer's call and
-- memcmp; the generic path (five columns, a column group, longer labels) matches short enumerated
-- columns the same way. Every noiseless answer must equal a native reference of the mapping rule:
-- a range value clamped to the grid (NULL: its first point), an enumerated value that is not a
-- label (NULL, another spelling, a prefix or an extension of a label, a compressed or toasted long
-- value) at the domain's first label; serially and in parallel, with and without the leader.
SET dxpriv.cache_lifetime = 0;
CREATE TABLE sm (a int, n numeric, s text, v varchar(9), c char(3), e int, p text, w text, l text);
ALTER TABLE sm ALTER COLUMN p SET STORAGE PLAIN; -- (its short values keep a 4-byte header)
INSERT INTO sm
SELECT (i * 37) % 27 - 3,
       ((i * 7) % 13 - 6) / 4.0,
       (ARRAY['M', 'F', 'MM', '', 'é', 'abcdefgh', 'm', 'MMM', 'abcdefg', 'abcdefghi', 'F ', 'Z'])[1 + i % 12],
       (ARRAY['ab', 'abc', 'zz', 'ab ', 'a'])[1 + (i / 3) % 5],
       (ARRAY['ab', 'x', 'ab ', 'y'])[1 + (i / 5) % 4],
       (ARRAY[5, -3, 0, 7, -5])[1 + (i / 7) % 5],
       (ARRAY['M', 'F', 'MM', 'Q', 'MMMMMMMMM'])[1 + (i / 2) % 5],
       (ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j'])[1 + (i / 11) % 10],
       (ARRAY['short', 'ninechars', 'nine', 'x'])[1 + (i / 13) % 4]
FROM generate_series(1, 6000) AS i;
-- NULLs; long values: compressed in place (repeat) and toasted out of line (md5s do not compress)
INSERT INTO sm VALUES (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                      (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
                      (5, 0.5, repeat('M', 5000), 'ab', 'x', 5, repeat('M', 500), 'a', 'short'),
                      (6, 0.25, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g), 'zz', 'ab', -3,
                       'MM', 'b', 'nine');
ANALYZE sm;
SELECT pg_column_compression(s) IS NOT NULL AS compressed FROM sm WHERE length(s) = 5000;
SELECT pg_relation_size(reltoastrelid) > 0 AS toasted FROM pg_class WHERE oid = 'sm'::regclass;
SELECT dx.protect_table('sm', 'Infinity'); -- noiseless
SELECT dx.set_column('sm', c::name, d::jsonb, '{"type": "none"}')
FROM (VALUES ('a', '{"min": 0, "max": 20}'), ('n', '{"min": -1, "max": 1, "step": 0.5}'),
             ('s', '{"values": ["F", "M", "MM", "", "é", "abcdefgh"]}'), ('v', '{"values": ["ab", "abc", "zz"]}'),
             ('c', '{"values": ["x", "ab"]}'), ('e', '{"values": [5, -3, 0]}'),
             ('p', '{"values": ["MM", "M", "F"]}'),
             ('w', '{"values": ["a", "b", "c", "d", "e", "f", "g", "h", "i"]}'),
             ('l', '{"values": ["short", "ninechars"]}')) AS t(c, d);
SELECT dx.grant_budget(current_user::regrole, 'sm'::regclass, 1e9);
-- the rows at their points, computed natively (the declared domains above)
CREATE TEMP VIEW sm_points AS
SELECT CASE WHEN a IS NULL THEN 0 ELSE least(greatest(a, 0), 20) END AS a,
       CASE WHEN n IS NULL THEN -1 ELSE least(greatest(round((n + 1) / 0.5), 0), 4) * 0.5 - 1 END AS n,
       CASE WHEN s = ANY (ARRAY['F', 'M', 'MM', '', 'é', 'abcdefgh']) THEN s ELSE 'F' END AS s,
       CASE WHEN v = ANY (ARRAY['ab', 'abc', 'zz']::varchar[]) THEN v ELSE 'ab' END AS v,
       CASE WHEN c = ANY (ARRAY['x', 'ab']::char(3)[]) THEN c ELSE 'x' END AS c,
       CASE WHEN e = ANY (ARRAY[5, -3, 0]) THEN e ELSE 5 END AS e,
       CASE WHEN p = ANY (ARRAY['MM', 'M', 'F']) THEN p ELSE 'MM' END AS p,
       CASE WHEN w = ANY (ARRAY['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i']) THEN w ELSE 'a' END AS w,
       CASE WHEN l = ANY (ARRAY['short', 'ninechars']) THEN l ELSE 'short' END AS l
FROM sm;
-- the dx statement's rows against the reference's (EXCEPT ALL both ways), and its row point's shape
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
CREATE TEMP TABLE cases (id int, q text, ref text);
INSERT INTO cases VALUES
 (1, $$SELECT dx.count(*) AS x FROM sm WHERE a > 7 AND s = 'M'$$,
     $$SELECT count(*) AS x FROM sm_points WHERE a > 7 AND s = 'M'$$),
 (2, $$SELECT dx.count(*) AS x FROM sm WHERE s IN ('', 'é') AND a <= 3$$,
     $$SELECT count(*) AS x FROM sm_points WHERE s IN ('', 'é') AND a <= 3$$),
 (3, $$SELECT dx.sum(a) AS x FROM sm WHERE s = 'abcdefgh' OR s = 'F'$$,
     $$SELECT sum(a)::float8 AS x FROM sm_points WHERE s = 'abcdefgh' OR s = 'F'$$),
 (4, $$SELECT dx.count(*) AS x FROM sm WHERE v = 'abc' AND c = 'ab'$$,
     $$SELECT count(*) AS x FROM sm_points WHERE v = 'abc' AND c = 'ab'$$),
 (5, $$SELECT dx.count(*) AS x FROM sm WHERE e = -3 AND a BETWEEN 2 AND 9$$,
     $$SELECT count(*) AS x FROM sm_points WHERE e = -3 AND a BETWEEN 2 AND 9$$),
 (6, $$SELECT dx.count(*) AS x FROM sm WHERE p = 'MM' AND a > 5$$,
     $$SELECT count(*) AS x FROM sm_points WHERE p = 'MM' AND a > 5$$),
 (7, $$SELECT dx.sum(n) AS x FROM sm WHERE s = 'F' AND a > 2$$,
     $$SELECT sum(n)::float8 AS x FROM sm_points WHERE s = 'F' AND a > 2$$),
 (8, $$SELECT dx.count(*) AS x FROM sm WHERE a > 3 AND s = 'M' AND v = 'ab' AND e = 5$$,
     $$SELECT count(*) AS x FROM sm_points WHERE a > 3 AND s = 'M' AND v = 'ab' AND e = 5$$),
 (9, $$SELECT dx.count(*) AS x FROM sm WHERE a > 3 AND s <> 'M' AND v = 'ab' AND e <> 5 AND c = 'x'$$,
     $$SELECT count(*) AS x FROM sm_points WHERE a > 3 AND s <> 'M' AND v = 'ab' AND e <> 5 AND c = 'x'$$),
 (10, $$SELECT dx.count(*) AS x FROM sm WHERE w = 'c' AND s = 'MM'$$,
      $$SELECT count(*) AS x FROM sm_points WHERE w = 'c' AND s = 'MM'$$),
 (11, $$SELECT dx.count(*) AS x FROM sm WHERE l = 'short' AND s = 'é'$$,
      $$SELECT count(*) AS x FROM sm_points WHERE l = 'short' AND s = 'é'$$),
 (12, $$SELECT c, dx.count(*) AS x, dx.sum(a) AS y FROM sm WHERE s IN ('M', 'F') AND e = 0 GROUP BY c$$,
      $$SELECT c, count(*) FILTER (WHERE s IN ('M', 'F') AND e = 0) AS x,
               coalesce(sum(a) FILTER (WHERE s IN ('M', 'F') AND e = 0), 0)::float8 AS y FROM sm_points GROUP BY c$$),
 (13, $$SELECT dx.count(*) FILTER (WHERE s = 'M') AS x, dx.count(*) FILTER (WHERE p = 'F' AND v = 'zz') AS y,
             dx.avg(a) FILTER (WHERE e = 0) AS z FROM sm$$,
      $$SELECT count(*) FILTER (WHERE s = 'M') AS x, count(*) FILTER (WHERE p = 'F' AND v = 'zz') AS y,
             (sum(a) FILTER (WHERE e = 0))::float8 / count(*) FILTER (WHERE e = 0) AS z FROM sm_points$$),
 (14, $$SELECT dx.count(*) AS x FROM sm WHERE s = 'M'$$,
      $$SELECT count(*) AS x FROM sm_points WHERE s = 'M'$$);
SELECT id, pg_temp.against(q, ref) AS serial FROM cases ORDER BY id;
-- the GROUP BY not folded (dxpriv.group_fold = off: the key column out of the histogram, the other
-- three columns the Small shape)
SET dxpriv.group_fold = off;
SELECT id, pg_temp.against(q, ref) AS not_folded FROM cases WHERE id = 12;
RESET dxpriv.group_fold;
-- in parallel, with and without the leader (the partial histograms serialised and combined)
CREATE FUNCTION pg_temp.parallel_plan(q text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE l text; found boolean := false; BEGIN
	FOR l IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		found := found OR l LIKE '%Gather%';
	END LOOP;
	RETURN found;
END $$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT id, pg_temp.parallel_plan(q) AS parallel, pg_temp.against(q, ref) AS with_leader FROM cases ORDER BY id;
SET parallel_leader_participation = off;
SELECT id, pg_temp.parallel_plan(q) AS parallel, pg_temp.against(q, ref) AS without_leader FROM cases ORDER BY id;
RESET parallel_leader_participation;
RESET max_parallel_workers_per_gather;
RESET min_parallel_table_scan_size;
RESET parallel_tuple_cost;
RESET parallel_setup_cost;
