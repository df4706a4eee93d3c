-- Exponential mechanism: dx.mode, dx.quantile and dx.median (src/pg/planner/em_rewrite.h). Like dx.count,
-- the aggregates an analyst writes are markers: the analyzer validates the query, computes the
-- exact d_X utility sensitivity and replaces each marker by
--   dx._em_point(dx._em_select(<candidate index>, <group>, <params>), NULL::<type>, <domain>).
-- A marker that reaches the executor (query not validated) raises an error.

CREATE FUNCTION dx._marker_transfn(internal, "any", float8, float8) RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_em_finalfn(internal, anyelement) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';
CREATE FUNCTION dx._marker_em_finalfn(internal, anyelement, float8) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';
CREATE FUNCTION dx._marker_em_finalfn(internal, anyelement, float8, float8) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';
COMMENT ON FUNCTION dx._marker_transfn(internal, "any", float8, float8) IS 'marker: raises an error (query not validated)';
COMMENT ON FUNCTION dx._marker_em_finalfn(internal, anyelement) IS 'marker: raises an error (query not validated)';
COMMENT ON FUNCTION dx._marker_em_finalfn(internal, anyelement, float8) IS 'marker: raises an error (query not validated)';
COMMENT ON FUNCTION dx._marker_em_finalfn(internal, anyelement, float8, float8) IS 'marker: raises an error (query not validated)';

CREATE AGGREGATE dx.mode(anyelement) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_em_finalfn, FINALFUNC_EXTRA, PARALLEL = SAFE);
CREATE AGGREGATE dx.mode(anyelement, float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_em_finalfn, FINALFUNC_EXTRA, PARALLEL = SAFE);
CREATE AGGREGATE dx.quantile(anyelement, float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_em_finalfn, FINALFUNC_EXTRA, PARALLEL = SAFE);
CREATE AGGREGATE dx.quantile(anyelement, float8, float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_em_finalfn, FINALFUNC_EXTRA, PARALLEL = SAFE);
CREATE AGGREGATE dx.median(anyelement) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_em_finalfn, FINALFUNC_EXTRA, PARALLEL = SAFE);
CREATE AGGREGATE dx.median(anyelement, float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_em_finalfn, FINALFUNC_EXTRA, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.mode(anyelement) IS 'd_X-private most frequent declared value of a column (exponential mechanism) at the session epsilon';
COMMENT ON AGGREGATE dx.mode(anyelement, float8) IS 'd_X-private most frequent declared value of a column at the given epsilon';
COMMENT ON AGGREGATE dx.quantile(anyelement, float8) IS 'd_X-private p-quantile (p in [0, 1]) of a column with a range or date domain, at the session epsilon';
COMMENT ON AGGREGATE dx.quantile(anyelement, float8, float8) IS 'd_X-private p-quantile of a column with a range or date domain, at the given epsilon';
COMMENT ON AGGREGATE dx.median(anyelement) IS 'd_X-private median of a column with a range or date domain, at the session epsilon';
COMMENT ON AGGREGATE dx.median(anyelement, float8) IS 'd_X-private median of a column with a range or date domain, at the given epsilon';

-- Internal exponential-mechanism aggregate: exact per-candidate row counts of one output group,
-- the candidate drawn in the final function (exact sampler). Arguments: the row's candidate index
-- (NULL: counts nothing), its output group and the constant parameters (NoiseParams layout, see
-- src/pg/contract/em_params.h), which travel in the state.
CREATE FUNCTION dx._em_transfn(internal, int4, int4, float8[]) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_transfn';
CREATE FUNCTION dx._em_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_combinefn';
CREATE FUNCTION dx._em_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_serialize';
CREATE FUNCTION dx._em_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_deserialize';
CREATE FUNCTION dx._em_finalfn(internal) RETURNS int4
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_finalfn';
COMMENT ON FUNCTION dx._em_transfn(internal, int4, int4, float8[]) IS 'counts one row for its candidate';
COMMENT ON FUNCTION dx._em_combinefn(internal, internal) IS 'adds two exact partial states';
COMMENT ON FUNCTION dx._em_serialize(internal) IS 'self-describing serialisation of a partial state';
COMMENT ON FUNCTION dx._em_deserialize(bytea, internal) IS 'inverse of dx._em_serialize';
COMMENT ON FUNCTION dx._em_finalfn(internal) IS 'index of the candidate drawn by the exponential mechanism';

CREATE AGGREGATE dx._em_select(int4, int4, float8[]) (
	SFUNC = dx._em_transfn, STYPE = internal,
	FINALFUNC = dx._em_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._em_combinefn, SERIALFUNC = dx._em_serialize,
	DESERIALFUNC = dx._em_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._em_select(int4, int4, float8[]) IS 'internal: placed by the dxpriv analyzer only';

-- The declared value of a candidate index (same Datums as the clamp functions produce).
CREATE FUNCTION dx._em_point(int4, anyelement, float8, float8, float8) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_point_range';
CREATE FUNCTION dx._em_point(int4, anyelement, text[]) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_em_point_enum';
COMMENT ON FUNCTION dx._em_point(int4, anyelement, float8, float8, float8) IS 'point of a range domain with the given index (second argument: NULL of the column type)';
COMMENT ON FUNCTION dx._em_point(int4, anyelement, text[]) IS 'point of an enumerated domain with the given index (second argument: NULL of the column type)';

-- dx.count_distinct(col): the number of declared values of a column that have a counted row,
-- with discrete Laplace noise of scale S/epsilon, S the d_X sensitivity of dx.mode over the same
-- column, WHERE, FILTER and GROUP BY (src/core/exponential_mechanism.h, count_distinct). Analysts'
-- COUNT(DISTINCT col) of a declared column is spelled this way. Markers like dx.count.
CREATE AGGREGATE dx.count_distinct("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count_distinct("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.count_distinct("any") IS 'd_X-private number of distinct declared values of a column present in the rows, at the session epsilon';
COMMENT ON AGGREGATE dx.count_distinct("any", float8) IS 'd_X-private number of distinct declared values of a column present in the rows, at the given epsilon';
