#!/usr/bin/env bash
# make demo: starts a throwaway PostgreSQL cluster with dxpriv preloaded, loads 2000 synthetic
# people (test/demo/people.sql), declares a d_X-privacy policy and a standard-DP policy on two
# copies of the table, and runs the same queries against both as an analyst, printing the noisy
# answers, the exact answers (visible to the owner only), the noise scales and the budgets.
# Requires the extension to be installed (make install). Port: DXPRIV_DEMO_PORT (default 55499).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pg-env.sh"
port=${DXPRIV_DEMO_PORT:-55499}
started=$(date +%s)

work=$(owned_tmpdir demo)
cleanup() {
	local status=$?
	if [ $status -ne 0 ]; then
		echo "demo failed (exit $status); last lines of the server log:" >&2
		tail -n 20 "$work/server.log" "$work/initdb.log" 2>/dev/null >&2 || true
	fi
	stop_cluster "$work"
	rm -rf "$work"
	exit $status
}
trap cleanup EXIT
start_cluster "$work" "$port"
export PGDATABASE=postgres

# psql as the cluster owner (superuser); -X ignores ~/.psqlrc. Errors stop the script.
sql() { psql -X -q -v ON_ERROR_STOP=1 "$@" 2>&1; }
say() { printf '%s\n' "$@"; }
banner() { printf '\n==== %s ====\n' "$1"; }

epsilon=0.1
budget=1.0

banner "1. Setup (as the table owner, a superuser)"
say "start_cluster (scripts/pg-env.sh) set shared_preload_libraries = 'dxpriv' on a fresh cluster."
sql -e -c "SHOW shared_preload_libraries" -c "CREATE EXTENSION dxpriv" -c "CREATE ROLE analyst LOGIN"
say "Loading test/demo/people.sql (2000 deterministic rows) and a copy people_dp."
sql -f "$root/test/demo/people.sql"
sql <<'SQL'
-- A second copy of the same rows, to be protected the textbook (standard-DP) way.
CREATE TABLE public.people_dp (LIKE public.people INCLUDING ALL);
INSERT INTO public.people_dp SELECT * FROM public.people;
-- The analyst holds no privilege on protected tables: dxpriv admits only validated aggregates.
GRANT SELECT ON public.people, public.people_dp TO analyst;   -- taken away again by dx.add_analyst
SELECT dx.add_analyst('analyst');

-- Demo helper (owner only): one comparison table per query, from dx.ledger and dx.budgets.
CREATE SCHEMA demo;
CREATE FUNCTION demo.compare(dx_answer float8, dp_answer float8, exact_sql text)
RETURNS TABLE (policy text, answer float8, epsilon float8, "noise scale" float8,
               "95% error within ±" float8, "analyst budget left" float8)
LANGUAGE plpgsql AS $$
DECLARE
	exact float8;
BEGIN
	EXECUTE exact_sql INTO exact;
	RETURN QUERY
	SELECT r.label, r.answer, r.epsilon, r.scale, r.bound, r.remaining FROM (
		SELECT t.ord, t.label, t.answer, l.epsilon, l.scales[1] AS scale,
		       round((l.scales[1] * ln(20))::numeric, 1)::float8 AS bound, b.remaining
		FROM (VALUES (1, 'd_X (people)', 'public.people'::regclass, dx_answer),
		             (2, 'standard DP (people_dp)', 'public.people_dp'::regclass, dp_answer))
		     AS t(ord, label, rel, answer)
		CROSS JOIN LATERAL (SELECT * FROM dx.ledger g WHERE g.relid = t.rel AND g.role = 'analyst'::regrole
		                    ORDER BY g.id DESC LIMIT 1) AS l
		JOIN dx.budgets b ON b.role = 'analyst'::regrole AND b."table" = t.rel
		UNION ALL
		SELECT 3, 'exact (owner only)', exact, NULL, NULL, NULL, NULL) AS r
	ORDER BY r.ord;
END $$;
SQL
sql -c "SELECT count(*) AS rows, min(age) AS min_age, max(age) AS max_age, max(income) AS max_income,
               min(visit) AS first_visit, max(visit) AS last_visit FROM people"

