-- GROUP BY: every group of the declared domain is returned (empty ones too), several aggregates,
-- avg and linear; exact answers on a noiseless table, then noisy scales on a protected one.
CREATE TABLE shop (region text, tier int, amount int, qty int);
INSERT INTO shop SELECT (ARRAY['north','south','east'])[1 + i % 3], 1 + i % 2, (i * 7) % 50, 1 + i % 4
FROM generate_series(1, 300) AS i;
INSERT INTO shop VALUES ('mars', 9, 500, 1);   -- clamped: region -> 'north', tier -> 3, amount -> 100
SELECT dx.protect_table('shop', 'Infinity');
SELECT dx.set_column('shop', 'region', '{"values": ["north", "south", "east", "west"]}', '{"type": "none"}');
SELECT dx.set_column('shop', 'tier', '{"min": 1, "max": 3}', '{"type": "none"}');
SELECT dx.set_column('shop', 'amount', '{"min": 0, "max": 100}', '{"type": "none"}');
SELECT dx.set_column('shop', 'qty', '{"min": 1, "max": 4}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'shop', 100);

-- 'west' has no row and is still returned
SELECT region, dx.count(*) AS n, dx.sum(amount) AS total FROM shop GROUP BY region ORDER BY region;
SELECT least_region AS region, count(*) AS n, sum(least_amount) AS total
FROM (SELECT CASE WHEN region = 'mars' THEN 'north' ELSE region END AS least_region, least(amount, 100) AS least_amount FROM shop) s
GROUP BY least_region ORDER BY least_region;
-- two group columns: 4 x 3 groups, tier 3 only holds the clamped row
SELECT region, tier, dx.count(*) FROM shop GROUP BY region, tier ORDER BY region, tier;
-- WHERE applies to rows, not to the list of groups
SELECT tier, dx.count(*) FROM shop WHERE amount > 40 GROUP BY tier ORDER BY tier;
-- avg, linear, FILTER, HAVING, ORDER BY and LIMIT over the noisy output
SELECT region, dx.avg(amount) AS avg_amount, dx.linear(amount * qty) AS revenue,
	dx.count(*) FILTER (WHERE qty = 4) AS bulk
FROM shop GROUP BY region HAVING dx.count(*) > 0 ORDER BY revenue DESC LIMIT 2;
SELECT region, sum(amount * qty) AS revenue FROM shop WHERE region <> 'mars' GROUP BY region ORDER BY revenue DESC LIMIT 2;
-- the groups WHERE excludes at every declared point are dropped, and the avg of an empty group
-- (an exact count of 0, whose interval reaches 0) is NULL (dxpriv.postprocess, 40_postprocess)
SELECT region, dx.avg(amount) FROM shop WHERE region = 'west' GROUP BY region ORDER BY region;
-- group keys can be post-processed too
SELECT upper(region) AS r, dx.count(*) * 2 AS doubled FROM shop GROUP BY region ORDER BY 1;
-- cost: one ledger row for the query, epsilon = sum of the aggregates' epsilons
SELECT region, dx.count(1, 0.2), dx.sum(amount, 0.3) FROM shop GROUP BY region ORDER BY region;
SELECT epsilon, array_length(scales, 1) AS cells, mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1;

-- an expression as GROUP BY key (17_group_expressions has more)
SELECT amount % 2, dx.count(*) FROM shop GROUP BY amount % 2;
SELECT region, dx.count(*) FROM shop GROUP BY ROLLUP (region);
CREATE TABLE wide_groups (a int, b int);
SELECT dx.protect_table('wide_groups');
SELECT dx.set_column('wide_groups', 'a', '{"min": 0, "max": 999}', '{"type": "discrete"}');
SELECT dx.set_column('wide_groups', 'b', '{"min": 0, "max": 999}', '{"type": "discrete"}');
SELECT a, b, dx.count(*) FROM wide_groups GROUP BY a, b;
-- an aggregate repeated in HAVING or in BETWEEN is one release: one draw, one charge
SELECT dx.count(*) BETWEEN 0 AND 1000 AS in_range FROM shop HAVING dx.count(*) >= 0;
SELECT epsilon, array_length(scales, 1) AS cells FROM dx.ledger ORDER BY id DESC LIMIT 1;
