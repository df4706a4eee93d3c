-- GROUPING SETS, ROLLUP and CUBE: one statement, one allocation. A record moves one cell of every
-- grouping set, so the cells of all the sets are allocated together within the statement's
-- epsilon (the privacy condition sums over every set's cells), and the ledger is charged that
-- epsilon once -- not once per set.
CREATE TABLE gs (age int, sex text, ward text);
INSERT INTO gs SELECT 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c'])[1 + i % 3]
FROM generate_series(1, 600) AS i;
SELECT dx.protect_table('gs', 1);
SELECT dx.set_column('gs', 'age', '{"min": 0, "max": 100, "step": 10}', '{"type": "absolute", "scale": 20}');
SELECT dx.set_column('gs', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.set_column('gs', 'ward', '{"values": ["a", "b", "c"]}', '{"type": "discrete", "weight": 3}');
SELECT dx.grant_budget(current_user::regrole, 'gs', 100);
SET dxpriv.epsilon = 1;
SET dxpriv.cache_lifetime = 0;
SET dxpriv.test_seed = 21;

-- dx.explain of a ROLLUP: the cells of its three sets (6 + 2 + 1), allocated together; the
-- epsilon column is what each cell received (s_k / b_k). The empty set's group is "()".
SELECT cell, aggregate, group_key, round(epsilon::numeric, 6) AS epsilon, round(noise_scale::numeric, 6) AS scale,
	query_epsilon, allocation
FROM dx.explain('SELECT sex, ward, dx.count(*) FROM gs GROUP BY ROLLUP (sex, ward)') ORDER BY cell;
-- the privacy condition of the presence edges: a record at (sex, ward) moves one cell of each
-- set, and the epsilons of those three cells sum to at most the statement's epsilon
CREATE TEMP TABLE rollup_cells AS
	SELECT group_key, epsilon FROM dx.explain('SELECT sex, ward, dx.count(*) FROM gs GROUP BY ROLLUP (sex, ward)');
SELECT max(full_set.epsilon + by_sex.epsilon + total.epsilon) <= 1 + 1e-9 AS presence_edges_private,
	round(max(full_set.epsilon + by_sex.epsilon + total.epsilon)::numeric, 6) AS largest_sum
FROM rollup_cells full_set
JOIN rollup_cells by_sex ON by_sex.group_key = split_part(full_set.group_key, ', ', 1)
JOIN rollup_cells total ON total.group_key = '()'
WHERE full_set.group_key LIKE '%, %';
-- running it charges the statement's epsilon once, with the scales dx.explain announced
CREATE TEMP TABLE announced AS
	SELECT array_agg(noise_scale ORDER BY cell) AS scales
	FROM dx.explain('SELECT sex, ward, dx.count(*) FROM gs GROUP BY ROLLUP (sex, ward)') WHERE cell IS NOT NULL;
SELECT count(*) AS rows, bool_and(n > -1000) AS answered FROM (SELECT sex, ward, dx.count(*) AS n FROM gs GROUP BY ROLLUP (sex, ward)) r;
SELECT epsilon, array_length(scales, 1) AS cells, scales = (SELECT scales FROM announced) AS explain_matches_ledger
FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'gs'::regclass;

-- CUBE of two keys: four sets, 12 cells, still the statement's epsilon once
SELECT count(*) AS rows, bool_and(n > -1000) AS answered FROM (SELECT sex, ward, dx.count(*) AS n FROM gs GROUP BY CUBE (sex, ward)) c;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
-- relative (the default) is never noisier than equal_split across the joint cells
CREATE TEMP TABLE strat AS
	SELECT 'relative' AS name, cell, noise_scale AS scale
	FROM dx.explain('SELECT sex, ward, dx.count(*), dx.avg(age) FROM gs GROUP BY CUBE (sex, ward)') WHERE cell IS NOT NULL;
SET dxpriv.allocation = 'equal_split';
INSERT INTO strat SELECT 'equal_split', cell, noise_scale
	FROM dx.explain('SELECT sex, ward, dx.count(*), dx.avg(age) FROM gs GROUP BY CUBE (sex, ward)') WHERE cell IS NOT NULL;
-- equal_split gives each of the 36 cells 1/36 of the statement's epsilon (2: count and avg)
SELECT DISTINCT round(epsilon::numeric, 9) AS equal_split_share, query_epsilon
FROM dx.explain('SELECT sex, ward, dx.count(*), dx.avg(age) FROM gs GROUP BY CUBE (sex, ward)') WHERE cell IS NOT NULL;
RESET dxpriv.allocation;
SELECT count(*) AS cells, bool_and(r.scale <= e.scale * (1 + 1e-9)) AS relative_never_noisier_than_equal_split,
	count(*) FILTER (WHERE r.scale < 0.99 * e.scale) AS cells_less_noisy
FROM strat r JOIN strat e USING (cell) WHERE r.name = 'relative' AND e.name = 'equal_split';

-- a set repeated twice buys no extra release for free: the two copies share the epsilon, each
-- noisier than the set alone
SELECT noise_scale AS alone FROM dx.explain('SELECT sex, dx.count(*) FROM gs GROUP BY sex') WHERE cell = 1 \gset
SELECT count(*) AS cells, bool_and(noise_scale >= :alone * 2 * (1 - 1e-9)) AS each_copy_twice_as_noisy, max(query_epsilon) AS query_epsilon
FROM dx.explain('SELECT sex, dx.count(*) FROM gs GROUP BY GROUPING SETS ((sex), (sex))') WHERE cell IS NOT NULL;
SELECT count(*) AS rows, bool_and(n > -1000) AS answered FROM (SELECT sex, dx.count(*) AS n FROM gs GROUP BY GROUPING SETS ((sex), (sex))) t;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- explicit epsilons: each aggregate's cells, in every set, within its own epsilon; charged their sum
SELECT aggregate, group_key, component, round(epsilon::numeric, 6) AS epsilon, query_epsilon
FROM dx.explain('SELECT sex, dx.count(age, 0.5), dx.sum(age, 0.25) FROM gs GROUP BY ROLLUP (sex)') ORDER BY cell;
SELECT count(*) AS rows, bool_and(n > -1000 AND s > -1e9) AS answered
FROM (SELECT sex, dx.count(age, 0.5) AS n, dx.sum(age, 0.25) AS s FROM gs GROUP BY ROLLUP (sex)) t;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- dx.last_release: the statement's aggregates, each group of each set, its epsilon shared by the sets
SELECT sex, ward, dx.count(*) > -1000 AS answered FROM gs GROUP BY ROLLUP (sex, ward) ORDER BY 1, 2;
SELECT cell, aggregate, kind, group_key, component, round(noise_scale::numeric, 6) AS scale, epsilon, reused
FROM dx.last_release() ORDER BY cell;

-- a HAVING that keeps one set's rows (GROUPING() is a constant in each set's branch): the
-- statement is still charged its whole epsilon, which that set's cells shared with the others
SELECT sex, ward, dx.count(*) > -1000 AS answered FROM gs GROUP BY ROLLUP (sex, ward) HAVING GROUPING(sex, ward) = 3;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- wrapped in a subquery or a CTE: the same single charge
SELECT count(*) AS rows FROM (SELECT sex, dx.count(*) AS n FROM gs GROUP BY ROLLUP (sex)) s WHERE n > -1000;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
WITH r AS (SELECT ward, dx.count(*) AS n FROM gs GROUP BY CUBE (ward)) SELECT count(*) AS rows, bool_and(n > -1000) AS answered FROM r;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- bound parameters: each execution analysed, allocated and charged once with its values
PREPARE gs_param(int) AS SELECT sex, dx.count(*) > -1000 AS answered FROM gs WHERE age >= $1 GROUP BY ROLLUP (sex) ORDER BY 1;
EXECUTE gs_param(30);
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
EXECUTE gs_param(200);
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
DEALLOCATE gs_param;

-- the answer cache replays the whole statement (every set's answers): same answers, nothing
-- spent, also under other output names and another ORDER BY
SET dxpriv.cache_lifetime = 3600;
CREATE TEMP TABLE run1 AS SELECT sex, ward, dx.count(*) AS n FROM gs GROUP BY ROLLUP (sex, ward);
SELECT count(*) AS ledger_rows FROM dx.ledger WHERE relid = 'gs'::regclass \gset before_
CREATE TEMP TABLE run2 AS SELECT sex AS s, ward AS w, dx.count(*) AS n FROM gs GROUP BY ROLLUP (sex, ward) ORDER BY 3;
SELECT DISTINCT reused FROM dx.last_release();
SELECT (SELECT count(*) FROM dx.ledger WHERE relid = 'gs'::regclass) - :before_ledger_rows AS charges_for_the_replay;
SELECT count(*) AS same_rows FROM run1 JOIN run2 ON run1.sex IS NOT DISTINCT FROM run2.s
	AND run1.ward IS NOT DISTINCT FROM run2.w AND run1.n = run2.n;
-- another set list is another statement: charged
CREATE TEMP TABLE run3 AS SELECT sex, ward, dx.count(*) AS n FROM gs GROUP BY CUBE (sex, ward);
SELECT (SELECT count(*) FROM dx.ledger WHERE relid = 'gs'::regclass) - :before_ledger_rows AS charges_after_a_cube;
SET dxpriv.cache_lifetime = 0;

-- refused: the exponential mechanism in grouping sets (its sets would not share the epsilon)
SELECT sex, dx.median(age) FROM gs GROUP BY ROLLUP (sex);
-- refused: too many grouping sets
SELECT dx.count(*) FROM gs GROUP BY CUBE (age, sex, ward, age + 1, age + 2, age + 3, age + 4);
RESET dxpriv.test_seed;

-- parallel plans: a set without GROUP BY over a table without rows gets its final state from the
-- statement's parameters; every set's branch is a partial/finalize pair of its own, and each
-- finalize phase uses its own set's parameters (the scales dx.explain announced)
CREATE TABLE gs_empty (age int, sex text);
SELECT dx.protect_table('gs_empty', 1);
SELECT dx.set_column('gs_empty', 'age', '{"min": 0, "max": 100, "step": 10}', '{"type": "absolute", "scale": 20}');
SELECT dx.set_column('gs_empty', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}');
SELECT dx.grant_budget(current_user::regrole, 'gs_empty', 100);
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET max_parallel_workers_per_gather = 2;
EXPLAIN (COSTS OFF) SELECT sex, dx.sum(age) FROM gs_empty GROUP BY ROLLUP (sex);
SELECT sex, dx.sum(age) IS NOT NULL AS answered FROM gs_empty GROUP BY ROLLUP (sex) ORDER BY 1;
SELECT group_key, noise_scale = e.scale AS scale_as_explained
FROM dx.last_release() JOIN (SELECT cell, noise_scale AS scale FROM dx.explain('SELECT sex, dx.sum(age) FROM gs_empty GROUP BY ROLLUP (sex)')) e USING (cell)
ORDER BY cell;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
RESET max_parallel_workers_per_gather;
