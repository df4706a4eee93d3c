-- Red-team of issue 21 classes 2 and 3 (what a statement is charged; which of a unit's rows are
-- kept), as an analyst. Every check compares the ledger with dx.explain or a bounded answer with the
-- number of persons, so each can fail; no noisy value is printed.
SET client_min_messages = warning;
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 3232;
CREATE TABLE rt (id int, age int, sex text, ward text);
INSERT INTO rt SELECT i, (i * 7) % 90, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END, (ARRAY['a','b','c'])[1 + i % 3]
FROM generate_series(1, 1200) AS i;
SELECT dx.protect_table('rt', 1.0);
SELECT dx.set_column('rt', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 5}');
SELECT dx.set_column('rt', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}');
SELECT dx.set_column('rt', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 1}');
CREATE ROLE dx_regress_rt;
SELECT dx.add_analyst('dx_regress_rt');
SELECT dx.grant_budget('dx_regress_rt', 'rt', 1000);
CREATE SCHEMA rt_ws AUTHORIZATION dx_regress_rt;
GRANT USAGE ON SCHEMA rt_ws TO PUBLIC;

-- rt_check(statement, singles): the analyst's last ledger row against dx.explain (as the owner):
-- the charged epsilon is the allocation dx.explain reports for `statement`, and every released
-- cell i (the same cell asked alone: singles[i]; NULL: the cells of `statement` in order) has
-- scale x charged epsilon >= its sensitivity (its one-cell scale x epsilon): private at the charge
CREATE FUNCTION rt_check(statement text, singles text[] DEFAULT NULL)
RETURNS TABLE (charged_is_explained boolean, released_cells int, private boolean) LANGUAGE plpgsql AS $$
DECLARE l record; e record; ok boolean := true; i int := 0; sens float8;
BEGIN
	SELECT epsilon, scales INTO l FROM dx.ledger WHERE role = 'dx_regress_rt'::regrole ORDER BY id DESC LIMIT 1;
	IF singles IS NULL THEN
		FOR e IN SELECT noise_scale, query_epsilon FROM dx.explain(statement) LOOP
			i := i + 1;
			ok := ok AND i <= coalesce(array_length(l.scales, 1), 0)
			         AND l.scales[i] * l.epsilon >= e.noise_scale * e.query_epsilon * (1 - 1e-9);
		END LOOP;
		ok := ok AND i = array_length(l.scales, 1);
	ELSE
		FOR i IN 1 .. array_length(singles, 1) LOOP
			SELECT max(x.noise_scale * x.query_epsilon) INTO sens FROM dx.explain(singles[i]) x;
			ok := ok AND l.scales[i] * l.epsilon >= sens * (1 - 1e-9);
		END LOOP;
		ok := ok AND array_length(singles, 1) = array_length(l.scales, 1);
	END IF;
	RETURN QUERY SELECT abs(l.epsilon - (SELECT max(query_epsilon) FROM dx.explain(statement))) < 1e-9,
	                    array_length(l.scales, 1), ok;
END $$;
CREATE FUNCTION rt_charges() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS
$$ SELECT count(*) FROM dx.ledger WHERE role = 'dx_regress_rt'::regrole $$;
CREATE FUNCTION rt_last_epsilon() RETURNS numeric LANGUAGE sql SECURITY DEFINER AS
$$ SELECT round(epsilon::numeric, 6) FROM dx.ledger WHERE role = 'dx_regress_rt'::regrole ORDER BY id DESC LIMIT 1 $$;
GRANT EXECUTE ON FUNCTION rt_charges(), rt_last_epsilon() TO PUBLIC;

SET dxpriv.epsilon = 0.1;
-- ===================================================================== class 2: what is charged
-- A1. UNION ALL of two wrapped releases, each losing an aggregate: both allocations in full (0.4)
SET ROLE dx_regress_rt;
SELECT count(*) AS rows, count(v) AS answered FROM (
	SELECT a::numeric v FROM (SELECT count(*) FILTER (WHERE age < 30) a, count(*) FILTER (WHERE age >= 60) b FROM rt) x
	UNION ALL
	SELECT c FROM (SELECT sum(age) FILTER (WHERE sex = 'F') c, count(*) d FROM rt) y) u;
SELECT rt_last_epsilon() AS union_of_two_allocations;
-- a wrapper that reads no aggregate of a release (the planner removes them all, so nothing is
-- charged for it): alone as `SELECT count(*) FROM (<release>) g` it is the number of declared
-- groups, public, answered without reading the table (planner/row_count.h, 41_bi_shapes); next to
-- a release that is read it is refused (its scan feeds no release)
SELECT count(*) FROM (SELECT ward, count(*) n FROM rt GROUP BY ward) g;
SELECT x.a IS NOT NULL AS answered, y.groups FROM (SELECT count(*) a FROM rt) x,
       (SELECT count(*) AS groups FROM (SELECT ward, count(*) n FROM rt WHERE age < 3 GROUP BY ward) g) y;
