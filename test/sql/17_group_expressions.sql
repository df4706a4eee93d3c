-- GROUP BY expressions over declared columns (time buckets, derived keys): the groups are the image
-- of the declared domain under the keys, computed at analysis; every group comes back, empty ones
-- included; a row's group and the key values come from the analysis' tables. Noiseless (presence
-- 'Infinity', metric none), so the answers are exact and compared with native references.
CREATE TABLE tvisits (day date, age int, channel text);
INSERT INTO tvisits SELECT date '2024-01-01' + (i * 7) % 120, 18 + (i * 13) % 60,
                          CASE WHEN i % 3 = 0 THEN 'web' ELSE 'app' END
FROM generate_series(1, 400) AS i;
INSERT INTO tvisits VALUES ('2030-01-01', 200, 'fax'), (NULL, NULL, NULL);
SELECT dx.protect_table('tvisits', 'Infinity');
SELECT dx.set_column('tvisits', 'day', '{"min": "2024-01-01", "max": "2024-06-30"}', '{"type": "none"}');
SELECT dx.set_column('tvisits', 'age', '{"min": 0, "max": 99}', '{"type": "none"}');
SELECT dx.set_column('tvisits', 'channel', '{"values": ["app", "web", "mail"]}', '{"type": "none"}');
SELECT dx.grant_budget(current_user::regrole, 'tvisits', 1000);
-- the clamping rule as SQL, for the native references
CREATE VIEW tv_clamped AS
SELECT least(greatest(coalesce(day, '2024-01-01'), '2024-01-01'), '2024-06-30') AS day,
       least(greatest(coalesce(age, 0), 0), 99) AS age,
       CASE WHEN channel IN ('app', 'web', 'mail') THEN channel ELSE 'app' END AS channel
FROM tvisits;

-- a monthly time series: six months, March to June empty in part, June without any row
SELECT date_trunc('month', day)::date AS month, dx.count(*) AS tvisits
FROM tvisits GROUP BY 1 ORDER BY 1;
SELECT date_trunc('month', day)::date AS month, count(*) AS tvisits
FROM tv_clamped GROUP BY 1 ORDER BY 1;
-- extract, date_bin, width_bucket, arithmetic and CASE buckets, with a WHERE on another column
SELECT extract(month FROM day) AS m, dx.sum(age) FROM tvisits WHERE channel = 'web' GROUP BY 1 ORDER BY 1;
SELECT extract(month FROM day) AS m, sum(age) FROM tv_clamped WHERE channel = 'web' GROUP BY 1 ORDER BY 1;
SELECT (age / 10) * 10 AS decade, dx.count(*) FROM tvisits GROUP BY (age / 10) * 10 ORDER BY 1;
SELECT (age / 10) * 10 AS decade, count(*) FROM tv_clamped GROUP BY 1 ORDER BY 1;
SELECT width_bucket(age, 0, 100, 4) AS quartile, dx.avg(age) FROM tvisits GROUP BY 1 ORDER BY 1;
SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'old' END AS band,
       channel, dx.count(*)
FROM tvisits GROUP BY 1, channel ORDER BY 2, 1;
SELECT CASE WHEN age < 30 THEN 'young' WHEN age < 60 THEN 'middle' ELSE 'old' END AS band,
       channel, count(*)
FROM tv_clamped GROUP BY 1, channel ORDER BY 2, 1;
-- (groups that WHERE excludes at every declared day are dropped: dxpriv.postprocess, 40_postprocess)
SELECT date_bin('14 days', day::timestamp, '2024-01-01') AS fortnight, dx.count(*)
FROM tvisits WHERE day < '2024-02-15' GROUP BY 1 ORDER BY 1;
-- HAVING and ORDER BY on the key and on the noisy answers are post-processing
SELECT date_trunc('month', day)::date AS month, dx.count(*) AS n
FROM tvisits GROUP BY 1 HAVING date_trunc('month', day)::date >= '2024-03-01' ORDER BY n DESC, 1;
-- a key that is NULL for some points is a group of its own
SELECT nullif(channel, 'mail') AS ch, dx.count(*) FROM tvisits GROUP BY 1 ORDER BY 1 NULLS FIRST;
-- dx.explain reports the groups by their key values
SELECT cell, group_key FROM dx.explain('SELECT extract(quarter FROM day) AS q, dx.count(*) FROM tvisits GROUP BY 1') ORDER BY cell;
-- not supported: the exponential mechanism grouped by an expression; a key of a type without order
SELECT date_trunc('month', day), dx.median(age) FROM tvisits GROUP BY 1;
SELECT point(age, age), dx.count(*) FROM tvisits GROUP BY 1;
-- now() and current_date are fixed once, at analysis ("the last 30 days" of a dashboard); the
-- declared days are all in the past, so the answer is exact and data-independent
SELECT dx.count(*) FROM tvisits WHERE day > current_date - 30;
SELECT dx.count(*) AS since_march FROM tvisits WHERE day::timestamptz >= date_trunc('month', '2024-03-15'::timestamptz);
SELECT count(*) AS since_march FROM tv_clamped WHERE day >= '2024-03-01';
-- volatile functions stay refused
SELECT dx.count(*) FROM tvisits WHERE day::timestamptz > clock_timestamp() - interval '1 year';
-- too many groups: the limit and the hint
SELECT age * 1000 + extract(doy FROM day) AS k, dx.count(*) FROM tvisits GROUP BY 1;
-- GROUPING SETS, ROLLUP and CUBE: one grouped query per grouping set under a UNION ALL (keys
-- outside a set are NULL, GROUPING() is its constant), every group of each set's keys that WHERE
-- does not exclude at every declared point returned;
-- the sets' cells are allocated together (21_grouping_sets has the allocation)
SELECT channel, extract(month FROM day) AS m, dx.count(*), GROUPING(channel, extract(month FROM day)) AS g
FROM tvisits WHERE day < '2024-03-01' GROUP BY ROLLUP (channel, extract(month FROM day)) ORDER BY 4, 1, 2;
SELECT channel, extract(month FROM day) AS m, count(*), GROUPING(channel, extract(month FROM day)) AS g
FROM tv_clamped WHERE day < '2024-03-01' GROUP BY ROLLUP (channel, extract(month FROM day)) ORDER BY 4, 1, 2;
SELECT channel, width_bucket(age, 0, 100, 2) AS half, dx.sum(age) FROM tvisits GROUP BY CUBE (1, 2) ORDER BY 1, 2 LIMIT 5;
SELECT channel, dx.count(*) FROM tvisits GROUP BY GROUPING SETS ((channel), ()) ORDER BY 1 NULLS FIRST;
-- the statement is charged once, for its epsilon: its two sets share it
SELECT epsilon FROM dx.ledger ORDER BY id DESC LIMIT 1;
SELECT channel, dx.count(*) FROM tvisits GROUP BY ROLLUP (channel) ORDER BY dx.count(*);
-- dx.explain reports the statement's epsilon
SELECT DISTINCT query_epsilon FROM dx.explain($$SELECT channel, dx.count(*) FROM tvisits GROUP BY ROLLUP (channel)$$);
