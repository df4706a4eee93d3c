-- Session 22: a dense one-pass histogram serialises as its 16-bit counters (version 2,
-- executor/onepass_format.h) when that is smaller than its (point, count) pairs (version 1), and the
-- combine function adds two dense states counter by counter. Each line is what must hold for a
-- wrong count or a forged state to fail:
-- A. the histogram point by point against the native count, serially, in parallel (workers' states
--    serialised in version 2 with carries, combined by the leader) and without the leader; a state
--    met at few points stays in version 1; deserialising and serialising again gives the same bytes.
-- B. dx.count / dx.sum / dx.avg on a noiseless table (an int and a numeric column over 1,000 points,
--    300,000 rows at one point) equal the native clamped answers, in parallel and not, one pass on and off.
-- C. forged bytes: every malformed state refused (data corrupted) by the deserialise function (which
--    shares its parser with dx._fold_slices; that one cannot be called directly, even by a superuser);
--    a hand-written version 2 state and its version 1 twins read as the same histogram.
-- D. the folded GROUP BY (its whole histogram cut into groups) against the native answers per group.
SET dxpriv.cache_lifetime = 0;
SET max_parallel_workers_per_gather = 0;
CREATE TABLE r22_raw (i int, x numeric);
INSERT INTO r22_raw SELECT g % 1000, (g % 1000)::numeric FROM generate_series(0, 2999) g;
INSERT INTO r22_raw SELECT 7, 7 FROM generate_series(1, 300000); -- (in parallel: a carry in every process's state)
INSERT INTO r22_raw SELECT CASE WHEN g % 2 = 0 THEN NULL ELSE 5000 END, CASE WHEN g % 2 = 0 THEN NULL ELSE -3 END
FROM generate_series(1, 101) g;
ANALYZE r22_raw;

-- A. the histogram point by point
CREATE AGGREGATE public.r22_hist(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, FINALFUNC = dx._onepass_serialize,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
-- the state of a serialised histogram (dx._fold_transfn deserialises it), serialised again
CREATE AGGREGATE public.r22_bytes(bytea) (SFUNC = dx._fold_transfn, STYPE = internal, FINALFUNC = dx._onepass_serialize);
-- (public.onepass_hist and onepass_int8_at, 00_setup: the bytes of either version read back)
-- layout 'd|<q or Q><lo>:<hi>:1;' over column col (WHERE cond) against the native count of each clamped value
CREATE FUNCTION pg_temp.points_match(col text, lo int, hi int, cond text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE b bytea; bad bigint; npoints bigint; nrows bigint; BEGIN
	EXECUTE format('SELECT public.r22_hist(%L, %I) FROM r22_raw WHERE %s', format('d|q%s:%s:1;', lo, hi), col, cond) INTO b;
	EXECUTE format('CREATE TEMP TABLE r22_native AS SELECT least(greatest(coalesce(%I::bigint, %s), %s), %s) - %s AS point,
	                count(*) AS n FROM r22_raw WHERE %s GROUP BY 1', col, lo, lo, hi, lo, cond);
	SELECT count(*) INTO bad FROM ((SELECT * FROM public.onepass_hist(b) EXCEPT ALL SELECT * FROM r22_native)
	                               UNION ALL (SELECT * FROM r22_native EXCEPT ALL SELECT * FROM public.onepass_hist(b))) d;
	DROP TABLE r22_native;
	SELECT count(*), sum(n) INTO npoints, nrows FROM public.onepass_hist(b);
	RETURN CASE WHEN bad = 0 THEN format('matches: version %s, %s points met, %s rows, %s carries, %s',
	                                     get_byte(b, 0), npoints, nrows,
	                                     CASE WHEN get_byte(b, 0) = 2 THEN public.onepass_int8_at(b, 14) ELSE 0 END,
	                                     CASE WHEN (SELECT public.r22_bytes(b)) = b THEN 'same bytes again' ELSE 'OTHER BYTES AGAIN' END)
	            ELSE format('DIFFERENT: %s points differ', bad) END;
END $$;
CREATE FUNCTION pg_temp.all_layouts() RETURNS TABLE (layout text, result text) LANGUAGE sql AS $$
SELECT l, pg_temp.points_match(c, lo, hi, w) FROM (VALUES
	('int, 1,000 points, every one met', 'i', 0, 999, 'true'),
	('numeric, 1,000 points, every one met', 'x', 0, 999, 'true'),
	('int, 1,000 points, 5 met', 'i', 0, 999, 'i < 5'),
	('int, 10,000 points, 1,000 met', 'i', -5000, 4999, 'true'),
	('int, 10,000 points, 1,001 met (NULLs at the first)', 'i', 0, 9999, 'true')) AS v(l, c, lo, hi, w) $$;
SELECT * FROM pg_temp.all_layouts();
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT public.r22_hist(''d|q0:999:1;'', i) FROM r22_raw', '%Partial Aggregate%') AS parallel;
SELECT * FROM pg_temp.all_layouts();
SET parallel_leader_participation = off;
SELECT * FROM pg_temp.all_layouts();
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 0;

-- B. the released answers on a noiseless table
CREATE TABLE r22_t AS SELECT * FROM r22_raw;
ANALYZE r22_t;
SELECT dx.protect_table('r22_t', 'Infinity');
SELECT dx.set_column('r22_t', 'i', '{"min": 0, "max": 999}', '{"type": "none"}'),
       dx.set_column('r22_t', 'x', '{"min": 0, "max": 999, "step": 1}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'r22_t'::regclass, 1e9);
CREATE FUNCTION pg_temp.answers() RETURNS TABLE (query text, result text) LANGUAGE sql AS $$
SELECT q, public.one_pass_matches(format('SELECT %s FROM r22_t', q), format('SELECT %s FROM r22_t', n)) FROM (VALUES
	('dx.count(*)', 'count(*)'),
	('dx.sum(i)', 'sum(least(greatest(coalesce(i, 0), 0), 999))'),
	('dx.sum(x)', 'sum(least(greatest(coalesce(x, 0), 0), 999))'),
	('dx.avg(i)', 'sum(least(greatest(coalesce(i, 0), 0), 999))::float8 / count(*)'),
	('dx.avg(x)', 'sum(least(greatest(coalesce(x, 0), 0), 999))::float8 / count(*)')) AS v(q, n) $$;
SELECT public.plan_has('SELECT dx.avg(x) FROM r22_t', '%dx._onepass_avg(''d|q0:999:1;''::text, x)%') AS one_pass_layout;
SELECT * FROM pg_temp.answers();
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT dx.avg(x) FROM r22_t', '%Partial Aggregate%') AS parallel;
SELECT * FROM pg_temp.answers();
SET parallel_leader_participation = off;
SELECT * FROM pg_temp.answers();
RESET parallel_leader_participation;
SET max_parallel_workers_per_gather = 0;

-- C. forged bytes. A histogram of 4 points: 1 row at point 0, 65,539 at point 2, 65,535 at point 3.
CREATE FUNCTION pg_temp.u16(c int) RETURNS bytea LANGUAGE sql AS $$ SELECT decode(lpad(to_hex(c), 4, '0'), 'hex') $$;
CREATE FUNCTION pg_temp.head(version int, dense int, points bigint, n bigint, grp int = 0) RETURNS bytea LANGUAGE sql AS $$
SELECT set_byte('\x00'::bytea, 0, version) || int4send(grp) || set_byte('\x00'::bytea, 0, dense) || int8send(points) || int8send(n) $$;
CREATE TEMP TABLE r22_forms (name text, b bytea);
INSERT INTO r22_forms VALUES
	('version 2', pg_temp.head(2, 1, 4, 1) || int8send(2) || int8send(65536) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(65535)),
	('version 1', pg_temp.head(1, 1, 4, 3) || int8send(0) || int8send(1) || int8send(2) || int8send(65539) || int8send(3) || int8send(65535)),
	('version 1, pairs out of order', pg_temp.head(1, 1, 4, 3) || int8send(3) || int8send(65535) || int8send(0) || int8send(1) || int8send(2) || int8send(65539));
-- forgeries: each changes one thing of a well-formed state
INSERT INTO r22_forms SELECT 'FORGED ' || f, b FROM (VALUES
	('version 3', pg_temp.head(3, 1, 4, 0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 0', pg_temp.head(0, 1, 4, 0)),
	('version 2 not dense', pg_temp.head(2, 0, 4, 0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 dense byte 2', pg_temp.head(2, 2, 4, 0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 one byte short', pg_temp.head(2, 1, 4, 0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || '\x07'::bytea),
	('version 2 one byte long', pg_temp.head(2, 1, 4, 0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7) || '\x00'::bytea),
	('version 2 counters of 5 points for 4', pg_temp.head(2, 1, 4, 0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7) || pg_temp.u16(7)),
	('version 2 carry of 65,535', pg_temp.head(2, 1, 4, 1) || int8send(2) || int8send(65535) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 carry of 0', pg_temp.head(2, 1, 4, 1) || int8send(2) || int8send(0) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 negative carry', pg_temp.head(2, 1, 4, 1) || int8send(2) || int8send(-65536) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 carry at point 4 of 4', pg_temp.head(2, 1, 4, 1) || int8send(4) || int8send(65536) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 carry at point -1', pg_temp.head(2, 1, 4, 1) || int8send(-1) || int8send(65536) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 two carries at one point', pg_temp.head(2, 1, 4, 2) || int8send(2) || int8send(65536) || int8send(2) || int8send(65536)
	                                     || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 carries descending', pg_temp.head(2, 1, 4, 2) || int8send(3) || int8send(65536) || int8send(2) || int8send(65536)
	                               || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 carry count 2^60', pg_temp.head(2, 1, 4, 1152921504606846976) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 carry count -1', pg_temp.head(2, 1, 4, -1) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 points 0', pg_temp.head(2, 1, 0, 0)),
	('version 2 points 2^24 + 1 (counters short)', pg_temp.head(2, 1, 16777217, 0) || pg_temp.u16(1)),
	('version 2 points 2^62 (2 * points wraps)', pg_temp.head(2, 1, 4611686018427387904, 0)),
	('version 2 negative group', pg_temp.head(2, 1, 4, 0, -1) || pg_temp.u16(1) || pg_temp.u16(0) || pg_temp.u16(3) || pg_temp.u16(7)),
	('version 2 header only, 21 bytes', substring(pg_temp.head(2, 1, 4, 0) FROM 1 FOR 21)),
	('version 1 count 0', pg_temp.head(1, 1, 4, 1) || int8send(2) || int8send(0)),
	('version 1 point 4 of 4', pg_temp.head(1, 1, 4, 1) || int8send(4) || int8send(1)),
	('version 1 one byte short', pg_temp.head(1, 1, 4, 1) || int8send(2) || substring(int8send(1) FROM 1 FOR 7)),
	('empty', ''::bytea)) AS v(f, b);
CREATE FUNCTION pg_temp.read_back(b bytea) RETURNS text LANGUAGE plpgsql AS $$
DECLARE r bytea; BEGIN
	SELECT public.r22_bytes(x) INTO r FROM (VALUES (b)) AS v(x);
	RETURN format('version %s: %s', get_byte(r, 0), (SELECT string_agg(point || ':' || n, ' ' ORDER BY point) FROM public.onepass_hist(r)));
EXCEPTION WHEN OTHERS THEN RETURN SQLSTATE || ' ' || SQLERRM;
END $$;
SELECT name, pg_temp.read_back(b) AS deserialised FROM r22_forms ORDER BY name;
SELECT count(DISTINCT r) AS one_serialisation FROM (SELECT public.r22_bytes(b) AS r FROM r22_forms WHERE name NOT LIKE 'FORGED%' GROUP BY name) d;

-- D. the folded GROUP BY (dx._fold_state's whole histogram, cut by dx._fold_slices: version 2 when
-- dense enough) against the native count and clamped sum per group, serially and in parallel
CREATE TABLE r22_g AS SELECT i % 40 AS g, (i / 40) % 10 AS x FROM r22_raw; -- (all 400 (g, x) points met: version 2)
ANALYZE r22_g;
SELECT dx.protect_table('r22_g', 'Infinity');
SELECT dx.set_column('r22_g', 'g', '{"min": 0, "max": 39}', '{"type": "none"}'),
       dx.set_column('r22_g', 'x', '{"min": 0, "max": 9}', '{"type": "none"}'),
       dx.grant_budget(current_user::regrole, 'r22_g'::regclass, 1e9);
CREATE FUNCTION pg_temp.groups_match() RETURNS text LANGUAGE plpgsql AS $$
DECLARE bad bigint; ngroups bigint; BEGIN
	CREATE TEMP TABLE r22_fold AS SELECT g, dx.count(*) AS n, dx.sum(x) AS s FROM r22_g GROUP BY g;
	SELECT count(*) INTO bad FROM (
	  (SELECT g, n::bigint, s::numeric FROM r22_fold
	   EXCEPT ALL SELECT coalesce(least(greatest(g, 0), 39), 0), count(*), sum(least(greatest(coalesce(x, 0), 0), 9)) FROM r22_g GROUP BY 1)
	  UNION ALL
	  (SELECT coalesce(least(greatest(g, 0), 39), 0), count(*), sum(least(greatest(coalesce(x, 0), 0), 9)) FROM r22_g GROUP BY 1
	   EXCEPT ALL SELECT g, n::bigint, s::numeric FROM r22_fold)) d;
	SELECT count(*) INTO ngroups FROM r22_fold;
	DROP TABLE r22_fold;
	RETURN CASE WHEN bad = 0 THEN format('matches (%s groups)', ngroups) ELSE format('DIFFERENT: %s groups differ', bad) END;
END $$;
SELECT public.plan_has('SELECT g, dx.count(*), dx.sum(x) FROM r22_g GROUP BY g', '%dx._fold_state(%') AS folded,
       pg_temp.groups_match() AS serial;
SET max_parallel_workers_per_gather = 2;
SELECT public.plan_has('SELECT g, dx.count(*), dx.sum(x) FROM r22_g GROUP BY g', '%Partial Aggregate%') AS parallel,
       pg_temp.groups_match() AS in_parallel;
SET max_parallel_workers_per_gather = 0;

RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP AGGREGATE public.r22_hist(text, VARIADIC "any");
DROP AGGREGATE public.r22_bytes(bytea);
SELECT dx.unprotect_table('r22_t'), dx.unprotect_table('r22_g');
DROP TABLE r22_raw, r22_t, r22_g;
