-- The prefilter of dx._unit_keep (core/unit_prefilter.h): a blocked Bloom filter over the heavy
-- units' hashes answers "light unit, keep" without the table probe or SipHash; a unit whose hash
-- passes the filter without being heavy (a false positive) falls through to the exact lookup. The
-- kept rows must be exactly those of the rule (each unit's k rows of smallest dx._unit_rank), here
-- compared row by row (ctid) with the rule written with window functions, under one test seed (the
-- profile's key is then dx._unit_rank's), for int units some of which are made to collide in the
-- filter, NULL, text and numeric units, k = 1, and heavy units of exactly k + 1 rows.
SET client_min_messages = warning;
SET dxpriv.test_seed = 7272;

-- mix64 (core/mix64.h), the hash of an int unit, in SQL (bit(64) for the shifts and xor, numeric
-- for the products modulo 2^64); checked against values computed outside PostgreSQL
CREATE FUNCTION pg_temp.u64(b bit(64)) RETURNS numeric LANGUAGE sql IMMUTABLE AS
$$ SELECT b::int8::numeric + CASE WHEN b::int8 < 0 THEN 18446744073709551616 ELSE 0 END $$;
CREATE FUNCTION pg_temp.b64(n numeric) RETURNS bit(64) LANGUAGE sql IMMUTABLE AS
$$ SELECT (CASE WHEN n >= 9223372036854775808 THEN n - 18446744073709551616 ELSE n END)::int8::bit(64) $$;
CREATE FUNCTION pg_temp.mix64(x int8) RETURNS numeric LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE h bit(64) := x::bit(64); BEGIN
	h := h # (h >> 33);
	h := pg_temp.b64(mod(pg_temp.u64(h) * 18397679294719823053, 18446744073709551616));
	h := h # (h >> 33);
	h := pg_temp.b64(mod(pg_temp.u64(h) * 14181476777654086739, 18446744073709551616));
	h := h # (h >> 33);
	RETURN pg_temp.u64(h);
END $$;
SELECT pg_temp.mix64(1) = 12994781566227106604 AND pg_temp.mix64(2) = 4233148493373801447
       AND pg_temp.mix64(12345) = 1716623506685013753 AS mix64_matches;
-- the three bit positions a hash tests in its filter word (bits 20..25, 26..31, 58..63)
CREATE FUNCTION pg_temp.fbits(h numeric) RETURNS int[] LANGUAGE sql IMMUTABLE AS
$$ SELECT ARRAY[mod(div(h, 2 ^ 20::numeric), 64)::int, mod(div(h, 2 ^ 26::numeric), 64)::int, div(h, 2 ^ 58::numeric)::int] $$;

-- the kept rows (ctid) by dx._unit_keep under the profile (the superuser may call both functions)
-- against the rule, both directions; n: rows kept
CREATE FUNCTION pg_temp.same_kept(tab regclass, unit text, k int) RETURNS text LANGUAGE plpgsql AS $$
DECLARE att int2; d bigint; n bigint; BEGIN
	SELECT attnum INTO att FROM pg_attribute WHERE attrelid = tab AND attname = unit;
	DROP TABLE IF EXISTS pg_temp.kp, pg_temp.rf;
	EXECUTE format('CREATE TEMP TABLE kp AS SELECT ctid AS t FROM %s WHERE dx._unit_keep((SELECT dx._unit_profile(%s::oid, true, %s::int2, %s, 0)), %I, tableoid, ctid)',
	               tab, tab::oid, att, k, unit);
	EXECUTE format('CREATE TEMP TABLE rf AS SELECT t FROM (SELECT ctid AS t, row_number() OVER (PARTITION BY %I ORDER BY dx._unit_rank(tableoid, ctid)) AS r FROM %s) s WHERE r <= %s',
	               unit, tab, k);
	SELECT count(*) INTO d FROM ((SELECT t FROM kp EXCEPT SELECT t FROM rf) UNION ALL (SELECT t FROM rf EXCEPT SELECT t FROM kp)) x;
	SELECT count(*) INTO n FROM kp;
	RETURN CASE WHEN d = 0 THEN 'same ' || n || ' rows' ELSE d || ' rows differ' END;
END $$;

-- int units: 8 heavy units (a one-word filter, 16 to 24 bits set) of k + 1, k + 2, ... rows, and
-- 3000 light units of 1 to k rows; with k = 3
CREATE TABLE up_int (person int, v int);
INSERT INTO up_int SELECT p, i FROM generate_series(1, 8) p, generate_series(1, 3 + p) i;
INSERT INTO up_int SELECT p, i FROM generate_series(9, 3008) p, generate_series(1, 1 + p % 3) i;
SELECT dx.protect_table('up_int', 'Infinity');
SELECT dx.set_column('up_int', 'v', '{"min":0,"max":20}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'up_int', 1e6);
SELECT dx.set_privacy_unit('up_int', 'person', 3);
-- the light units whose hash passes the one-word filter of the 8 heavy units (false positives:
-- their rows go to the exact lookup and are kept, all of them): several, by construction
WITH heavy AS (SELECT DISTINCT unnest(pg_temp.fbits(pg_temp.mix64(p))) AS b FROM generate_series(1, 8) p)
SELECT count(*) FILTER (WHERE pg_temp.fbits(pg_temp.mix64(p)) <@ (SELECT array_agg(b) FROM heavy)) >= 20 AS colliding_light_units,
       (SELECT count(*) FROM heavy) BETWEEN 16 AND 24 AS filter_bits
FROM generate_series(9, 3008) p;
SELECT pg_temp.same_kept('up_int', 'person', 3) AS int_k3;
-- every light unit keeps all its rows, every heavy unit exactly 3 (the colliding ones too)
SELECT sum(least(3, n)) AS expected FROM (SELECT count(*) AS n FROM up_int GROUP BY person) c \gset
SELECT dx.count(*) = :expected AS bounded_count FROM up_int;
-- k = 1: every unit keeps one row; k = 4: unit 1 (4 rows) is light, unit 2 (5 rows) heavy by one
SELECT pg_temp.same_kept('up_int', 'person', 1) AS int_k1;
SELECT pg_temp.same_kept('up_int', 'person', 4) AS int_k4;
SELECT dx.set_privacy_unit('up_int', 'person', 1);
SELECT dx.count(*) = 3008 AS k1_count FROM up_int;
-- many heavy units (a multi-word filter): units of 2 rows, heavy at k = 1
INSERT INTO up_int SELECT p, 1 FROM generate_series(9, 3008) p WHERE p % 3 = 0;
SELECT pg_temp.same_kept('up_int', 'person', 1) AS int_k1_many_heavy;
SELECT dx.count(*) = 3008 AS k1_many_heavy_count FROM up_int;

-- NULL units (one unit), text and numeric units (1.0 and 1.00 are one unit)
CREATE TABLE up_mixed (who text, amount numeric, v int);
INSERT INTO up_mixed SELECT CASE WHEN p % 97 = 0 THEN NULL ELSE 'u' || p END,
       CASE WHEN p % 89 = 0 THEN NULL ELSE (p % 40)::numeric + CASE WHEN i % 2 = 0 THEN 0.00 ELSE 0.0 END END, i
FROM generate_series(1, 800) p, generate_series(1, 1 + p % 5) i;
SELECT pg_temp.same_kept('up_mixed', 'who', 2) AS text_k2, pg_temp.same_kept('up_mixed', 'who', 5) AS text_k5,
       pg_temp.same_kept('up_mixed', 'amount', 3) AS numeric_k3, pg_temp.same_kept('up_mixed', 'amount', 1) AS numeric_k1;
SELECT dx.protect_table('up_mixed', 'Infinity');
SELECT dx.set_column('up_mixed', 'v', '{"min":0,"max":20}', '{"type":"none"}');
SELECT dx.grant_budget(current_user::regrole, 'up_mixed', 1e6);
SELECT dx.set_privacy_unit('up_mixed', 'who', 2);
SELECT sum(least(2, n)) AS expected FROM (SELECT count(*) AS n FROM up_mixed GROUP BY who) c \gset
SELECT dx.count(*) = :expected AS text_count FROM up_mixed;
SELECT dx.set_privacy_unit('up_mixed', 'amount', 3);
SELECT sum(least(3, n)) AS expected FROM (SELECT count(*) AS n FROM up_mixed GROUP BY amount) c \gset
SELECT dx.count(*) = :expected AS numeric_count FROM up_mixed;

-- parallel workers build the same filter from the leader's profile
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
SELECT dx.set_privacy_unit('up_int', 'person', 3);
SELECT sum(least(3, n)) AS expected FROM (SELECT count(*) AS n FROM up_int GROUP BY person) c \gset
SELECT dx.count(*) = :expected AS parallel_count FROM up_int;
SELECT pg_temp.same_kept('up_int', 'person', 3) AS parallel_int_k3;
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET dxpriv.test_seed;
DROP TABLE up_int, up_mixed;
