-- Aggregates. The dx.count/dx.sum aggregates an analyst writes are markers: the query analyzer
-- validates the query, computes the sensitivity and replaces them by the internal noisy
-- aggregates below. A marker that reaches the executor (query not validated) raises an error.

CREATE FUNCTION dx._marker_transfn(internal, "any") RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_transfn(internal, "any", float8) RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_star_transfn(internal) RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_count_finalfn(internal) RETURNS bigint
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';
CREATE FUNCTION dx._marker_sum_finalfn(internal) RETURNS float8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';

CREATE AGGREGATE dx.count(*) (SFUNC = dx._marker_star_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.sum("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.sum("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
CREATE FUNCTION dx._marker_avg_finalfn(internal) RETURNS float8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';
CREATE AGGREGATE dx.avg("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_avg_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.avg("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_avg_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.linear("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.linear("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.avg("any") IS 'd_X-private average (noisy sum / noisy count) at the session epsilon';
COMMENT ON AGGREGATE dx.avg("any", float8) IS 'd_X-private average at the given epsilon';
COMMENT ON AGGREGATE dx.linear("any") IS 'd_X-private weighted count: sum of a per-row weight expression';
COMMENT ON AGGREGATE dx.linear("any", float8) IS 'd_X-private weighted count at the given epsilon';
COMMENT ON AGGREGATE dx.count(*) IS 'd_X-private row count at the session epsilon (dxpriv.epsilon)';
COMMENT ON AGGREGATE dx.count("any") IS 'd_X-private count of non-null values at the session epsilon';
COMMENT ON AGGREGATE dx.count("any", float8) IS 'd_X-private count of non-null values at the given epsilon';
COMMENT ON AGGREGATE dx.sum("any") IS 'd_X-private sum at the session epsilon';
COMMENT ON AGGREGATE dx.sum("any", float8) IS 'd_X-private sum at the given epsilon';

-- Internal noisy linear aggregates: exact grid-unit partial sums, noise in the final function.
-- Arguments: the row's weight, the row's output group (0 without GROUP BY) and a constant
-- parameter array placed by the analyzer (layout in src/pg/contract/noise_params.h). The parameters
-- travel in the state, so parallel workers and Citus nodes never need the query tree.
CREATE FUNCTION dx._linear_transfn(internal, float8, int4, float8[]) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_transfn';
-- The same with a fourth argument, the row's count weight (dx.avg in a join: the number of public
-- rows the row joins, so the average is over the joined pairs).
CREATE FUNCTION dx._linear_transfn(internal, float8, int4, float8[], float8) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_transfn';
CREATE FUNCTION dx._linear_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_combinefn';
CREATE FUNCTION dx._linear_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_serialize';
CREATE FUNCTION dx._linear_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_deserialize';
CREATE FUNCTION dx._linear_count_finalfn(internal) RETURNS bigint
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_count_finalfn';
CREATE FUNCTION dx._linear_sum_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_sum_finalfn';
CREATE FUNCTION dx._linear_avg_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_avg_finalfn';
COMMENT ON FUNCTION dx._linear_transfn(internal, float8, int4, float8[]) IS 'adds one row''s weight in grid units';
COMMENT ON FUNCTION dx._linear_transfn(internal, float8, int4, float8[], float8) IS 'adds one row''s weight and count weight in grid units';
COMMENT ON FUNCTION dx._linear_combinefn(internal, internal) IS 'adds two exact partial states';
COMMENT ON FUNCTION dx._linear_serialize(internal) IS 'self-describing serialisation of a partial state';
COMMENT ON FUNCTION dx._linear_deserialize(bytea, internal) IS 'inverse of dx._linear_serialize';
COMMENT ON FUNCTION dx._linear_count_finalfn(internal) IS 'noisy count, rounded to an integer';
COMMENT ON FUNCTION dx._linear_sum_finalfn(internal) IS 'noisy sum';
COMMENT ON FUNCTION dx._linear_avg_finalfn(internal) IS 'noisy sum over noisy count, clamped to the value range';

CREATE AGGREGATE dx._noisy_count(float8, int4, float8[]) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_count_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._noisy_sum(float8, int4, float8[]) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_sum_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._noisy_avg(float8, int4, float8[]) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_avg_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._noisy_avg(float8, int4, float8[], float8) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_avg_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._noisy_avg(float8, int4, float8[], float8) IS 'internal: placed by the dxpriv analyzer only (dx.avg over the pairs of a join)';
COMMENT ON AGGREGATE dx._noisy_count(float8, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only';
COMMENT ON AGGREGATE dx._noisy_sum(float8, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only';
COMMENT ON AGGREGATE dx._noisy_avg(float8, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only';

-- Analysts' stddev, variance, covar, corr and regr_* (src/pg/analyst/dispersion_spelling.h): each is
-- computed from linear parts (count and centred sums of x, y, x², y², xy), released with the
-- statement's other linear aggregates. dx._noisy_part releases one part as {answer, noise
-- variance, charge id (two 32-bit halves), group, weight lo, weight hi, noise kurtosis};
-- dx._dispersion computes
-- the statistic from its parts with a delta-method error bar (dx.last_release).
CREATE FUNCTION dx._linear_part_finalfn(internal) RETURNS float8[]
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_part_finalfn';
COMMENT ON FUNCTION dx._linear_part_finalfn(internal) IS 'noisy sum with its noise variance and identity, for dx._dispersion';
CREATE AGGREGATE dx._noisy_part(float8, int4, float8[]) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_part_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._noisy_part(float8, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only (a part of stddev, variance, covar, corr, regr_*)';
CREATE FUNCTION dx._dispersion(kind int4, label text, cx float8, cy float8, n float8[], sx float8[], sy float8[],
                               sxx float8[], syy float8[], sxy float8[]) RETURNS float8
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_dispersion';
COMMENT ON FUNCTION dx._dispersion(int4, text, float8, float8, float8[], float8[], float8[], float8[], float8[], float8[]) IS 'internal: placed by the dxpriv analyzer only (stddev, variance, covar, corr, regr_* from released parts)';
-- One pass over the rows (src/pg/executor/one_pass.cpp, planner/one_pass.h): the linear aggregates
-- of a statement share one transition, which maps the row to its point once (the layout's columns
-- and domain constants, as dx._weigh) and counts it in a histogram of its output group; each
-- aggregate's final function weighs the histogram with its own per-point table. Arguments:
-- the layout '<flags>|<columns>' (flags: 'd' dense histogram, 'g' the output group and 'p' the
-- "row is real" flag follow as arguments, else constant), then the columns' values and domain
-- constants (equal for every aggregate of the statement); the analyzer adds each aggregate's
-- parameters, table and shape as direct arguments (they reach the final function). SSPACE: a state's
-- size as the hash aggregate plans it (a partition of an open key holds a small histogram; without
-- SSPACE PostgreSQL assumes 8 kB per internal state and spills after a few hundred partitions).
CREATE FUNCTION dx._onepass_transfn(internal, text, VARIADIC "any") RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_transfn';
CREATE FUNCTION dx._onepass_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_combinefn';
CREATE FUNCTION dx._onepass_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_serialize';
CREATE FUNCTION dx._onepass_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_deserialize';
CREATE FUNCTION dx._onepass_count_finalfn(internal) RETURNS bigint
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_count_finalfn';
CREATE FUNCTION dx._onepass_sum_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_sum_finalfn';
CREATE FUNCTION dx._onepass_avg_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_onepass_avg_finalfn';
COMMENT ON FUNCTION dx._onepass_transfn(internal, text, "any") IS 'counts one row at its point in its group''s histogram';
COMMENT ON FUNCTION dx._onepass_combinefn(internal, internal) IS 'adds two histograms of one group';
COMMENT ON FUNCTION dx._onepass_serialize(internal) IS 'self-describing serialisation of a histogram';
COMMENT ON FUNCTION dx._onepass_deserialize(bytea, internal) IS 'inverse of dx._onepass_serialize';
COMMENT ON FUNCTION dx._onepass_count_finalfn(internal) IS 'noisy count weighed from the histogram, rounded to an integer';
COMMENT ON FUNCTION dx._onepass_sum_finalfn(internal) IS 'noisy sum weighed from the histogram';
COMMENT ON FUNCTION dx._onepass_avg_finalfn(internal) IS 'noisy sum over noisy count weighed from the histogram, clamped';
CREATE AGGREGATE dx._onepass_count(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_count_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._onepass_sum(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_sum_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._onepass_avg(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_avg_finalfn, FINALFUNC_MODIFY = SHAREABLE,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._onepass_count(text, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
COMMENT ON AGGREGATE dx._onepass_sum(text, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';
COMMENT ON AGGREGATE dx._onepass_avg(text, "any") IS 'internal: placed by the dxpriv analyzer only (one pass over the rows)';

-- GROUP BY folded into one pass (planner/group_fold.h, executor/group_fold.cpp): a grouped
-- statement whose keys are declared columns counts every row once in ONE histogram over the
-- sub-universe with the key columns (dx._fold_state, ungrouped: no hash lookup per row), then
-- dx._fold_slices cuts it into one state per declared group (empty ones included), and each
-- aggregate releases its group's answer from that state through the one-pass final functions.
CREATE AGGREGATE dx._fold_state(text, VARIADIC "any") (
	SFUNC = dx._onepass_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_serialize,
	COMBINEFUNC = dx._onepass_combinefn, SERIALFUNC = dx._onepass_serialize,
	DESERIALFUNC = dx._onepass_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._fold_state(text, "any") IS 'internal: placed by the dxpriv analyzer only (a grouped statement''s histogram over the sub-universe with its key columns)';
CREATE FUNCTION dx._fold_slices(bytea, int8[]) RETURNS SETOF bytea
LANGUAGE c IMMUTABLE PARALLEL SAFE ROWS 10 AS 'MODULE_PATHNAME', 'dx_fold_slices';
COMMENT ON FUNCTION dx._fold_slices(bytea, int8[]) IS 'internal: placed by the dxpriv analyzer only (one one-pass state per declared group, in group order, cut from dx._fold_state)';
CREATE FUNCTION dx._fold_transfn(internal, bytea) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_fold_transfn';
COMMENT ON FUNCTION dx._fold_transfn(internal, bytea) IS 'the one-pass state of a group from its slice (one slice per group)';
CREATE AGGREGATE dx._fold_count(bytea) (
	SFUNC = dx._fold_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_count_finalfn, FINALFUNC_MODIFY = SHAREABLE, PARALLEL = SAFE);
CREATE AGGREGATE dx._fold_sum(bytea) (
	SFUNC = dx._fold_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_sum_finalfn, FINALFUNC_MODIFY = SHAREABLE, PARALLEL = SAFE);
CREATE AGGREGATE dx._fold_avg(bytea) (
	SFUNC = dx._fold_transfn, STYPE = internal, SSPACE = 384,
	FINALFUNC = dx._onepass_avg_finalfn, FINALFUNC_MODIFY = SHAREABLE, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._fold_count(bytea) IS 'internal: placed by the dxpriv analyzer only (a folded GROUP BY; its parameters, table and shape are direct arguments)';
COMMENT ON AGGREGATE dx._fold_sum(bytea) IS 'internal: placed by the dxpriv analyzer only (a folded GROUP BY; its parameters, table and shape are direct arguments)';
COMMENT ON AGGREGATE dx._fold_avg(bytea) IS 'internal: placed by the dxpriv analyzer only (a folded GROUP BY; its parameters, table and shape are direct arguments)';

-- 1 for a non-null value, 0 for null: the per-row weight of count(expr), evaluated at analysis on
-- the declared points (rows are mapped to points by dx._weigh below).
CREATE FUNCTION dx._indicator("any") RETURNS float8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_indicator';
COMMENT ON FUNCTION dx._indicator("any") IS '1 when the argument is not null, else 0';

-- What a query would cost and how noisy each output cell would be; spends nothing.
CREATE FUNCTION dx.explain(query text)
RETURNS TABLE (cell int, aggregate int, kind text, group_key text, component text, epsilon float8,
               noise_scale float8, ci95_half_width float8, plain_dp_scale float8,
               improvement_factor float8, query_epsilon float8, remaining_budget float8, allocation text,
               noise text, noise_bound float8, query_delta float8, unit_bound text, unit_noise_factor float8)
LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_explain';
COMMENT ON FUNCTION dx.explain(text) IS 'epsilon and delta, per-cell noise family, scale (Gaussian: standard deviation), 95% half-width, truncation bound, improvement over plain DP (Laplace) and remaining budget of a query, without running it';

-- The error bars of what the session just received: one row per answer released by its last
-- statement with dx aggregates (backend-local; charges nothing; only the session's own releases).
CREATE FUNCTION dx.last_release()
RETURNS TABLE (cell int, aggregate int, kind text, expression text, group_key text, component text,
               answer float8, noise text, noise_scale float8, ci95_half_width float8, ci95_low float8,
               ci95_high float8, interval_method text, epsilon float8, delta float8, reused boolean,
               release_epsilon float8, postprocessing text)
LANGUAGE c STRICT VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_last_release';
COMMENT ON FUNCTION dx.last_release() IS 'answers released by the session''s last statement with dx aggregates, with noise family, scale and 95% interval (exact law of each cell; delta method for an average; projected for consistent totals) and the free post-processing applied; free';

-- Execution by lookup (src/pg/executor/lookup.cpp, src/pg/planner/point_lookup.h): a stored row
-- is mapped to its point of the query's sub-universe by dxpriv's domain indexers and weighed from
-- the per-point table the analysis built; no expression of the query runs on it. Arguments: the
-- table, a layout ('e' enumerated: value, labels; 'r' range or date: value, lo, hi, step; 'p'
-- column group: coordinates, dims, member values), then the row's columns with their domains.
CREATE FUNCTION dx._weigh(bytea, text, VARIADIC "any") RETURNS float8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh';
COMMENT ON FUNCTION dx._weigh(bytea, text, "any") IS 'weight of a row at its sub-universe point, from the analysis'' per-point table (NULL: contributes nothing)';
CREATE FUNCTION dx._weigh_int(bytea, text, VARIADIC "any") RETURNS int4
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_weigh_int';
COMMENT ON FUNCTION dx._weigh_int(bytea, text, "any") IS 'candidate index of a row at its sub-universe point, from the analysis'' per-point table (NULL: not counted)';
-- The output value of a GROUP BY key for a row's group (the values per group computed at analysis).
CREATE FUNCTION dx._group_key(int4, anyarray) RETURNS anyelement
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_group_key';
COMMENT ON FUNCTION dx._group_key(int4, anyarray) IS 'output value of a GROUP BY key for a group, from the analysis'' values per group';
-- dx._group_key(dx._weigh_int(table, layout, <columns>), values) in one call (the GROUP BY keys
-- computed in the row source, planner/group_key_source.h): the key's value for the row's group.
CREATE FUNCTION dx._group_key_int(bytea, text, anyarray, VARIADIC "any") RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_group_key_int';
COMMENT ON FUNCTION dx._group_key_int(bytea, text, anyarray, "any") IS 'output value of a GROUP BY key for a row''s group: dx._group_key(dx._weigh_int(table, layout, columns), values) in one call';