banner "2. Policies (as the owner)"
say "people: d_X-privacy. presence = Infinity: the row count is public (bounded model), every"
say "declared column is protected by its own metric (distances are per unit of epsilon)."
say "people_dp: standard DP. presence = 1 and metric none everywhere: dxpriv then adds exactly"
say "the textbook Laplace noise. home_x/home_y stay undeclared: analysts cannot reference them."
sql -e <<SQL
\\o /dev/null
SELECT dx.protect_table('people', 'Infinity');
SELECT dx.set_column('people', 'age',       '{"min":18,"max":90}',                '{"type":"absolute","scale":10}');
SELECT dx.set_column('people', 'sex',       '{"values":["F","M"]}',               '{"type":"discrete","weight":2}');
SELECT dx.set_column('people', 'diagnosis', '{"values":["no","yes"]}',            '{"type":"per_value","weights":{"yes":1,"no":4}}');
SELECT dx.set_column('people', 'income',    '{"min":0,"max":200000,"step":100}',  '{"type":"absolute","scale":10000}');
SELECT dx.set_column('people', 'visit',     '{"min":"2024-01-01","max":"2024-12-31","step":1}', '{"type":"absolute","scale":7}');

SELECT dx.protect_table('people_dp', 1.0);
SELECT dx.set_column('people_dp', 'age',       '{"min":18,"max":90}',               '{"type":"none"}');
SELECT dx.set_column('people_dp', 'sex',       '{"values":["F","M"]}',              '{"type":"none"}');
SELECT dx.set_column('people_dp', 'diagnosis', '{"values":["no","yes"]}',           '{"type":"none"}');
SELECT dx.set_column('people_dp', 'income',    '{"min":0,"max":200000,"step":100}', '{"type":"none"}');
SELECT dx.set_column('people_dp', 'visit',     '{"min":"2024-01-01","max":"2024-12-31","step":1}', '{"type":"none"}');

SELECT dx.grant_budget('analyst', 'people', $budget);
SELECT dx.grant_budget('analyst', 'people_dp', $budget, delta => 1e-5);
SELECT dx.set_delta('people_dp', 1e-7);   -- allows (epsilon, delta) noise families on people_dp
SQL
sql -c "SELECT relid::regclass AS \"table\", column_name, domain, metric FROM dx.protected_columns ORDER BY 1::text, 2"

banner "3. Queries (as analyst, epsilon $epsilon each)"
say "Each query runs on both tables as the analyst; then the owner compares the noisy answers with"
say "the exact answer. Noise scale = S(q)/epsilon, read from dx.ledger (newest row); the 95% bound"
say "of Laplace noise is scale * ln(20) (about 3 * scale)."

# query TITLE EXPLANATION SELECT_LIST [WHERE] EXACT_SELECT_LIST
query() {
	local title=$1 explain=$2 select=$3 where=$4 exact=$5
	printf '\n-- %s\n%s\n' "$title" "$explain"
	sql <<SQL
SET ROLE analyst;
SET dxpriv.epsilon = $epsilon;
\\set ECHO queries
SELECT $select AS answer FROM people$where \\gset dx_
SELECT $select AS answer FROM people_dp$where \\gset dp_
\\set ECHO none
RESET ROLE;
SELECT * FROM demo.compare(:'dx_answer', :'dp_answer', \$q\$SELECT $exact FROM people$where\$q\$);
SQL
}

query "Q1. How many people? (row count)" \
"d_X: presence = Infinity makes the row count public: S = 0, the answer is exact (and still
charged). Standard DP: adding/removing one row changes the count by 1 at distance 1: S = 1." \
	"dx.count(*)" "" "count(*)"

query "Q2. How many women? (discrete metric, weight 2)" \
"d_X: changing one person's sex moves the count by 1 across a distance of 2: S = 1/2.
Standard DP: S = 1. Under standard DP a change of sex (remove + add) is distance 2 as well:
what d_X gives up here is hiding whether a row is present, and it gets half the noise." \
	"dx.count(*)" " WHERE sex = 'F'" "count(*)"

query "Q3. How many people have the diagnosis? (per_value metric yes:1, no:4)" \
"d_X: d(yes, no) = min(w(yes), w(no), 2*min w) = 1, so any count that separates yes from no
has S = 1, the same noise as standard DP (where S = 1 comes from adding or removing a row)." \
	"dx.count(*)" " WHERE diagnosis = 'yes'" "count(*)"

query "Q4. Total age (absolute metric, 10 years per unit of epsilon)" \
"d_X: ages one year apart are 1/10 apart; a sum moves by 1 per year: S = 1/(1/10) = 10.
Standard DP: one row may add or remove up to 90 years: S = 90. (Ages less than 20 years apart
are protected at least as well as by standard DP, where any change is distance 2; farther, less.)" \
	"dx.sum(age)" "" "sum(age)"

