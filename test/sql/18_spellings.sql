-- Issue 12 for analysts: standard spellings of dx aggregates, psql's size commands, and the views of
-- an analyst's own ledger rows and queryable policies.
\set VERBOSITY default
CREATE ROLE dx_regress_sp LOGIN;
CREATE ROLE dx_regress_sp_group;
CREATE ROLE dx_regress_sp_other;
GRANT dx_regress_sp_group TO dx_regress_sp;
GRANT SELECT ON people TO dx_regress_sp_other;   -- not an analyst: charged through dx aggregates
CREATE TABLE sp_open (k int);             -- an unprotected, empty table: its size is shown
GRANT SELECT ON sp_open TO PUBLIC;
CREATE TABLE sp_secret (k int NOT NULL, v int);  -- protected, no grant to dx_regress_sp
SELECT dx.protect_table('sp_secret');
SELECT dx.set_column('sp_secret', 'v', '{"values": [1, 2, 3]}', '{"type": "discrete"}');
SELECT dx.add_analyst('dx_regress_sp');
SELECT dx.grant_budget('dx_regress_sp', 'people', 50);
SELECT dx.grant_budget('dx_regress_sp_group', 'people', 5);
SELECT dx.grant_budget('dx_regress_sp_other', 'people', 7);
SELECT dx.grant_budget('dx_regress_sp_other', 'sp_secret', 9);
-- a charge of another role, which the analyst must never see
SET ROLE dx_regress_sp_other;
SELECT dx.count(*) IS NOT NULL AS answered FROM people WHERE age > 77;
RESET ROLE;
CREATE FUNCTION sp_leak(r regrole, e float8) RETURNS boolean COST 0.0001 LANGUAGE plpgsql AS
$$ BEGIN RAISE NOTICE 'leak: % %', r, e; RETURN true; END $$;
CREATE FUNCTION sp_leak_policy(t regclass, d jsonb) RETURNS boolean COST 0.0001 LANGUAGE plpgsql AS
$$ BEGIN RAISE NOTICE 'leak: % %', t, d; RETURN true; END $$;

SET dxpriv.test_seed = 12;
SET dxpriv.epsilon = 0.5;
SET ROLE dx_regress_sp;
-- percentile_cont / percentile_disc / mode() WITHIN GROUP are dx.quantile / dx.mode
SELECT pg_typeof(percentile_cont(0.5) WITHIN GROUP (ORDER BY age)) AS cont_type,
       pg_typeof(percentile_disc(0.5) WITHIN GROUP (ORDER BY age)) AS disc_type,
       pg_typeof(mode() WITHIN GROUP (ORDER BY sex)) AS mode_type FROM people;
SELECT percentile_disc(0.9) WITHIN GROUP (ORDER BY age) BETWEEN 0 AND 120 AS in_domain FROM people;
SELECT sex, mode() WITHIN GROUP (ORDER BY native) IN ('Y', 'N') AS declared_value FROM people GROUP BY sex ORDER BY sex;
-- every spelling is a charged release of its own (DESC at level p is the (1 - p)-quantile); an
-- identical repeat is replayed by the answer cache (5 charges for these 6 statements)
SELECT count(*) AS ledger_rows FROM dx.my_ledger \gset
SELECT percentile_disc(0.25) WITHIN GROUP (ORDER BY income) AS answer FROM people;
SELECT dx.quantile(income, 0.25) AS answer FROM people;
SELECT percentile_disc(0.75) WITHIN GROUP (ORDER BY income DESC) AS answer FROM people;
SELECT mode() WITHIN GROUP (ORDER BY sex) AS answer FROM people;
SELECT dx.mode(sex) AS answer FROM people;
SELECT dx.mode(sex) AS answer FROM people;
SELECT count(*) - :ledger_rows AS charges FROM dx.my_ledger;
-- count(col) on an undeclared NOT NULL column (the primary key) is a row count
SELECT count(id) > 0 AS answered FROM people;
SELECT count(note) FROM people;
-- refused, with hints naming dx.quantile / dx.mode
SELECT min(age) FROM people;
SELECT max(income) FROM people WHERE sex = 'F';
SELECT count(DISTINCT age / 2) FROM people;
SELECT percentile_cont(ARRAY[0.25, 0.75]) WITHIN GROUP (ORDER BY age) FROM people;
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY age / 2) FROM people;
SELECT string_agg(sex, ',') FROM people;
-- over released rows, min/max are post-processing
SELECT max(n) IS NOT NULL AS answered FROM (SELECT sex, count(*) AS n FROM people GROUP BY sex) s;

-- psql size commands: unprotected relations are measured, protected ones (and their indexes) are NULL
\dt+ (people|sp_open|sp_secret)
\di+ people_pkey
SELECT pg_table_size('sp_open') AS open_size, pg_table_size('people') AS people_size,
       pg_relation_size('people_pkey') AS index_size, pg_total_relation_size('people') AS total_size,
       pg_indexes_size('people') AS indexes_size, pg_relation_size('people', 'main') AS main_fork;
SELECT pg_database_size(current_database()) AS this_database,
       (SELECT pg_database_size(oid) FROM pg_database WHERE datname = current_database()) AS by_oid,
       pg_tablespace_size('pg_default') AS default_tablespace;
SELECT * FROM pg_table_size('people');
SELECT pg_column_size(age) FROM people;
-- a size function that reaches the plan without being analysed as the analyst's is refused there
SET check_function_bodies = off;
CREATE FUNCTION pg_temp.sz() RETURNS bigint LANGUAGE sql AS $$ SELECT pg_catalog.pg_table_size('people') $$;
SELECT pg_temp.sz();
CREATE TEMP TABLE sp_probe (x bigint DEFAULT pg_catalog.pg_relation_size('people'));
INSERT INTO sp_probe DEFAULT VALUES RETURNING x;
RESET check_function_bodies;

-- own ledger rows: the analyst's and her group's, never another role's, even through a leaky filter
SELECT count(*) AS own_rows, count(DISTINCT role) AS roles, bool_and(role = 'dx_regress_sp'::regrole) AS all_own,
       bool_and(query IS NOT NULL) AS own_texts FROM dx.my_ledger;
SELECT role, "table", epsilon FROM dx.my_ledger WHERE sp_leak(role, epsilon) ORDER BY id LIMIT 2;
SELECT count(*) AS other_rows FROM dx.my_ledger WHERE role = 'dx_regress_sp_other'::regrole;
-- policies of the tables she holds a budget on (her own and her group's grants), none of sp_secret
SELECT "table", column_name, columns, domain, metric, presence, budget_role, granted
FROM dx.my_columns ORDER BY budget_role::text, column_name;
SELECT count(*) AS secret_policy_rows FROM dx.my_columns WHERE sp_leak_policy("table", domain) AND "table" = 'sp_secret'::regclass;
SELECT budget_role, remaining < granted AS has_spent FROM dx.my_columns WHERE column_name = 'age' ORDER BY budget_role::text;
-- the views are read-only
DELETE FROM dx.my_ledger;
RESET ROLE;
RESET dxpriv.test_seed;
RESET dxpriv.epsilon;
SELECT dx.remove_analyst('dx_regress_sp');
REVOKE SELECT ON people FROM dx_regress_sp_other;
SELECT dx.revoke_budget(r, 'people') FROM unnest(ARRAY['dx_regress_sp', 'dx_regress_sp_group', 'dx_regress_sp_other']::regrole[]) r;
SELECT dx.unprotect_table('sp_secret');
DROP TABLE sp_secret, sp_open;
DROP FUNCTION sp_leak(regrole, float8), sp_leak_policy(regclass, jsonb);