RESET ROLE;

-- A2. a MATERIALIZED CTE read for one column, and a NOT MATERIALIZED one read twice
SET ROLE dx_regress_rt;
WITH r AS MATERIALIZED (SELECT count(*) FILTER (WHERE age < 30) a, count(*) FILTER (WHERE age >= 60) b FROM rt)
SELECT a IS NOT NULL AS answered FROM r;
RESET ROLE;
SELECT * FROM rt_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM rt$$);
SET ROLE dx_regress_rt;
WITH r AS NOT MATERIALIZED (SELECT count(*) FILTER (WHERE age < 30) a, count(*) FILTER (WHERE age >= 60) b FROM rt)
SELECT r1.a = r2.a AS same_answer_twice FROM r r1, r r2;
RESET ROLE;
SELECT * FROM rt_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) FILTER (WHERE age >= 60) b FROM rt$$);

-- A3. HAVING and ORDER BY on aggregates outside the select list: they are released (they choose
-- the rows shown) and charged
SET ROLE dx_regress_rt;
SELECT sex FROM rt GROUP BY sex HAVING sum(age) > -1e9 ORDER BY sex;
RESET ROLE;
SELECT * FROM rt_check($$SELECT sex FROM rt GROUP BY sex HAVING dx.sum(age) > -1e9$$);
SET ROLE dx_regress_rt;
SELECT count(*) AS rows FROM (SELECT sex FROM rt GROUP BY sex ORDER BY count(*)) s;
RESET ROLE;
SELECT * FROM rt_check($$SELECT sex, dx.count(*) FROM rt GROUP BY sex$$);

-- A4. LIMIT 0, a false outer WHERE, EXISTS and a window over the released rows: charged in full
-- (or refused), never answered uncharged
SET ROLE dx_regress_rt;
SELECT rt_charges() AS before \gset
SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt) t LIMIT 0;
SELECT rt_charges() - :before AS limit0_charges, rt_last_epsilon() AS charged;
SELECT count(*) AS rows FROM (SELECT sex, count(*) n FROM rt GROUP BY sex) t WHERE n > 1e9;
SELECT rt_charges() - :before AS filtered_charges;
SELECT 1 AS one WHERE EXISTS (SELECT count(*) FROM rt);
SELECT count(*) AS rows, count(*) FILTER (WHERE s IS NOT NULL) AS answered
FROM (SELECT sex, sum(n) OVER () s FROM (SELECT sex, count(*) n, sum(age) m FROM rt GROUP BY sex) t) w;
RESET ROLE;
SELECT * FROM rt_check($$SELECT sex, dx.count(*) n, dx.sum(age) m FROM rt GROUP BY sex$$,
                       ARRAY[$$SELECT dx.count(*) FROM rt WHERE sex = 'F'$$, $$SELECT dx.count(*) FROM rt WHERE sex = 'M'$$]);

-- A5. GROUPING SETS with sets removed by the outer query: the whole allocation
SET ROLE dx_regress_rt;
SELECT count(*) AS rows, count(n) AS answered FROM (SELECT sex, ward, count(*) n FROM rt GROUP BY CUBE (sex, ward)) t
WHERE sex IS NOT NULL AND ward IS NOT NULL;
RESET ROLE;
SELECT * FROM rt_check($$SELECT sex, ward, dx.count(*) n FROM rt GROUP BY CUBE (sex, ward)$$);

-- A6. a cursor from which one of three groups is fetched: the whole release
SET ROLE dx_regress_rt;
BEGIN;
DECLARE rt_c CURSOR FOR SELECT ward, count(*) FROM rt GROUP BY ward;
FETCH 1 FROM rt_c \gset
COMMIT;
RESET ROLE;
SELECT * FROM rt_check($$SELECT ward, dx.count(*) FROM rt GROUP BY ward$$);