query "Q5. Total income (absolute metric, 10000 per unit of epsilon)" \
"d_X: adjacent domain points are 100 apart, i.e. 100/10000 = 0.01: S = 100/0.01 = 10000.
Standard DP (textbook sum of values clamped to 0..200000): one row adds up to 200000: S = 200000." \
	"dx.sum(income)" "" "sum(income)"

query "Q6. How many people aged 30-39? (the price of the absolute metric)" \
"d_X protects MORE than DP here: ages 29 and 30 are only 1/10 apart, yet the count changes by 1
between them: S = 1/(1/10) = 10. Standard DP only hides presence: S = 1. A metric says what must
stay indistinguishable; range counts on a finely protected column are expensive." \
	"dx.count(*)" " WHERE age BETWEEN 30 AND 39" "count(*)"

printf '\n-- %s\n%s\n' "Q7. Several aggregates in one query" \
"The query is one multi-linear query: its two cells share 0.1 + 0.1 = 0.2 through the relative
allocation (dxpriv.allocation), which never makes a cell noisier than splitting it evenly.
The ledger row lists one scale per cell, in SELECT-list order."
sql <<SQL
SET ROLE analyst;
SET dxpriv.epsilon = $epsilon;
\\set ECHO queries
SELECT dx.count(*) AS women, dx.sum(age) AS total_age FROM people WHERE sex = 'F';
SELECT dx.count(*) AS women, dx.sum(age) AS total_age FROM people_dp WHERE sex = 'F';
\\set ECHO none
RESET ROLE;
SELECT count(*) AS "women (exact, owner only)", sum(age) AS "total_age (exact, owner only)"
FROM people WHERE sex = 'F';
SELECT relid AS "table", epsilon, scales AS "noise scales", mechanism
FROM (SELECT * FROM dx.ledger ORDER BY id DESC LIMIT 2) l ORDER BY id;
SQL

banner "4. What an analyst cannot do"
# expect SQLSTATE SQL...: runs SQL as the analyst and requires it to fail with SQLSTATE.
expect() {
	local state=$1 stmt=$2
	sql <<SQL
SET ROLE analyst;
\\set ECHO queries
\\set ON_ERROR_STOP 0
$stmt
\\set ON_ERROR_STOP 1
\\set ECHO none
\\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT :'LAST_ERROR_SQLSTATE' = '$state' AS ok \\gset
\\if :ok
\\else
DO \$\$ BEGIN RAISE EXCEPTION 'demo: expected SQLSTATE $state'; END \$\$;
\\endif
SQL
}
printf '\n-- %s\n' "An undeclared column cannot be referenced (42501)."
expect 42501 "SELECT dx.count(*) FROM people WHERE home_x < 50;"
printf '\n-- %s\n' "A query that would overspend the budget gets no answer (53000), nothing is charged."
expect 53000 "SELECT dx.count(sex, 5.0) FROM people;"
printf '\n-- %s\n' "Raw rows are refused (42501), although the role had SELECT before dx.add_analyst."
expect 42501 "SELECT age, income FROM people LIMIT 5;"
printf '\n-- %s\n' "EXPLAIN would show exact row counts: refused for analysts (42501); dx.explain is the alternative."
expect 42501 "EXPLAIN ANALYZE SELECT count(*) FROM people;"
printf '\n-- %s\n' "Statistics are a side channel: pg_class size estimates read as unknown (reltuples -1, relpages 0) for analysts."
expect 00000 "SELECT reltuples, relpages FROM pg_class WHERE relname = 'people';"
printf '\n-- %s\n' "Volatile functions would make the answer random: refused with a hint (0A000)."
expect 0A000 "SELECT count(*) FROM people WHERE age > random() * 100;"

banner "5. Plain SQL as a BI tool sends it, GROUP BY, and dx.explain (as the analyst)"
say "count/sum/avg from an analyst are rewritten into dx aggregates; GROUP BY returns every declared"
say "group; dx.explain shows the cost and noise of a query without spending anything."
sql <<SQL
SET ROLE analyst;
SET dxpriv.epsilon = $epsilon;
\\set ECHO queries
SELECT "public"."people"."diagnosis" AS "diagnosis", count(*) AS "count"
FROM "public"."people" GROUP BY "public"."people"."diagnosis" ORDER BY "public"."people"."diagnosis" ASC LIMIT 2000;
SELECT cell, group_key, component, round(noise_scale::numeric, 3) AS noise_scale,
       round(ci95_half_width::numeric, 1) AS ci95, query_epsilon, round(remaining_budget::numeric, 3) AS remaining
