-- Demo data for scripts/demo.sh: 2000 synthetic people, generated deterministically in SQL
-- (hashtext of a column tag and the row number; no random()), so every run on PostgreSQL 15
-- shows the same exact answers. Values lie inside the domains that demo.sh declares:
--   age 18..90, sex F/M, diagnosis yes/no (about 5% yes), income 0..200000 in steps of 100,
--   visit 2024-01-01..2024-12-31. home_x/home_y (0..99) are left undeclared on purpose.
SET client_min_messages = warning;
DROP TABLE IF EXISTS public.people;
CREATE TABLE public.people (
	id int PRIMARY KEY,
	age int NOT NULL,
	sex text NOT NULL,
	diagnosis text NOT NULL,
	income int NOT NULL,
	home_x int NOT NULL,
	home_y int NOT NULL,
	visit date NOT NULL
);

-- A non-negative deterministic hash of (column tag, row number), in 0 .. 2^32-1.
CREATE FUNCTION pg_temp.h(tag text, i int) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT hashtext(tag || ':' || i)::bigint + 2147483648 $$;

INSERT INTO public.people (id, age, sex, diagnosis, income, home_x, home_y, visit)
SELECT i,
       18 + pg_temp.h('age', i) % 73,
       CASE WHEN pg_temp.h('sex', i) % 100 < 51 THEN 'F' ELSE 'M' END,
       CASE WHEN pg_temp.h('diagnosis', i) % 100 < 5 THEN 'yes' ELSE 'no' END,
       -- most incomes are 0..139800 (sum of two uniforms); 1 in 50 anywhere in 0..200000
       100 * CASE WHEN pg_temp.h('rich', i) % 50 = 0 THEN pg_temp.h('income1', i) % 2001
                  ELSE pg_temp.h('income1', i) % 700 + pg_temp.h('income2', i) % 700 END,
       pg_temp.h('x', i) % 100,
       pg_temp.h('y', i) % 100,
       date '2024-01-01' + (pg_temp.h('visit', i) % 366)::int
FROM generate_series(1, 2000) AS i;

ANALYZE public.people;