-- A7. a prepared statement whose epsilon changed before EXECUTE: charged what the noise used
SET ROLE dx_regress_rt;
PREPARE rt_p AS SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt;
SET dxpriv.epsilon = 0.5;
EXECUTE rt_p \gset
RESET ROLE;
SELECT rt_last_epsilon() AS charged_the_epsilon_of_prepare;
SET dxpriv.epsilon = 0.1;
SELECT * FROM rt_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) b FROM rt$$);
-- A8. ... and whose policy changed before EXECUTE (age's metric scale 5 -> 50: ten times the
-- sensitivity of a sum): the noise and the charge are those of the new policy
SET ROLE dx_regress_rt;
PREPARE rt_q AS SELECT sum(age) s FROM rt;
EXECUTE rt_q \gset
RESET ROLE;
SELECT * FROM rt_check($$SELECT dx.sum(age) s FROM rt$$);
SELECT dx.set_column('rt', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 50}');
SET ROLE dx_regress_rt;
SET plan_cache_mode = force_generic_plan;
EXECUTE rt_q \gset
RESET plan_cache_mode;
RESET ROLE;
SELECT * FROM rt_check($$SELECT dx.sum(age) s FROM rt$$);
SELECT dx.set_column('rt', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 5}');
-- the presence distance too (1 -> 3: three times a count's sensitivity)
SELECT dx.protect_table('rt', 3.0);
SET ROLE dx_regress_rt;
EXECUTE rt_p \gset
RESET ROLE;
SELECT * FROM rt_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) b FROM rt$$);
SELECT dx.protect_table('rt', 1.0);
SET ROLE dx_regress_rt;
DEALLOCATE rt_p;
DEALLOCATE rt_q;
RESET ROLE;

-- A9. the analyst's own PL/pgSQL function calling a release: each call charged; a recursive call
-- inside the open loop of the same cached plan gets the same answer (one charge, one draw)
SET ROLE dx_regress_rt;
CREATE FUNCTION rt_ws.f() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v bigint; BEGIN SELECT count(*) INTO v FROM rt WHERE age < 30; RETURN v; END $$;
SELECT rt_charges() AS before \gset
SELECT rt_ws.f() IS NOT NULL AS a, rt_ws.f() IS NOT NULL AS b;
SELECT rt_charges() - :before AS charges_for_two_calls;
CREATE FUNCTION rt_ws.r(n int) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE x record;
BEGIN
	FOR x IN SELECT count(*) AS c FROM rt WHERE age < 30 LOOP
		RETURN NEXT x.c;
		IF n > 0 THEN RETURN QUERY SELECT * FROM rt_ws.r(n - 1); END IF;
	END LOOP;
END $$;
SELECT rt_charges() AS before \gset
SELECT count(*) AS answers, count(DISTINCT v) AS distinct_answers FROM rt_ws.r(5) v;
SELECT rt_charges() - :before AS charges_for_the_recursion;
RESET ROLE;

-- A10. the answer cache: a repeated statement is replayed free; another epsilon or a wrapper that
-- drops an aggregate is a release of its own, charged
SET dxpriv.cache_lifetime = 3600;
SET ROLE dx_regress_rt;
SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt \gset first_
SELECT rt_charges() AS before \gset
SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt \gset second_
SELECT rt_charges() - :before AS replay_charges, :first_a = :second_a AS replayed;
SET dxpriv.epsilon = 0.2;
SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt \gset
SELECT rt_charges() - :before AS other_epsilon_charges, rt_last_epsilon() AS charged;
SET dxpriv.epsilon = 0.1;
SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt) t \gset
SELECT rt_charges() - :before AS wrapper_charges, rt_last_epsilon() AS charged;
RESET ROLE;
SET dxpriv.cache_lifetime = 0;

-- A11. parallel plans without the leader: answered and charged the allocation
SET force_parallel_mode = on;
SET parallel_leader_participation = off;
SET ROLE dx_regress_rt;
SELECT a IS NOT NULL AS answered FROM (SELECT count(*) FILTER (WHERE age < 30) a, count(*) b FROM rt) t;
RESET ROLE;
SELECT * FROM rt_check($$SELECT dx.count(*) FILTER (WHERE age < 30) a, dx.count(*) b FROM rt$$,
                       ARRAY[$$SELECT dx.count(*) FROM rt WHERE age < 30$$]);
RESET parallel_leader_participation;
RESET force_parallel_mode;