FROM dx.explain('SELECT diagnosis, count(*) FROM people GROUP BY diagnosis');
\\set ECHO none
SQL

banner "5b. (epsilon, delta) noise families (as the analyst, on people_dp: delta 1e-7 per query)"
say "SET dxpriv.noise picks the noise of count/sum/avg: laplace (pure epsilon), gaussian (discrete"
say "Gaussian) or truncated_laplace (never off by more than noise_bound). The last two spend the"
say "table's delta once per query. For a query of a few cells, as here, Laplace noise is tighter: the"
say "Gaussian's cost grows with the l2 norm of what one record changes (not the l1 norm), so it pays off"
say "only when one record moves many cells at once. Truncated Laplace keeps the Laplace scale and adds a"
say "hard bound on the error."
sql <<SQL
SET ROLE analyst;
\\set ECHO queries
SET dxpriv.noise = 'laplace';
SELECT noise, round(noise_scale::numeric, 2) AS scale, round(ci95_half_width::numeric, 1) AS ci95, noise_bound, query_delta
FROM dx.explain('SELECT dx.count(1, 0.5), dx.sum(age, 0.5), dx.avg(income, 0.5) FROM people_dp') WHERE cell = 1;
SET dxpriv.noise = 'gaussian';
SELECT noise, round(noise_scale::numeric, 2) AS scale, round(ci95_half_width::numeric, 1) AS ci95, noise_bound, query_delta
FROM dx.explain('SELECT dx.count(1, 0.5), dx.sum(age, 0.5), dx.avg(income, 0.5) FROM people_dp') WHERE cell = 1;
SET dxpriv.noise = 'truncated_laplace';
SELECT noise, round(noise_scale::numeric, 2) AS scale, round(ci95_half_width::numeric, 1) AS ci95, noise_bound, query_delta
FROM dx.explain('SELECT dx.count(1, 0.5), dx.sum(age, 0.5), dx.avg(income, 0.5) FROM people_dp') WHERE cell = 1;
SELECT dx.count(1, 0.1) AS "people aged 30-39 (truncated Laplace)" FROM people_dp WHERE age BETWEEN 30 AND 39;
\\set ECHO none
RESET ROLE;
SELECT mechanism, epsilon, delta FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT "table", round(remaining::numeric, 6) AS remaining, delta_remaining FROM dx.budgets WHERE "table" = 'people_dp'::regclass;
SQL

banner "6. Budgets and ledger (as the owner)"
sql <<'SQL'
SELECT role, "table", granted, round(spent::numeric, 6) AS spent, round(remaining::numeric, 6) AS remaining
FROM dx.budgets ORDER BY "table"::text;
SELECT id, role, relid AS "table", fingerprint, mechanism, epsilon, scales FROM dx.ledger ORDER BY id;
SQL

banner "Summary"
say "Same epsilon ($epsilon per aggregate), same rows, two policies; noise scale = S(q)/epsilon:"
sql -P footer=off <<'SQL'
WITH r AS (SELECT relid, row_number() OVER (PARTITION BY relid ORDER BY id) AS n, scales[1] AS scale
           FROM dx.ledger)
SELECT q.label AS query, a.scale AS "d_X scale (people)", b.scale AS "standard DP scale (people_dp)"
FROM (VALUES (1, 'Q1 count(*)'), (2, 'Q2 count of women'), (3, 'Q3 count of diagnosis = yes'),
             (4, 'Q4 sum(age)'), (5, 'Q5 sum(income)'), (6, 'Q6 count of ages 30-39')) AS q(n, label)
JOIN r a ON a.n = q.n AND a.relid = 'public.people'::regclass
JOIN r b ON b.n = q.n AND b.relid = 'public.people_dp'::regclass
ORDER BY q.n;
SQL
say "d_X-privacy adds less noise where its policy lets some changes be seen more clearly than"
say "standard DP does (the row count is public, a change of sex is distance 2, incomes 10000 apart"
say "are distance 1), and more noise where it protects more (ages a year apart are distance 0.1, so"
say "a range count over age is expensive). Compare the guarantees, not only the noise."
say "Every answer, even the exact row count, was charged to the analyst's budget."
say "Charges are committed by dxpriv's ledger worker before any answer leaves the server: ROLLBACK,"
say "cancels and crashes never refund. README lists what is not in place yet."
say "demo finished in $(( $(date +%s) - started )) s"
