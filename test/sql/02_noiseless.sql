-- Exact answers: with presence 'Infinity' and metrics that do not constrain the query, the
-- sensitivity is 0 and dxpriv answers exactly, which checks rewriting and clamping end to end.
CREATE TABLE exact_t (k int, v int, grp text, d date);
INSERT INTO exact_t SELECT i, i % 10, CASE WHEN i % 4 = 0 THEN 'a' ELSE 'b' END, date '2024-01-01' + i
FROM generate_series(1, 100) AS i;
INSERT INTO exact_t VALUES (1000, 250, 'zzz', '2030-01-01'), (1001, -7, NULL, NULL), (1002, NULL, 'a', '1990-05-05');
SELECT dx.protect_table('exact_t', 'Infinity');
SELECT dx.set_column('exact_t', 'v', '{"min": 0, "max": 100}', '{"type": "none"}');
SELECT dx.set_column('exact_t', 'grp', '{"values": ["a", "b"]}', '{"type": "none"}');
SELECT dx.set_column('exact_t', 'd', '{"min": "2024-01-01", "max": "2024-12-31"}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'exact_t', 100);

-- count(*) with the row count public: exact
SELECT dx.count(*) AS dx_count FROM exact_t;
SELECT count(*) AS native FROM exact_t;
-- clamping: 250 -> 100, -7 -> 0, NULL -> 0 (the domain minimum)
SELECT dx.sum(v) AS dx_sum FROM exact_t;
SELECT sum(least(greatest(coalesce(v, 0), 0), 100)) AS clamped_native FROM exact_t;
SELECT dx.sum(v) FROM exact_t WHERE v >= 5;
SELECT sum(v) FROM exact_t WHERE v >= 5 AND v <= 9;
-- WHERE is evaluated on clamped values: 250 counts as 100, so v > 99 finds it
SELECT dx.count(*) FROM exact_t WHERE v > 99;
-- undeclared enum value 'zzz' and NULL map to the first declared value 'a'
SELECT dx.count(*) FROM exact_t WHERE grp = 'a';
SELECT count(*) FROM exact_t WHERE grp = 'a' OR grp IS NULL OR grp NOT IN ('a', 'b');
-- count(col) counts every row of a declared column (NULL maps into the domain)
SELECT dx.count(v) FROM exact_t;
-- expressions, IN lists, BETWEEN, CASE, FILTER, several aggregates
SELECT dx.sum(v * 2 + 1) FROM exact_t WHERE grp IN ('b') AND v BETWEEN 2 AND 4;
SELECT sum(v * 2 + 1) FROM exact_t WHERE grp = 'b' AND v BETWEEN 2 AND 4;
SELECT dx.count(*) FILTER (WHERE v < 3) AS low, dx.sum(CASE WHEN v > 5 THEN 1.5 ELSE 0 END) AS high FROM exact_t;
-- dates: clamped into 2024, compared as dates
SELECT dx.count(*) FROM exact_t WHERE d < date '2024-02-01';
-- post-processing of the answer is allowed
SELECT dx.count(*) * 2 AS doubled, round(dx.sum(v)::numeric / 10) AS tenth FROM exact_t HAVING dx.count(*) > 0 ORDER BY 1 LIMIT 1;
-- each aggregate was charged its own epsilon (default 0.1)
SELECT count(*), sum(epsilon) AS eps, max(scales[1]) AS max_scale FROM dx.ledger WHERE relid = 'exact_t'::regclass;