-- A12. a charge covers only what runs inside its statement: with a release open as a cursor (or
-- a PL/pgSQL loop over one), a view or function of the owner over the table, granted to PUBLIC,
-- is still refused (it returned the raw rows while the cursor was open)
CREATE VIEW rt_view AS SELECT id, age FROM rt;
GRANT SELECT ON rt_view TO PUBLIC;
CREATE FUNCTION rt_rows() RETURNS SETOF int LANGUAGE plpgsql AS 'BEGIN RETURN QUERY SELECT age FROM rt; END';
SET ROLE dx_regress_rt;
SELECT count(*) FROM rt_view;
-- next to a release in one statement: a join, a CTE, UNION ALL (the view's scan feeds no release)
SELECT v.id, v.age, t.n IS NOT NULL AS answered FROM rt_view v, (SELECT count(*) n FROM rt) t ORDER BY id LIMIT 3;
WITH t AS (SELECT count(*) n FROM rt) SELECT v.id, v.age FROM rt_view v, t ORDER BY id LIMIT 3;
SELECT id, age FROM rt_view UNION ALL SELECT 0, count(*) FROM rt LIMIT 3;
SELECT g.ward, g.n IS NOT NULL AS answered, v.age FROM (SELECT ward, count(*) n FROM rt GROUP BY ward) g
JOIN rt_view v ON v.id = 1 ORDER BY 1;
BEGIN;
DECLARE rt_open CURSOR FOR SELECT count(*) FROM rt;
SELECT id, age FROM rt_view ORDER BY id LIMIT 3;
COMMIT;
BEGIN;
DECLARE rt_open CURSOR FOR SELECT count(*) FROM rt;
FETCH 1 FROM rt_open \gset
SELECT count(*) FROM rt_view;
COMMIT;
BEGIN;
DECLARE rt_open CURSOR FOR SELECT count(*) FROM rt;
SELECT * FROM rt_rows() LIMIT 3;
COMMIT;
CREATE FUNCTION rt_ws.peek() RETURNS SETOF int LANGUAGE plpgsql AS $$
DECLARE x record;
BEGIN
	FOR x IN SELECT count(*) AS c FROM rt LOOP
		RETURN QUERY SELECT age FROM rt_view ORDER BY id LIMIT 3;
	END LOOP;
END $$;
SELECT * FROM rt_ws.peek();
-- nor inside the statement: the analyst's functions next to a release are refused
CREATE FUNCTION rt_ws.rows_of_view() RETURNS SETOF int LANGUAGE sql AS 'SELECT age FROM rt_view';
SELECT t.n IS NOT NULL, v FROM (SELECT count(*) n FROM rt) t, rt_ws.rows_of_view() v LIMIT 3;
CREATE FUNCTION rt_ws.one_of_view(bigint) RETURNS int LANGUAGE plpgsql AS
'BEGIN RETURN (SELECT age FROM rt_view ORDER BY id LIMIT 1); END';
SELECT rt_ws.one_of_view(n) FROM (SELECT count(*) n FROM rt) t;
-- an AFTER trigger of the analyst's own table, fired by a data-modifying CTE of a release statement
-- (in its ExecutorFinish), reads the view as a statement of its own: refused, nothing stored
CREATE TABLE rt_ws.sink (x int);
CREATE TABLE rt_ws.loot (age int);
CREATE FUNCTION rt_ws.trg() RETURNS trigger LANGUAGE plpgsql AS
'BEGIN INSERT INTO rt_ws.loot SELECT age FROM rt_view; RETURN NULL; END';
CREATE TRIGGER rt_trg AFTER INSERT ON rt_ws.sink FOR EACH ROW EXECUTE FUNCTION rt_ws.trg();
WITH ins AS (INSERT INTO rt_ws.sink VALUES (1) RETURNING x)
SELECT n IS NOT NULL AS answered FROM (SELECT count(*) n FROM rt) t, ins;
SELECT count(*) AS looted FROM rt_ws.loot;
RESET ROLE;
DROP VIEW rt_view;
DROP FUNCTION rt_rows();

-- ===================================================================== class 3: kept rows
-- Noiseless (presence Infinity, metrics none): a bounded count is exactly the number of rows kept.
-- 50 persons with 4 rows each, k = 1; person p's rows at ages 18, 60, 61, 62.
CREATE TABLE rt_v (pid int, age int, ward text) PARTITION BY RANGE (age);
CREATE TABLE rt_v_young PARTITION OF rt_v FOR VALUES FROM (0) TO (40);
CREATE TABLE rt_v_old PARTITION OF rt_v FOR VALUES FROM (40) TO (200);
INSERT INTO rt_v SELECT p, (ARRAY[18, 60, 61, 62])[v], (ARRAY['a','b','b','b'])[v]
FROM generate_series(1, 50) p, generate_series(1, 4) v;
-- three rows of an unknown person (NULL unit)
INSERT INTO rt_v VALUES (NULL, 18, 'a'), (NULL, 60, 'b'), (NULL, 70, 'b');
SELECT dx.protect_table('rt_v', 'Infinity');
SELECT dx.set_column('rt_v', 'age', '{"min": 0, "max": 100}', '{"type": "none"}');
SELECT dx.set_column('rt_v', 'ward', '{"values": ["a", "b"]}', '{"type": "none"}');
SELECT dx.set_privacy_unit('rt_v', 'pid', 1);
SELECT dx.grant_budget('dx_regress_rt', 'rt_v', 1000);
-- B1. a person's rows in two partitions (different tableoid): one row per person, the NULL unit one
SET ROLE dx_regress_rt;
SELECT count(*) AS kept_rows_51 FROM rt_v;
SELECT ward, count(*) > 0 AS some_kept FROM rt_v GROUP BY ward ORDER BY ward; -- (which: the rank hashes the table oid)
SELECT sum(n) AS kept_rows_51 FROM (SELECT ward, count(*) n FROM rt_v GROUP BY ward) s;
-- every person counted once by count_units, whichever partition holds the kept row (NULL: one unit)
SELECT count(DISTINCT pid) AS units_51 FROM rt_v;
SELECT sum(u) AS units_51 FROM (SELECT ward, count(DISTINCT pid) u FROM rt_v GROUP BY ward) s;
-- B2. WHERE and FILTER are applied after the bound: a young row is kept by about a quarter of the
-- persons (all 50 if the predicate chose the rows)
SELECT count(*) BETWEEN 1 AND 30 AS young_kept_by_rank FROM rt_v WHERE age < 40;
SELECT count(*) FILTER (WHERE age < 40) BETWEEN 1 AND 30 AS young_kept_by_rank FROM rt_v;
SELECT count(*) BETWEEN 1 AND 30 AS young_kept_by_rank FROM rt_v WHERE ward = 'a';
-- B3. the same with parallel workers (each draws its own key) and without the leader
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET parallel_leader_participation = off;
SELECT count(*) AS kept_rows_51 FROM rt_v;
SELECT count(*) BETWEEN 1 AND 30 AS young_kept_by_rank FROM rt_v WHERE age < 40;
RESET parallel_leader_participation;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
-- B4. a prepared statement, then the bound tightened (k 3 -> 1) before it runs again
RESET ROLE;
SELECT dx.set_privacy_unit('rt_v', 'pid', 3);
SET ROLE dx_regress_rt;
PREPARE rt_u AS SELECT count(*) FROM rt_v;
EXECUTE rt_u;
RESET ROLE;
SELECT dx.set_privacy_unit('rt_v', 'pid', 1);
SET ROLE dx_regress_rt;
EXECUTE rt_u;
DEALLOCATE rt_u;
-- B5. the unit's rank and the system columns are not the analyst's
SELECT count(*) FROM rt_v WHERE dx._unit_rank(tableoid, ctid) > 0;
SELECT count(*) FROM rt_v WHERE tableoid = 'rt_v_young'::regclass;
SELECT count(*) FROM rt_v GROUP BY tableoid;
SELECT dx._unit_rank('rt_v_young'::regclass, '(0,1)') IS NOT NULL AS ranked;
-- B6. a partition read directly is refused (its rows are the parent's)
SELECT count(*) FROM rt_v_young;
RESET ROLE;
-- B7. inheritance children, with a second person's rows spread over parent and child
CREATE TABLE rt_w (pid int, age int);
CREATE TABLE rt_w_child () INHERITS (rt_w);
INSERT INTO rt_w SELECT p, 18 FROM generate_series(1, 40) p;
INSERT INTO rt_w_child SELECT p, 60 FROM generate_series(1, 40) p, generate_series(1, 3);
SELECT dx.protect_table('rt_w', 'Infinity');
SELECT dx.set_column('rt_w', 'age', '{"min": 0, "max": 100}', '{"type": "none"}');
SELECT dx.set_privacy_unit('rt_w', 'pid', 2);
SELECT dx.grant_budget('dx_regress_rt', 'rt_w', 1000);
SET ROLE dx_regress_rt;
SELECT count(*) AS kept_rows_80 FROM rt_w;
SELECT count(*) AS own_rows_40 FROM ONLY rt_w;
SELECT count(*) BETWEEN 1 AND 35 AS young_kept_by_rank FROM rt_w WHERE age < 40;
RESET ROLE;

-- clean up
SELECT dx.remove_analyst('dx_regress_rt');
DROP OWNED BY dx_regress_rt;
DROP ROLE dx_regress_rt;
SELECT dx.unprotect_table('rt');
SELECT dx.unprotect_table('rt_v');
SELECT dx.unprotect_table('rt_w');
DROP TABLE rt, rt_v, rt_w CASCADE;
DROP FUNCTION rt_check(text, text[]);
DROP FUNCTION rt_charges();
DROP FUNCTION rt_last_epsilon();
RESET dxpriv.test_seed;
RESET dxpriv.epsilon;
RESET dxpriv.cache_lifetime;
