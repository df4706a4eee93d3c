-- Shapes BI tools send (issue 24): COPY (<release>) TO STDOUT (DuckDB fetches with it), pg_class
-- size estimates answered as unknown (DuckDB's catalog load), refusals that name the fix.
CREATE TABLE bs (id int, age int, sex text);
INSERT INTO bs SELECT i, 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2] FROM generate_series(1, 500) AS i;
CREATE INDEX bs_age ON bs (age);
ANALYZE bs;
SELECT dx.protect_table('bs', 1);
SELECT dx.set_column('bs', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}');
SELECT dx.set_column('bs', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
CREATE ROLE bs_analyst;
SELECT dx.add_analyst('bs_analyst');
SELECT dx.grant_budget('bs_analyst', 'bs', 10);
SET dxpriv.cache_lifetime = 0;
-- the owner sees the planner's estimates
SELECT relpages > 0 AS owner_pages, reltuples = 500 AS owner_tuples FROM pg_class WHERE relname = 'bs';

SET ROLE bs_analyst;
-- 1. COPY (<valid release>) TO STDOUT: answered and charged exactly like the SELECT
CREATE TEMP TABLE spent0 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;
COPY (SELECT sex, n IS NOT NULL AS answered FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s ORDER BY sex) TO STDOUT;
SELECT count(*) - (SELECT n FROM spent0) AS charges, round((sum(epsilon) - (SELECT e FROM spent0))::numeric, 6) AS spent
FROM dx.my_ledger;
SELECT count(*) AS released FROM dx.last_release();
-- the same SELECT costs the same
CREATE TEMP TABLE spent1 AS SELECT coalesce(sum(epsilon), 0) AS e FROM dx.my_ledger;
SELECT sex, n IS NOT NULL AS answered FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s ORDER BY sex;
SELECT round((sum(epsilon) - (SELECT e FROM spent1))::numeric, 6) AS select_spent FROM dx.my_ledger;
-- attacks: a COPY of a wrapper that keeps no aggregate (the planner drops the unused count, so the
-- scan feeds no release) is refused exactly as the same SELECT is, and charges nothing
CREATE TEMP TABLE spent2 AS SELECT coalesce(sum(epsilon), 0) AS e, count(*) AS n FROM dx.my_ledger;
COPY (SELECT sex FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s ORDER BY sex) TO STDOUT;
SELECT sex FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s ORDER BY sex;
SELECT count(*) - (SELECT n FROM spent2) AS charges_of_wrapper FROM dx.my_ledger;
-- a COPY inside a transaction that rolls back keeps its charge
BEGIN;
COPY (SELECT count(*) > -1000 AS answered FROM bs) TO STDOUT;
ROLLBACK;
SELECT count(*) - (SELECT n FROM spent2) AS charges_after_rollback FROM dx.my_ledger;
-- COPY of anything else is still refused: raw rows, the table, a non-aggregated wrapper, a file
COPY (SELECT * FROM bs) TO STDOUT;
COPY (SELECT age FROM bs WHERE sex = 'F') TO STDOUT;
COPY bs TO STDOUT;
COPY (SELECT * FROM (SELECT age FROM bs) s) TO STDOUT;
COPY (SELECT count(*) FROM bs) TO '/tmp/dxpriv_bs_copy';
COPY (SELECT count(*) FROM bs) TO PROGRAM 'cat';
COPY bs FROM STDIN;
\.

-- 2. pg_class size estimates: unknown for analysts (relpages 0, reltuples -1, relallvisible 0),
-- for the table, its index, and a whole-row read; other columns unchanged
SELECT relname, relpages, reltuples, relallvisible FROM pg_class WHERE relname IN ('bs', 'bs_age') ORDER BY 1;
SELECT c.relname, c.relkind, c.reltuples FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relname = 'bs';
SELECT (c).relpages, (c).reltuples FROM (SELECT c FROM pg_class c WHERE relname = 'bs') s;
SELECT count(*) > 0 AS listed FROM pg_class WHERE relname = 'bs';
-- in a subquery too
SELECT (SELECT reltuples FROM pg_class WHERE relname = 'bs') AS sub_tuples;

-- 3. Refusals that name the fix
SELECT count(id) FROM bs;
-- a window next to the aggregate is answered since the window split (46_bi_windows_topk), and so is the wrapper
SELECT sex, share > 0 AS answered FROM (SELECT sex, count(*), count(*) * 1.0 / sum(count(*)) OVER () AS share
	FROM bs GROUP BY sex) t ORDER BY sex;
SELECT sex, share > 0 AS answered FROM (SELECT sex, n * 1.0 / sum(n) OVER () AS share
	FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s) t ORDER BY sex;
RESET ROLE;

-- 4. Row-count queries (SQLAlchemy's query.count(), knex, Superset): SELECT count(*) FROM (<grouped
-- release>) s is the number of declared groups, public: answered without reading or charging
SET ROLE bs_analyst;
CREATE TEMP TABLE spent3 AS SELECT count(*) AS n FROM dx.my_ledger;
SELECT count(*) AS groups FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s;
SELECT count(*) AS ages FROM (SELECT age, avg(age) FROM bs GROUP BY age) AS anon_1;
-- the groups WHERE keeps (declared points only: ages 0..9 hold no row and still count)
SELECT count(*) AS kept FROM (SELECT age, count(*) FROM bs WHERE age < 10 GROUP BY age) s;
SELECT count(1) AS one_row FROM (SELECT count(*) FROM bs) s;
SELECT count(*) - (SELECT n FROM spent3) AS charges_for_row_counts FROM dx.my_ledger;
-- attacks: a row count that depends on noisy answers (HAVING, a WHERE on them) is answered from the
-- release and charged; other aggregates over the release are post-processing of a charged release
SELECT count(*) <= 2 AS from_release FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex HAVING count(*) > 100) s;
SELECT count(*) <= 2 AS from_release FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s WHERE n > 100;
SELECT count(*) AS groups, max(n) > -1000 AS answered FROM (SELECT sex, count(*) AS n FROM bs GROUP BY sex) s;
SELECT count(*) - (SELECT n FROM spent3) AS charges_after_attacks FROM dx.my_ledger;
-- a count of raw rows is still a release of its own (merged into one query over the table, charged)
SELECT count(*) > -1000 AS answered FROM (SELECT * FROM bs WHERE age > 30) AS anon_1;
SELECT count(*) - (SELECT n FROM spent3) AS charges_in_all FROM dx.my_ledger;
-- a count over raw rows grouped without an aggregate is no release: refused
SELECT count(*) FROM (SELECT sex FROM bs GROUP BY sex) s;
RESET ROLE;
