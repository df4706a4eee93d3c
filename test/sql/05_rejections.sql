-- Query shapes dxpriv refuses, each with an errcode and a hint.
\set VERBOSITY default
SET dxpriv.epsilon = 0.01;
SELECT note, dx.count(*) FROM people GROUP BY note;
SELECT dx.count(*), count(*) FROM people;
SELECT dx.count(*) FROM people WHERE id > 3;
SELECT dx.sum(note) FROM people;
SELECT dx.sum(length(note)) FROM people;
SELECT dx.count(*) FROM people WHERE age > random() * 10;
SELECT dx.count(*) FROM people WHERE visit < clock_timestamp();
SELECT dx.count(*) FROM people p JOIN exact_t e ON true;
SELECT dx.count(*) FROM people, exact_t;
SELECT dx.count(*) FROM people WHERE age IN (SELECT v FROM exact_t);
SELECT (SELECT dx.count(*) FROM people);
-- post-processing wrappers around a release are answered (the noisy value itself is not shown here)
SELECT n IS NOT NULL AS answered FROM (SELECT dx.count(*) AS n FROM people) s;
WITH t AS (SELECT * FROM people) SELECT dx.count(*) FROM t;
SELECT count(*) AS rows FROM (SELECT dx.count(*) FROM people UNION ALL SELECT 1) u;
SELECT dx.count(*) OVER () FROM people;
SELECT DISTINCT dx.count(*) FROM people;
SELECT dx.count(DISTINCT age) FROM people;
SELECT dx.sum(age ORDER BY age) FROM people;
SELECT dx.count(*) FROM people TABLESAMPLE SYSTEM (50);
SELECT dx.count(*) FROM people FOR UPDATE;
SELECT dx.count(*) FROM people WHERE people.ctid > '(0,1)';
SELECT dx.count(people) FROM people;
SELECT dx.count(age, 0) FROM people;
SELECT dx.count(age, -1) FROM people;
SELECT dx.count(age, 'NaN') FROM people;
SELECT dx.count(age, 'Infinity') FROM people;
SELECT dx.count(age, NULL) FROM people;
SELECT dx.count(age, age::float8) FROM people;
SELECT dx.count(*) FROM exact_t e, generate_series(1, 2);
SELECT dx.count(*) FROM generate_series(1, 3);
SELECT dx.count(*) FROM people_view;
SELECT dx._noisy_count(1, 0, '{1,1,1,16384,5,0,0,1,1,0}') FROM people;
SELECT dx._noisy_sum(age, 0, '{1,1,1,16384,5,0,0,1,1,0}') FROM exact_t, people;
SELECT dx._noisy_avg(1, 0, '{1,1,1,16384,5,0,0,1,1,0}');
-- parameters are analysed when bound; a bad epsilon is refused at EXECUTE, a forced generic plan
-- at planning
PREPARE p(float8) AS SELECT dx.count(*), dx.count(age, $1) FROM people;
EXECUTE p(-1);
SET plan_cache_mode = force_generic_plan;
EXECUTE p(0.5);
RESET plan_cache_mode;
DEALLOCATE p;
SET dxpriv.epsilon = 0;
SET dxpriv.epsilon = -1;
RESET dxpriv.epsilon;
-- dx aggregates cannot be stored in definitions
CREATE VIEW v AS SELECT dx.count(*) FROM people;
CREATE MATERIALIZED VIEW mv AS SELECT dx.count(*) FROM people;
-- (an atomic SQL function body is stored unvalidated; running it fails closed)
CREATE FUNCTION f() RETURNS bigint LANGUAGE sql BEGIN ATOMIC SELECT dx.count(*) FROM people; END;
SELECT f();
-- unprotected table
CREATE TABLE open_t (a int);
SELECT dx.count(*) FROM open_t;
-- a sub-universe over the cap is refused before any work
CREATE TABLE wide (a int, b int);
SELECT dx.protect_table('wide');
SELECT dx.set_column('wide', 'a', '{"min": 0, "max": 99999}', '{"type": "discrete"}');
SELECT dx.set_column('wide', 'b', '{"min": 0, "max": 99999}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'wide', 1);
SELECT dx.count(*) FROM wide WHERE a < b;
-- GROUP BY a primary key: PostgreSQL's functional dependency would let other columns of the row
-- appear outside aggregates; only GROUP BY keys may
CREATE TABLE pk_visits (id int PRIMARY KEY, tag text, grp int, secret text);
INSERT INTO pk_visits SELECT i, CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END, i % 5, 'secret ' || i FROM generate_series(1, 20) i;
SELECT dx.protect_table('pk_visits');
SELECT dx.set_column('pk_visits', 'id', '{"min": 1, "max": 20}', '{"type": "discrete"}');
SELECT dx.set_column('pk_visits', 'tag', '{"values": ["a", "b"]}', '{"type": "discrete"}');
SELECT dx.set_column('pk_visits', 'grp', '{"min": 0, "max": 4}', '{"type": "discrete"}');
SELECT dx.grant_budget(current_user::regrole, 'pk_visits', 1);
SELECT id, tag, dx.count(*) FROM pk_visits GROUP BY id;
SELECT id, dx.count(*) FROM pk_visits GROUP BY id HAVING grp = 3;
SELECT id, dx.count(*) FROM pk_visits GROUP BY id ORDER BY tag;
SELECT id, secret, dx.count(*) FROM pk_visits GROUP BY id;
-- GROUP BY () is one grouping set: answered like no GROUP BY
SELECT dx.count(*) IS NOT NULL AS answered FROM pk_visits GROUP BY ();
-- an epsilon too small for any calibration
SELECT dx.count(1, 1e-320) FROM pk_visits;
SELECT dx.count(1, 1e-16) FROM pk_visits;
-- a domain CHECK failing at a declared value: the error says where, not a bare 23514
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
SELECT dx.count(*) FROM pk_visits WHERE grp::posint > 1;
SELECT dx.unprotect_table('pk_visits');
DROP TABLE pk_visits;
DROP DOMAIN posint;
-- nothing above was charged
SELECT count(*) FROM dx.ledger WHERE epsilon = 0.01;
