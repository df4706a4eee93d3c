-- Privilege audit of the extension's objects (issue 10).
CREATE ROLE dx_regress_nobody;
-- internal functions (names starting with "_") that PUBLIC may still execute: exactly those that
-- analysts' rewritten statements and dx's public views call with the caller's privileges
-- (sql/90_privileges.sql). A new internal function must be revoked or added to that list.
SELECT p.oid::regprocedure AS executable_internal_function
FROM pg_proc p
WHERE p.pronamespace = 'dx'::regnamespace AND p.proname LIKE '\_%'
  AND has_function_privilege('dx_regress_nobody', p.oid, 'EXECUTE')
ORDER BY 1::text;
-- every SECURITY DEFINER function has a fixed search_path
SELECT p.oid::regprocedure AS security_definer_without_search_path
FROM pg_proc p
WHERE p.pronamespace = 'dx'::regnamespace AND p.prosecdef
  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search\_path=%');
SELECT count(*) > 0 AS has_security_definer_functions FROM pg_proc WHERE pronamespace = 'dx'::regnamespace AND prosecdef;
-- views, their options and whether PUBLIC may read them; tables are never readable by PUBLIC
SELECT c.relname, c.reloptions, has_table_privilege('dx_regress_nobody', c.oid, 'SELECT') AS public_select
FROM pg_class c WHERE c.relnamespace = 'dx'::regnamespace AND c.relkind = 'v' ORDER BY c.relname;
SELECT c.relname AS table_readable_by_public FROM pg_class c
WHERE c.relnamespace = 'dx'::regnamespace AND c.relkind IN ('r', 'p', 'S')
  AND has_table_privilege('dx_regress_nobody', c.oid, 'SELECT');

-- internal helpers refuse a direct call by an ordinary role
SET ROLE dx_regress_nobody;
SELECT dx._invalidate('people');
SELECT dx._revoke_from_analysts('people');
SELECT dx._check_owner('people');
SELECT dx._caller_is_superuser();
SELECT dx._validate_group('{int4,int4}', '{"points_table": "dx.budget_grants"}', '{"type": "l1", "scale": 1}');
-- the aggregates still work: PostgreSQL checks their support functions against their owner
SELECT (dx.ibu(r, 0, 3, 1.0, 'krr', 10))[1] IS NOT NULL AS ibu_works FROM (VALUES (0), (1), (2)) v(r);
RESET ROLE;

-- dx.budgets is a security barrier: a cheap leaky filter sees only the caller's rows
CREATE TABLE budget_t (k int);
SELECT dx.protect_table('budget_t');
SELECT dx.grant_budget('dx_regress_nobody', 'budget_t', 1.5);
SELECT dx.grant_budget('dx_regress_other', 'budget_t', 7.25);
CREATE FUNCTION public.leak(r regrole, g float8) RETURNS boolean COST 0.0001 LANGUAGE plpgsql AS
$$ BEGIN RAISE NOTICE 'leak: % %', r, g; RETURN true; END $$;
SET ROLE dx_regress_nobody;
SELECT role, granted FROM dx.budgets WHERE leak(role, granted) AND "table" = 'budget_t'::regclass;
SELECT count(*) AS other_rows_visible FROM dx.budgets WHERE role = 'dx_regress_other'::regrole;
RESET ROLE;
-- the owner of the table sees every grant on it
SELECT role, granted FROM dx.budgets WHERE "table" = 'budget_t'::regclass ORDER BY role::text;

DROP FUNCTION public.leak(regrole, float8);
SELECT dx.unprotect_table('budget_t');
DROP TABLE budget_t;
DROP ROLE dx_regress_nobody;
